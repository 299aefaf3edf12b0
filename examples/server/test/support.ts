/**
 * Helpers shared by the server's tests, in-process and spawned: free loopback ports, temporary data
 * directories, and a JSON HTTP call.
 */
import { removeSandboxesUnder } from "@agent-runs/executor-docker/testing"
import { Effect } from "effect"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A loopback port that was free a moment ago (the public URL must name the port before listening). */
export const freePort = Effect.async<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/**
 * A temporary directory every user may read, for the scope: agent programs that sandboxes running
 * as users of their own must run (a checkout, or `tmpdir()`'s own directories, may be private).
 */
export const sharedDir = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "agent-runs-shared-"))
    chmodSync(dir, 0o755)
    return dir
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/**
 * A temporary data directory for the scope, removed when it closes (with the Docker sandboxes a
 * stopped server left in it: their work directories are mounts that `rm` cannot remove).
 */
export const tempDataDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "agent-runs-server-"))),
  (dir) =>
    Effect.sync(() => {
      removeSandboxesUnder(dir)
      rmSync(dir, { recursive: true, force: true })
    })
)

/** A JSON response. */
export interface Reply {
  readonly status: number
  readonly headers: Headers
  // Test code reads arbitrary JSON answers field by field.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly body: any
}

/** Sends a request to the server; a `body` object is sent as JSON. */
export const call = async (
  server: { readonly url: string },
  method: string,
  path: string,
  options: { readonly token?: string; readonly body?: unknown; readonly headers?: Record<string, string> } = {}
): Promise<Reply> => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`
  let body: string | undefined
  if (options.body !== undefined) {
    headers["content-type"] ??= "application/json"
    body = typeof options.body === "string" ? options.body : JSON.stringify(options.body)
  }
  const response = await fetch(`${server.url}${path}`, { method, headers, redirect: "manual", ...(body === undefined ? {} : { body }) })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = text === "" ? undefined : JSON.parse(text)
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed }
}

/** Posts raw bytes (a webhook delivery) to `path`; the answer, its body parsed when it is JSON. */
export const postRaw = async (
  server: { readonly url: string },
  path: string,
  body: string | Uint8Array,
  headers: Record<string, string> = {}
): Promise<Reply> => {
  const response = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body
  })
  const text = await response.text()
  let parsed: unknown = text === "" ? undefined : text
  try {
    parsed = text === "" ? undefined : JSON.parse(text)
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed }
}

/** Polls `done` every 100 ms until it holds; fails naming `what` after `timeoutMs`. */
export const until = async (what: string, done: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await done()) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}
