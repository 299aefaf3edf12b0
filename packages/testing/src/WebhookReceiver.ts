/**
 * A webhook receiver for the outbound webhook tests (the server's and the dashboard's): an HTTP server on loopback that checks every
 * request's Standard Webhooks signature with `node:crypto` (independently of the service's own
 * signing code), answers with what the test scripts (fail on purpose, or accept), and keeps what it
 * accepted. It can be killed (every connection dropped) and started again on the same port.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/** One accepted delivery. */
export interface Received {
  readonly id: string
  readonly timestamp: number
  // The body as the test reads it.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly body: any
  readonly signatures: ReadonlyArray<string>
}

/** Whether `signature` (`v1,<base64>`) signs `id.timestamp.body` under the secret (`whsec_<base64 key>`). */
export const signs = (secret: string, id: string, timestamp: string, body: string, signature: string): boolean => {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64")
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest()
  const [version, value] = signature.split(",", 2)
  const given = Buffer.from(value ?? "", "base64")
  return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected)
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

export class Receiver {
  readonly accepted: Array<Received> = []
  /** Requests refused for a bad or missing signature. */
  badSignatures = 0
  /** Every request that arrived, whatever the answer. */
  requests = 0
  /** The secrets a signature may be made with (any one valid signature passes). */
  secrets: Array<string> = []
  /** Answers the next requests with 500, on purpose, this many times. */
  failNext = 0
  /** Answers every request with 500 while set. */
  failAll = false
  /** What an accepted request is answered with (200 and this body; 204 and none when empty). */
  answer = ""
  private server: Server | undefined
  port = 0

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res))
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve))
    this.port = (server.address() as AddressInfo).port
    this.server = server
  }

  /** Drops every connection and stops listening: requests meanwhile find nobody. */
  async kill(): Promise<void> {
    const server = this.server
    this.server = undefined
    if (server === undefined) return
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.requests += 1
    const body = await readBody(req)
    const id = String(req.headers["webhook-id"] ?? "")
    const timestamp = String(req.headers["webhook-timestamp"] ?? "")
    const signatures = String(req.headers["webhook-signature"] ?? "").split(" ").filter((s) => s !== "")
    const valid = signatures.some((sig) => this.secrets.some((secret) => signs(secret, id, timestamp, body, sig)))
    if (!valid || req.headers["content-type"] !== "application/json") {
      this.badSignatures += 1
      res.writeHead(401).end("bad signature")
      return
    }
    if (this.failAll || this.failNext > 0) {
      this.failNext = Math.max(0, this.failNext - 1)
      res.writeHead(500).end("failing on purpose")
      return
    }
    this.accepted.push({ id, timestamp: Number(timestamp), body: JSON.parse(body), signatures })
    if (this.answer === "") res.writeHead(204).end()
    else res.writeHead(200, { "content-type": "text/plain" }).end(this.answer)
  }

  /** The accepted deliveries, each id once (a delivery may arrive again: at least once). */
  distinct(): Array<Received> {
    const seen = new Set<string>()
    return this.accepted.filter((r) => !seen.has(r.id) && seen.add(r.id) !== undefined)
  }
}

/** Waits until `done` holds, polling; false when `timeoutMs` passed first. */
export const eventually = async (done: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await done()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return done()
}
