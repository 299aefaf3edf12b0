/**
 * Adopting agents across a restart (docs/deployment.md#adopting-agents-across-a-restart): the
 * built server on PostgreSQL with the Docker executor, then with the Kubernetes executor (the API
 * server double, its pods on Docker), stopped with SIGTERM while its agents run past the grace
 * period. It leaves them running in their sandboxes and is started again on the same data
 * directory (the same instance): the new process adopts each agent where the old one stopped reading it.
 * Every run ends SUCCEEDED at attempt 1 in the one execution it was claimed for, never handed
 * over; its transcript and conversation hold each thing the agent said once; the usage it
 * reported before and after the restart is counted once (its budget too); a follow-up sent to the new process
 * reaches the adopted agent's stdin.
 */
import { testImage } from "@agent-runs/executor-docker/testing"
import Docker from "dockerode"
import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { makeTeam } from "./harness.js"
import { kubernetesCluster } from "./kubernetes.js"
import { until } from "./support.js"
import { lifecycle } from "./lifecycle.js"
import { call, type ServerProcess, spawnServer, tempDataDir } from "./process.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const docker = new Docker()

/** The running containers of a run (the Docker executor's sandboxes). */
const containersOf = async (runId: string) =>
  docker.listContainers({ filters: { label: [`agent-runs.run-id=${runId}`], status: ["running"] } })

/** A run's raw transcript ("" before there is one). */
const transcriptOf = async (server: ServerProcess, token: string, id: string) => {
  const link = await call(server, "GET", `/api/v1/agent/runs/${id}/transcript`, { token })
  return link.status === 302 ? await fetch(link.headers.get("location")!).then((r) => r.text()) : ""
}

const PROMPT = [
  "A long task",
  "@say begin",
  "@spend 0.5",
  "@sleep 6000",
  "@say middle",
  "@await-followup",
  "@spend 0.25",
  "@say end"
].join("\n")

/** The server's settings of each executor, and where a run's sandbox is found. */
const EXECUTORS = {
  docker: { env: { AGENT_RUNS_EXECUTOR: "docker", AGENT_RUNS_DOCKER_IMAGE: testImage }, sandboxesOf: containersOf },
  kubernetes: {
    env: {
      AGENT_RUNS_EXECUTOR: "kubernetes",
      AGENT_RUNS_KUBERNETES_IMAGE: testImage,
      AGENT_RUNS_KUBERNETES_NAMESPACE: "agents",
      AGENT_RUNS_KUBERNETES_INSTANCE: "adoption-test"
    },
    sandboxesOf: async (runId: string) =>
      cluster!().list("jobs", "agents").filter((job) => job.metadata?.labels?.["agent-runs/run-id"] === runId)
  }
} as const
let cluster: ReturnType<typeof kubernetesCluster> | undefined

/** Starts two long runs on `server` and waits until their agents have begun: their ids. */
const startLongRuns = async (server: ServerProcess, token: string) => {
  const ids: Array<string> = []
  for (const i of [1, 2]) {
    ids.push((await call(server, "POST", "/api/v1/agent/runs", {
      token,
      // A budget that what it spent before the restart, counted twice, would pass.
      body: { prompt: PROMPT, title: `long ${i}`, config: { max_cost_usd: 1 } }
    })).body.run_id)
  }
  await until("the agents to begin", async () => {
    const transcripts = await Promise.all(ids.map((id) => transcriptOf(server, token, id)))
    return transcripts.every((t) => t.includes("begin"))
  })
  return ids
}

/**
 * Once `server` adopted the runs' agents: a follow-up to each, then each run SUCCEEDED at attempt
 * 1 in one execution, never handed over, each thing said once, its usage counted once, its
 * sandbox gone.
 */
const expectAdopted = async (server: ServerProcess, token: string, ids: ReadonlyArray<string>, sandboxesOf: (id: string) => Promise<ReadonlyArray<unknown>>) => {
  const runOf = async (id: string): Promise<Json> => (await call(server, "GET", `/api/v1/agent/runs/${id}`, { token })).body
  await until("the agents to be adopted", async () => server.stdout().split("is adopted").length - 1 >= ids.length, 30_000)
  for (const id of ids) {
    expect((await call(server, "POST", `/api/v1/agent/runs/${id}/followups`, { token, body: { message: "go on" } })).status).toBe(200)
  }
  await until("every run to succeed", async () => (await Promise.all(ids.map(runOf))).every((r) => r.state === "SUCCEEDED"), 60_000)
  for (const id of ids) {
    const run = await runOf(id)
    const seen = JSON.stringify(run)
    expect(run.attempt, seen).toBe(1)
    expect(run.request_usage.inference_cost, seen).toBeCloseTo(0.75, 6)
    const events: Array<Json> = (await call(server, "GET", `/api/v1/agent/runs/${id}/timeline`, { token })).body.events
    const types = events.map((e) => e.event_type)
    const shown = JSON.stringify(events.map((e) => [e.event_type, e.execution_id]))
    expect(types, shown).not.toContain("handed_over")
    expect(types, shown).not.toContain("lease_expired")
    expect(types.filter((t) => t === "run_claimed"), shown).toHaveLength(1)
    expect(types.filter((t) => t === "run_in_progress"), shown).toHaveLength(1)
    // From its claim on, one execution.
    const claimed = types.indexOf("run_claimed")
    expect(new Set(events.slice(claimed).map((e) => e.execution_id)).size, shown).toBe(1)
    const transcript = await transcriptOf(server, token, id)
    for (const said of ["begin", "middle", "end"]) expect(transcript.split(`"${said}"`).length - 1, transcript).toBe(1)
    // One step (the execution's), its dialogue whole and once.
    const conversation = (await call(server, "GET", `/api/v1/agent/runs/${id}/conversation`, { token })).body
    const messages = conversation.steps.flatMap((step: Json) => step.messages)
    expect(conversation.steps, JSON.stringify(conversation)).toHaveLength(1)
    const said = (role: string) => messages.filter((m: Json) => m.role === role).map((m: Json) => m.content.map((c: Json) => c.text).join(""))
    // (The follow-up comes before or after "middle", as the restart is quick or slow.)
    expect(said("user")).toEqual([PROMPT, "go on"])
    expect(said("assistant")).toEqual(["begin", "middle", "received: go on", "end"])
    // Its sandbox went with its end.
    await until("the sandbox to go", async () => (await sandboxesOf(id)).length === 0, 10_000)
  }
}

for (const executor of ["docker", "kubernetes"] as const) describe(`adopting agents across a restart (PostgreSQL, ${executor})`, () => {
  // Before the server starts (and stopped after it): the cluster of the Kubernetes executor.
  if (executor === "kubernetes") cluster = kubernetesCluster()
  const { env, sandboxesOf } = EXECUTORS[executor]
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const life = lifecycle("postgres", {
    AGENT_RUNS_ADMIN_TOKEN: adminToken,
    // One key for every process (a replica on another data directory too).
    AGENT_RUNS_SECRET_KEY: randomBytes(32).toString("hex"),
    ...env,
    AGENT_RUNS_DRAIN_SECONDS: "1"
  })

  it("a restart adopts the agents still running: attempt 1, one execution, nothing said twice, usage counted once", async () => {
    const first = await life.start()
    const team = await makeTeam({ url: first.url, adminToken }, "adoption")
    const token = team.tokens.member
    const ids = await startLongRuns(first, token)

    // Stopped while they sleep: the grace period (1 s) passes, they are left in their sandboxes.
    const exited = await life.stop()
    expect(exited.code).toBe(0)
    for (const id of ids) expect(await sandboxesOf(id)).toHaveLength(1)

    const next = await life.start()
    await expectAdopted(next, token, ids, sandboxesOf)
    await life.stop()
  }, 180_000)

  if (executor === "kubernetes") {
    it("a rolling deploy (a Deployment's): the new replica, another instance started before the old one stops, adopts its agents", async () => {
      const old = await life.start({ AGENT_RUNS_KUBERNETES_INSTANCE: "old-pod" })
      const team = await makeTeam({ url: old.url, adminToken }, "rolling")
      const token = team.tokens.member
      const ids = await startLongRuns(old, token)
      // The new replica runs before the old one stops (on its own data directory, the same database and blobs).
      const scope = Effect.runSync(Scope.make())
      try {
        const replica = await Effect.runPromise(Effect.gen(function*() {
          return yield* spawnServer({
            dataDir: yield* tempDataDir,
            env: { ...life.env, AGENT_RUNS_BLOB_DIR: `${life.dataDir}/blobs`, AGENT_RUNS_KUBERNETES_INSTANCE: "new-pod" }
          })
        }).pipe(Scope.extend(scope)))
        expect((await life.stop()).code).toBe(0)
        await expectAdopted(replica, token, ids, sandboxesOf)
      } finally {
        await Effect.runPromise(Scope.close(scope, Exit.void))
      }
    }, 180_000)
  }
})
