/**
 * The outbound webhook sender's guard, attacked: loopback, private, link-local, metadata and
 * reserved addresses are refused as IP literals (IPv4, IPv6, IPv4-mapped) and as host names that
 * resolve to them (checked at the send, after resolution), and nothing reaches the receiver; an
 * allowed range lets them through; a redirect is answered, not followed; a receiver that never
 * answers costs at most the timeout; a huge response is read only as far as the excerpt.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { MAX_EXCERPT_BYTES } from "@agent-runs/core/domain/OutboundWebhook"
import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { make, printable, REFUSED_RANGES } from "../src/OutboundHttpSender.js"
import { addressSet } from "../src/AddressSet.js"

let server: Server
let port = 0
const hits: Array<string> = []

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    hits.push(req.url ?? "")
    req.resume()
    if (req.url === "/redirect") {
      res.writeHead(302, { location: `http://127.0.0.1:${port}/followed` }).end()
    } else if (req.url === "/silent") {
      // Never answers.
    } else if (req.url === "/huge") {
      res.writeHead(200)
      const chunk = "x".repeat(64 * 1024)
      const more = () => {
        while (res.write(chunk)) { /* fill the socket */ }
        res.once("drain", more)
      }
      more()
    } else {
      res.writeHead(204).end()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as AddressInfo).port
})
afterAll(() => {
  server.closeAllConnections()
  server.close()
})

const guarded = make({ allowedRanges: [], timeoutMs: 2_000 })
const allowing = make({ allowedRanges: ["127.0.0.0/8"], timeoutMs: 1_000 })
const send = (sender: typeof guarded, url: string) =>
  Effect.runPromise(Effect.either(sender.send({ url, headers: { "content-type": "application/json" }, body: "{}" })))

describe("outbound sender", () => {
  it.each([
    "http://127.0.0.1:PORT/",
    "http://127.1:PORT/",
    "http://0.0.0.0:PORT/",
    "http://localhost:PORT/",
    "http://[::1]:PORT/",
    "http://[::ffff:127.0.0.1]:PORT/",
    "http://[::ffff:7f00:1]:PORT/",
    "http://10.1.2.3/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.100.100.200/latest/meta-data/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://[fe80::1]/",
    "http://[64:ff9b::7f00:1]/",
    "http://224.0.0.1/"
  ])("refuses %s and sends nothing", async (raw) => {
    const url = raw.replace("PORT", String(port))
    const before = hits.length
    const sent = await send(guarded, url)
    expect(Either.isLeft(sent) && sent.left.reason).toBe("refused")
    const checked = await Effect.runPromise(Effect.either(guarded.check(url)))
    expect(Either.isLeft(checked) && checked.left.reason).toBe("refused")
    expect(hits.length).toBe(before)
  })

  it("an allowed range is reached; a host that does not resolve is said so", async () => {
    const sent = await send(allowing, `http://localhost:${port}/ok`)
    expect(Either.getOrThrow(sent).status).toBe(204)
    expect(hits).toContain("/ok")
    const unknown = await Effect.runPromise(Effect.either(allowing.check("http://no-such-host.invalid/")))
    expect(Either.isLeft(unknown) && unknown.left.reason).toBe("unresolved")
  })

  it("a redirect is the answer, not followed; silence costs the timeout; a huge body is cut at the excerpt", async () => {
    const redirected = await send(allowing, `http://127.0.0.1:${port}/redirect`)
    expect(Either.getOrThrow(redirected).status).toBe(302)
    expect(hits).not.toContain("/followed")
    const started = Date.now()
    const silent = await send(allowing, `http://127.0.0.1:${port}/silent`)
    expect(Either.isLeft(silent) && silent.left.reason).toBe("timeout")
    expect(Date.now() - started).toBeLessThan(5_000)
    const huge = await send(allowing, `http://127.0.0.1:${port}/huge`)
    expect(Either.getOrThrow(huge).excerpt.length).toBeLessThanOrEqual(MAX_EXCERPT_BYTES)
  })

  it("a receiver's text is kept printable: no NUL or other control character", () => {
    expect(printable("ok\u0000\u0007\n\tdone")).toBe("ok\ufffd\ufffd\n\tdone")
  })

  it("the refused ranges leave public addresses alone", () => {
    const refused = addressSet(REFUSED_RANGES, "test")
    for (const address of ["8.8.8.8", "1.1.1.1", "140.82.112.3", "2606:4700:4700::1111", "2a00:1450:4001:82a::200e"]) {
      expect(refused.contains(address)).toBe(false)
    }
  })
})
