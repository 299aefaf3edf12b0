/**
 * The bundled server (`serve`, run in this process) while it starts, on PostgreSQL and SQLite
 * (issue 33: the configured administrator token was told 401 between the port opening and
 * `/readyz` turning 200): `GET /api/v1/agent/runs` with that token, asked from the moment the port
 * accepts connections until `/readyz` answers 200, is answered 503 "the service is starting" with
 * `Retry-After`, or 200, never anything else. On PostgreSQL the window is held open: the schema
 * exists (as after an earlier start) and the test holds a lock on `teams` that lets reads through
 * but makes the start-up's bootstrap of the token wait, until the test has asked the API while the
 * bootstrap waits. On SQLite (one process, a synchronous driver) the window is as short as the
 * bootstrap's few statements.
 */
import { PgStorage } from "@agent-runs/storage-pg"
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Deferred, Duration, Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freeLoopbackPort, type Reply, send, STARTING, untilAnswered, untilReady } from "../../server/test/support/Polling.js"
import { serve } from "../src/serve/Startup.js"

/** A scoped data directory, searchable (as root, sandboxes run as users of their own below it). */
const dataDir = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "agent-runs-starting-"))
    chmodSync(dir, 0o755)
    return dir
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** The bundled server with these settings, started for the scope; its base URL and admin token. */
const startServer = (env: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    const port = yield* freeLoopbackPort
    const adminToken = `ar_${randomBytes(32).toString("base64url")}`
    const settings = {
      HOST: "127.0.0.1",
      PORT: String(port),
      AGENT_RUNS_DATA_DIR: yield* dataDir,
      AGENT_RUNS_ADMIN_TOKEN: adminToken,
      AGENT_RUNS_CONCURRENCY: "0",
      AGENT_RUNS_LOG_LEVEL: "error",
      ...env
    }
    yield* Effect.forkScoped(serve.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(settings))))))
    return { base: `http://127.0.0.1:${port}`, adminToken }
  })

/**
 * The database's schema made (as by an earlier start), then a lock on `teams` held in a
 * transaction: reads pass, the bootstrap's insert of the administrator's team waits until `release`.
 */
const holdBootstrap = (url: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(PgStorage.layer({ url: Redacted.make(url), secretKey: Redacted.make(new Uint8Array(randomBytes(32))) }))
    const sql = Context.get(context, SqlClient.SqlClient)
    const locked = yield* Deferred.make<void>()
    const released = yield* Deferred.make<void>()
    yield* Effect.forkScoped(
      sql.withTransaction(
        sql`LOCK TABLE teams IN EXCLUSIVE MODE`.pipe(Effect.zipRight(Deferred.succeed(locked, undefined)), Effect.zipRight(Deferred.await(released)))
      )
    )
    yield* Deferred.await(locked)
    return {
      /** Whether a session of the database waits for a lock (the bootstrap, for ours). */
      waiting: sql<{ readonly n: number }>`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
      `.pipe(Effect.map((rows) => (rows[0]?.n ?? 0) > 0), Effect.orDie),
      release: Deferred.succeed(released, undefined)
    }
  })

/** Every reply is 200 or says the service is starting; the last is 200. */
const expectStartingOrOk = (replies: ReadonlyArray<Reply>) => {
  for (const reply of replies) {
    if (reply.status !== 200) expect(reply).toMatchObject(STARTING)
  }
  expect(replies.at(-1)?.status).toBe(200)
}

describe("the bundled server while it starts", () => {
  it.scopedLive("on PostgreSQL, with the bootstrap of the token held: the API answers 503 until ready, never 401", () =>
    Effect.gen(function*() {
      const { url } = yield* freshDatabase
      const hold = yield* holdBootstrap(url)
      const { adminToken, base } = yield* startServer({ AGENT_RUNS_DATABASE_URL: url })
      const api = `${base}/api/v1/agent/runs`
      // From the port's first answer until the bootstrap is seen waiting, then once more: all inside the window.
      const held: Array<Reply> = [yield* untilAnswered(api, adminToken)]
      while (!(yield* hold.waiting)) {
        yield* Effect.sleep(Duration.millis(10))
        held.push(yield* send(api, adminToken))
      }
      held.push(yield* send(api, adminToken))
      for (const reply of held) expect(reply).toMatchObject(STARTING)
      expect((yield* send(`${base}/readyz`)).json).toMatchObject({ error: "the service is starting" })
      yield* hold.release
      expectStartingOrOk(yield* untilReady(base, adminToken))
    }), 60_000)

  it.scopedLive("on SQLite: from the port's first answer until ready, the API answers 503 or 200, never 401", () =>
    Effect.gen(function*() {
      const { adminToken, base } = yield* startServer({})
      const first = yield* untilAnswered(`${base}/api/v1/agent/runs`, adminToken)
      expectStartingOrOk([first, ...(yield* untilReady(base, adminToken))])
    }), 60_000)
})
