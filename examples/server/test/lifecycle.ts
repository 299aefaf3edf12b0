/**
 * Built server processes started one at a time on one data directory (and, for PostgreSQL, one
 * fresh database) for a describe block: start, stop, and start again to test restarts.
 */
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { Effect, ExecutionStrategy, Exit, Scope } from "effect"
import { afterAll, beforeAll, inject } from "vitest"
import { assertBuilt, type ServerProcess, spawnServer, tempDataDir } from "./process.js"

/** One data directory (and database) for the describe block; server processes started on it one at a time. */
export const lifecycle = (kind: "sqlite" | "postgres", baseEnv: Readonly<Record<string, string>> = {}) => {
  const scope = Effect.runSync(Scope.make())
  const state = { dataDir: "", env: { ...baseEnv } as Record<string, string> }
  let instance: { readonly server: ServerProcess; readonly scope: Scope.CloseableScope } | undefined

  beforeAll(async () => {
    assertBuilt(inject("serverBuild"))
    await Effect.runPromise(
      Effect.gen(function*() {
        state.dataDir = yield* tempDataDir
        if (kind === "postgres") state.env = { ...state.env, AGENT_RUNS_DATABASE_URL: (yield* freshDatabase).url }
      }).pipe(Scope.extend(scope))
    )
  }, 120_000)
  // The child scope closes before the database is dropped and the directory removed.
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

  return {
    get dataDir() {
      return state.dataDir
    },
    /** The environment every start gets (on PostgreSQL, the database's URL). */
    get env(): Readonly<Record<string, string>> {
      return state.env
    },
    /**
     * Starts a server on the data directory (and database) and waits until it is ready; one a
     * failed test left running is stopped first, so it cannot take the next test's runs.
     */
    start: async (env: Record<string, string> = {}): Promise<ServerProcess> => {
      if (instance !== undefined) {
        const left = instance
        instance = undefined
        await Effect.runPromise(Scope.close(left.scope, Exit.void))
      }
      const child = await Effect.runPromise(Scope.fork(scope, ExecutionStrategy.sequential))
      const server = await Effect.runPromise(
        spawnServer({ dataDir: state.dataDir, env: { ...state.env, ...env } }).pipe(Scope.extend(child))
      )
      instance = { server, scope: child }
      return server
    },
    /** Stops the running server; returns how it exited. */
    stop: async () => {
      const current = instance!
      instance = undefined
      const exited = await Effect.runPromise(current.server.stop)
      await Effect.runPromise(Scope.close(current.scope, Exit.void))
      return exited
    }
  }
}

/** The built server as one process for a describe block (or a file), on a data directory of its own, with `env`. */
export const suiteProcess = (env: Readonly<Record<string, string>>) => {
  const scope = Effect.runSync(Scope.make())
  let server: ServerProcess | undefined
  beforeAll(async () => {
    assertBuilt(inject("serverBuild"))
    server = await Effect.runPromise(
      Effect.flatMap(tempDataDir, (dataDir) => spawnServer({ dataDir, env })).pipe(Scope.extend(scope))
    )
  }, 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)
  return () => server!
}
