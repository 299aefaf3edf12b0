/**
 * Rotating the secret key (docs/operations.md#rotating-the-secret-key) through the bundled server,
 * on SQLite and PostgreSQL: a server sealed a webhook's token and a team secret under key A; it is
 * restarted with AGENT_RUNS_SECRET_KEY=B and AGENT_RUNS_OTHER_SECRET_KEYS=A (everything still
 * opens, and is sealed again under B in the background); then with B alone: everything opens.
 */
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { Effect, Exit, Option, Redacted, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, startServer, type TestServer } from "./harness.js"
import { postRaw } from "./support.js"

describe.each<DatabaseKind>(["sqlite", "postgres"])("secret key rotation (%s)", (kind) => {
  it("keeps every sealed value readable while the key changes, and retires the old key", async () => {
    const outer = Effect.runSync(Scope.make())
    const dataDir = mkdtempSync(join(tmpdir(), "agent-runs-rotation-"))
    try {
      const database: TestServer["config"]["database"] = kind === "sqlite"
        ? { _tag: "Sqlite", filename: join(dataDir, "agent-runs.db") }
        : { _tag: "Postgres", url: Redacted.make((await Effect.runPromise(Scope.extend(freshDatabase, outer))).url) }
      const [a, b] = [randomBytes(32).toString("base64"), randomBytes(32).toString("base64")]
      const adminToken = `ar_${randomBytes(32).toString("base64url")}`
      /** A server on the same storage with these keys, until `stop`. */
      const start = async (key: string, others: ReadonlyArray<string>) => {
        const scope = Effect.runSync(Scope.make())
        const server = await Effect.runPromise(Scope.extend(startServer(kind, {
          dataDir,
          database,
          blobDir: join(dataDir, "blobs"),
          adminToken: Option.some(Redacted.make(adminToken)),
          secretKey: Option.some(Redacted.make(key)),
          otherSecretKeys: others.map((k) => Redacted.make(k))
        }), scope))
        return { server, stop: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
      }

      const first = await start(a, [])
      const { tokens } = await makeTeam({ url: first.server.url, adminToken }, `rotation-${kind}`)
      const api = (server: TestServer, method: string, path: string, body?: unknown) =>
        call(server, method, `/api/v1${path}`, { token: tokens.admin, ...(body === undefined ? {} : { body }) })
      expect((await api(first.server, "PUT", "/agent/secrets/API_KEY", { value: "kept-through-rotation" })).status).toBe(200)
      const hook = (await api(first.server, "POST", "/agent/webhooks", { name: "rotated hook" })).body
      const deliver = (server: TestServer) => postRaw(server, `/webhooks/w/${hook.uid}`, "{}", { authorization: `Bearer ${hook.secret}` })
      expect((await deliver(first.server)).status).toBe(202)
      await first.stop()

      // B without A: the webhook's token does not open (the test can fail).
      const wrong = await start(b, [])
      expect((await deliver(wrong.server)).status).not.toBe(202)
      await wrong.stop()

      const rotating = await start(b, [a])
      expect((await deliver(rotating.server)).status).toBe(202)
      expect((await call(rotating.server, "GET", "/readyz", {})).status).toBe(200)
      await new Promise((r) => setTimeout(r, 1000))
      await rotating.stop()

      const retired = await start(b, [])
      expect((await deliver(retired.server)).status).toBe(202)
      expect((await api(retired.server, "GET", "/agent/secrets")).body.secrets.map((s: { name: string }) => s.name)).toContain("API_KEY")
      await retired.stop()
    } finally {
      await Effect.runPromise(Scope.close(outer, Exit.void))
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 90_000)
})
