/**
 * Draining on deploy (docs/deployment.md#draining-on-deploy): a rolling restart of two replicas of
 * the built server on one PostgreSQL database, each stopped with SIGTERM while runs are in flight.
 * The stopping replica claims no more and answers `/readyz` 503 at once; the agents that finish
 * within its grace period (`AGENT_RUNS_DRAIN_SECONDS`) end there; the others are stopped and their
 * runs handed back to the queue at the same attempt, and the next replica runs them (the first
 * one's successor started after it stopped, the second's before). Every run
 * ends SUCCEEDED at attempt 1, no lease expires, and a handed-over run says so in its timeline.
 */
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { Effect, Exit, Fiber, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, describe, expect, inject, it } from "vitest"
import { makeTeam } from "./harness.js"
import { until } from "./support.js"
import { assertBuilt, call, type ServerProcess, spawnServer, tempDataDir } from "./process.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("draining on deploy: a rolling restart of two replicas on PostgreSQL", () => {
  const scope = Effect.runSync(Scope.make())
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

  it("lets runs finish within the grace period, hands the others over, and none burns an attempt", async () => {
    assertBuilt(inject("serverBuild"))
    const adminToken = `ar_${randomBytes(32).toString("base64url")}`
    const env = await Effect.runPromise(Effect.gen(function*() {
      const { url } = yield* freshDatabase
      return {
        AGENT_RUNS_DATABASE_URL: url,
        AGENT_RUNS_ADMIN_TOKEN: adminToken,
        AGENT_RUNS_CONCURRENCY: "4",
        AGENT_RUNS_SECRET_KEY: randomBytes(32).toString("hex"),
        AGENT_RUNS_BLOB_DIR: yield* tempDataDir
      }
    }).pipe(Scope.extend(scope)))
    /** Starts a replica (in its own scope: the test stops it when it likes) with this grace period. */
    const replica = async (drainSeconds: number) => {
      const own = Effect.runSync(Scope.make())
      const server = await Effect.runPromise(Effect.gen(function*() {
        return yield* spawnServer({ dataDir: yield* tempDataDir, env: { ...env, AGENT_RUNS_DRAIN_SECONDS: String(drainSeconds) } })
      }).pipe(Scope.extend(own)))
      await Effect.runPromise(Scope.addFinalizer(scope, Scope.close(own, Exit.void)))
      return { server, stop: () => Effect.runPromise(Effect.forkDaemon(Scope.close(own, Exit.void))) }
    }

    const a = await replica(4)
    const team = await makeTeam({ url: a.server.url, adminToken }, "draining")
    const token = team.tokens.member
    const create = async (server: ServerProcess, prompt: string) =>
      (await call(server, "POST", "/api/v1/agent/runs", { token, body: { prompt } })).body.run_id as string
    const runOf = async (server: ServerProcess, id: string): Promise<Json> =>
      (await call(server, "GET", `/api/v1/agent/runs/${id}`, { token })).body
    const inProgress = (server: ServerProcess, ids: ReadonlyArray<string>) => async () =>
      (await Promise.all(ids.map((id) => runOf(server, id)))).every((r) => r.state === "INPROGRESS")

    // On A: two runs that end within its 4 s grace period, two that do not (and that outlast B's
    // turn too, however slowly the next replica starts on a loaded machine).
    const short = [await create(a.server, "short 1\n@sleep 2500\n@say done"), await create(a.server, "short 2\n@sleep 2500\n@say done")]
    const long = [await create(a.server, "long 1\n@sleep 30000\n@say done"), await create(a.server, "long 2\n@sleep 30000\n@say done")]
    await until("A's runs in progress", inProgress(a.server, [...short, ...long]))

    // A stops: at once not ready while its agents run; the short runs end there, the long ones are
    // handed back to the queue when its grace period is over.
    const stoppingA = await a.stop()
    await until("A to say it drains", async () => {
      const ready = await call(a.server, "GET", "/readyz", {})
      return ready.status === 503 && JSON.stringify(ready.body).includes("draining")
    }, 3_000)
    await Effect.runPromise(Fiber.join(stoppingA))
    expect(a.server.stderr()).not.toMatch(/error/i)
    // B starts and takes the long runs.
    const b = await replica(0)
    for (const id of short) expect(await runOf(b.server, id)).toMatchObject({ state: "SUCCEEDED", attempt: 1 })
    await until("B to take the long runs", inProgress(b.server, long))

    // A new A while B stops at once (no grace): B's runs go to it.
    const a2 = await replica(0)
    await Effect.runPromise(Fiber.join(await b.stop()))
    await until("every run to succeed", async () =>
      (await Promise.all([...short, ...long].map((id) => runOf(a2.server, id)))).every((r) => r.state === "SUCCEEDED"), 90_000)

    for (const id of [...short, ...long]) {
      const run = await runOf(a2.server, id)
      expect(run.attempt).toBe(1)
      const events: Array<string> = (await call(a2.server, "GET", `/api/v1/agent/runs/${id}/timeline`, { token })).body.events
        .map((e: Json) => e.event_type)
      expect(events).not.toContain("lease_expired")
      const handedOver = events.filter((e) => e === "handed_over").length
      expect(events.filter((e) => e === "run_claimed")).toHaveLength(handedOver + 1)
      expect(handedOver).toBe(short.includes(id) ? 0 : 2)
    }
  }, 180_000)
})
