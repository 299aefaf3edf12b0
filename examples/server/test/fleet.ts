/**
 * A fleet for the tests: built server processes sharing one fresh PostgreSQL database, admin token
 * and secret key (API-only: concurrency 0). Registers its set-up and tear-down with vitest.
 */
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, inject } from "vitest"
import { assertBuilt, type ServerProcess, spawnServer, tempDataDir } from "./process.js"

export const postgresFleet = () => {
  const scope = Effect.runSync(Scope.make())
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  let env: Record<string, string> = {}

  beforeAll(async () => {
    assertBuilt(inject("serverBuild"))
    await Effect.runPromise(
      Effect.gen(function*() {
        const { url } = yield* freshDatabase
        env = {
          AGENT_RUNS_DATABASE_URL: url,
          AGENT_RUNS_ADMIN_TOKEN: adminToken,
          AGENT_RUNS_CONCURRENCY: "0",
          AGENT_RUNS_SECRET_KEY: randomBytes(32).toString("hex")
        }
      }).pipe(Scope.extend(scope))
    )
  }, 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

  /** Starts one more server process of the fleet (stopped with the fleet, or by its `stop`). */
  const spawn = (): Promise<ServerProcess> =>
    Effect.runPromise(Effect.gen(function*() {
      return yield* spawnServer({ dataDir: yield* tempDataDir, env })
    }).pipe(Scope.extend(scope)))

  return { adminToken, spawn }
}
