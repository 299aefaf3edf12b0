/**
 * Self-hosted workers, black-box (docs/workers.md): the built server as a process and the built
 * CLI's `agent-runs worker` as other processes, connected through a small TCP relay so that the
 * worker keeps one address while the server behind it restarts. A worker runs the runs addressed
 * to it, is listed while connected and not after, rides out a server restart; a worker stopped
 * mid-run hands its run back at the same attempt, one killed mid-run loses it to the lease sweep
 * (attempt rule, ERROR after the third: the one end-to-end test of that rule, which core tests
 * through the sweep in DispatcherSuite and on every store in RunStoreConformance), and one started
 * again on its data directory takes back what the killed one left; a worker that comes back after losing its lease does not run the run a second
 * time; a worker stops an agent past its run's budget; a run for a worker that is not connected waits QUEUED and its timeline says why;
 * cancelling a worker's run is a 422. Two servers: SQLite with a long lease (to ride out a
 * restart), PostgreSQL with a short one.
 */
import { writeRepository } from "@agent-runs/core/testing"
import { randomBytes } from "node:crypto"
import { existsSync, readdirSync } from "node:fs"
import { connect, createServer, type Server, type Socket } from "node:net"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lifecycle } from "./lifecycle.js"
import { call, type ServerProcess } from "./process.js"
import { kill, startWorker, teamWithWorker, tempDir, until } from "./workerDaemon.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const ENDED = ["SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"]

/** A TCP relay on a fixed port to whichever server port `target` names now. */
const relay = async () => {
  const state = { target: 0 }
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    const upstream = connect(state.target, "127.0.0.1")
    for (const s of [socket, upstream]) {
      sockets.add(s)
      s.on("error", () => {
        socket.destroy()
        upstream.destroy()
      })
      s.on("close", () => sockets.delete(s))
    }
    socket.pipe(upstream)
    upstream.pipe(socket)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}`,
    set target(port: number) {
      state.target = port
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      })
  }
}

/** A team with a member user and a service account (member) for workers. */
const setUp = async (server: { url: string }, adminToken: string, name: string) => {
  const team = await teamWithWorker(server, adminToken, name)
  return { team: team.uid, user: team.tokens.member, viewer: team.tokens.viewer, worker: team.worker }
}

const api = (server: () => { url: string }, token: string) => ({
  create: async (prompt: string, workerHost: string) => {
    const reply = await call(server(), "POST", "/api/v1/agent/runs", { token, body: { prompt, config: { worker_host: workerHost } } })
    expect(reply.status).toBe(200)
    return reply.body.run_id as string
  },
  run: async (id: string): Promise<Json> => (await call(server(), "GET", `/api/v1/agent/runs/${id}`, { token })).body,
  timeline: async (id: string): Promise<Array<Json>> =>
    (await call(server(), "GET", `/api/v1/agent/runs/${id}/timeline`, { token })).body.events,
  workers: async (): Promise<Array<Json>> =>
    (await call(server(), "GET", "/api/v1/agent/connected-self-hosted-workers", { token })).body.workers
})

describe("self-hosted workers: running, listing, waiting, cancel, a server restart", () => {
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const life = lifecycle("sqlite", {
    AGENT_RUNS_ADMIN_TOKEN: adminToken,
    AGENT_RUNS_WORKER_HEARTBEAT_SECONDS: "1",
    // Longer than a restart takes on a busy machine: the worker's run must keep its lease across it.
    AGENT_RUNS_LEASE_SECONDS: "60"
  })
  let server: ServerProcess
  let proxy: Awaited<ReturnType<typeof relay>>
  let tokens: Awaited<ReturnType<typeof setUp>>

  beforeAll(async () => {
    server = await life.start()
    proxy = await relay()
    proxy.target = server.port
    tokens = await setUp(server, adminToken, "workers")
  }, 60_000)
  afterAll(async () => {
    await proxy?.close()
  })

  it("runs a worker's run, lists the worker while connected, makes a run wait for an absent worker, cancels it", async () => {
    const runs = api(() => server, tokens.user)

    // A run for a worker that is not connected waits QUEUED, and its timeline says why.
    const waiting = await runs.create("Waits for its worker", "w1")
    const queued = (await runs.timeline(waiting)).find((e) => e.event_type === "run_queued")
    expect(queued.message).toContain("w1")
    expect(queued.message).toContain("not connected")
    // A run for another worker, which never connects.
    const elsewhere = await runs.create("For another worker", "elsewhere")
    // A run waiting for its worker can be cancelled at once.
    const doomed = await runs.create("Cancelled while it waits", "w1")
    const cancel = await call(server, "POST", `/api/v1/agent/runs/${doomed}/cancel`, { token: tokens.user })
    expect(cancel.status).toBe(200)
    expect((await runs.run(doomed)).state).toBe("CANCELLED")

    // Only a service account may act as a worker.
    const refused = await call(server, "POST", "/api/v1/workers/w1/heartbeat", { token: tokens.user, body: { capacity: 1 } })
    expect(refused.status).toBe(403)
    expect(await runs.workers()).toEqual([])

    const w1Data = tempDir()
    const worker = await startWorker({
      url: proxy.url,
      token: tokens.worker,
      workerId: "w1",
      dataDir: w1Data,
      extra: ["--capacity", "2", "--label", "linux", "--display-name", "First worker"]
    })
    // Connected: the run that waited for it runs.
    expect((await until(() => runs.run(waiting), (r) => ENDED.includes(r.state))).state).toBe("SUCCEEDED")
    expect(await until(() => runs.workers(), (ws) => ws[0]?.active_runs === 0, 5_000)).toEqual([
      expect.objectContaining({ worker_id: "w1", display_name: "First worker", labels: ["linux"], capacity: 2, active_runs: 0 })
    ])
    // Another team does not see it.
    const other = await setUp(server, adminToken, "others")
    expect(await api(() => server, other.viewer).workers()).toEqual([])

    const id = await runs.create("From the worker\n@say hello from w1\n@sleep 800", "w1")
    const busy = await until(() => runs.workers(), (ws) => ws[0]?.active_runs === 1, 10_000)
    expect(busy[0].active_runs).toBe(1)
    const done = await until(() => runs.run(id), (r) => ENDED.includes(r.state))
    expect(done).toMatchObject({ state: "SUCCEEDED", attempt: 1, is_run_type_cancellable: true })
    const types = (await runs.timeline(id)).map((e) => e.event_type)
    expect(types).toEqual(expect.arrayContaining(["run_claimed", "run_in_progress", "run_succeeded"]))
    const conversation = await call(server, "GET", `/api/v1/agent/runs/${id}/conversation`, { token: tokens.user })
    expect(JSON.stringify(conversation.body)).toContain("hello from w1")
    // The run waiting for another worker stays QUEUED.
    expect((await runs.run(elsewhere)).state).toBe("QUEUED")

    // A run the worker is running is cancelled at once; the worker sees it (its writes and lease
    // renewals are refused) and stops the agent: its sandbox is gone within seconds.
    const long = await runs.create("Runs until cancelled\n@sleep 60000", "w1")
    await until(() => runs.run(long), (r) => r.state === "INPROGRESS", 10_000)
    const sandboxes = () => readdirSync(join(w1Data, "sandboxes", long), { withFileTypes: true }).length
    expect(sandboxes()).toBeGreaterThan(0)
    expect((await call(server, "POST", `/api/v1/agent/runs/${long}/cancel`, { token: tokens.user })).status).toBe(200)
    expect((await runs.run(long)).state).toBe("CANCELLED")
    const gone = async () => (existsSync(join(w1Data, "sandboxes", long)) ? sandboxes() : 0)
    expect(await until(gone, (n) => n === 0, 10_000)).toBe(0)
    expect((await runs.run(long)).state).toBe("CANCELLED")

    // Stopped: no longer listed (it says goodbye).
    await kill(worker, "SIGTERM")
    expect(await until(() => runs.workers(), (ws) => ws.length === 0, 5_000)).toEqual([])
  }, 60_000)

  it("stops an agent that spends past its run's budget: FAILED budget_exceeded, as on the server's own executors", async () => {
    const reply = await call(server, "POST", "/api/v1/agent/runs", {
      token: tokens.user,
      body: { prompt: "@spend 0.6\n@spend 0.5\n@sleep 600000", config: { worker_host: "wb", max_cost_usd: 1 } }
    })
    expect(reply.status).toBe(200)
    const worker = await startWorker({ url: server.url, token: tokens.worker, workerId: "wb", dataDir: tempDir() })
    const runs = api(() => server, tokens.user)
    const ended = await until(() => runs.run(reply.body.run_id), (r) => ENDED.includes(r.state), 30_000)
    expect(ended.state).toBe("FAILED")
    expect(ended.status_message).toMatchObject({ error_code: "budget_exceeded" })
    expect(ended.request_usage.inference_cost).toBeCloseTo(1.1)
    await kill(worker, "SIGTERM")
  }, 60_000)

  it("keeps its run going while the server restarts, and reconnects; killed, it drops off the list once stale", async () => {
    const worker = await startWorker({ url: proxy.url, token: tokens.worker, workerId: "w2", dataDir: tempDir() })
    const runs = api(() => server, tokens.user)
    const id = await runs.create("Across a restart\n@sleep 3000\n@say still here", "w2")
    await until(() => runs.run(id), (r) => r.state === "INPROGRESS", 10_000)
    await life.stop()
    server = await life.start()
    proxy.target = server.port
    const done = await until(() => runs.run(id), (r) => ENDED.includes(r.state), 20_000)
    // The same execution finished it: one claim, one start, attempt 1.
    expect(done).toMatchObject({ state: "SUCCEEDED", attempt: 1 })
    const types = (await runs.timeline(id)).map((e) => e.event_type)
    expect(types.filter((t) => t === "run_in_progress")).toHaveLength(1)
    expect(types).not.toContain("requeued")
    // Listed again after the restart (heartbeats reach the new server).
    expect((await until(() => runs.workers(), (ws) => ws.length > 0, 5_000)).map((w) => w.worker_id)).toEqual(["w2"])
    // Killed, it says no goodbye: listed until it is stale (3 heartbeats), then not.
    await kill(worker, "SIGKILL")
    expect((await runs.workers()).map((w) => w.worker_id)).toEqual(["w2"])
    expect(await until(() => runs.workers(), (ws) => ws.length === 0, 8_000)).toEqual([])
  }, 60_000)
})

describe("self-hosted workers on PostgreSQL: follow-ups, skills, lost workers and the attempt rule", () => {
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const serverRepos = tempDir()
  const life = lifecycle("postgres", {
    AGENT_RUNS_ADMIN_TOKEN: adminToken,
    AGENT_RUNS_WORKER_HEARTBEAT_SECONDS: "1",
    // Short, for the tests that wait for a lost worker's lease to expire; long enough that a busy
    // machine does not lose a live worker's lease (renewed every third of it).
    AGENT_RUNS_LEASE_SECONDS: "3",
    AGENT_RUNS_REPOS_DIR: serverRepos
  })
  const skill = (body: string) => ({ "skills/deploy/SKILL.md": `---\nname: deploy\ndescription: Deploys\n---\n${body}\n` })
  let server: ServerProcess
  let tokens: Awaited<ReturnType<typeof setUp>>

  beforeAll(async () => {
    server = await life.start()
    tokens = await setUp(server, adminToken, "pg-workers")
    writeRepository(serverRepos, tokens.team, "acme/skills", skill("# The server's copy"))
  }, 60_000)

  const conversationOf = async (id: string) =>
    JSON.stringify((await call(server, "GET", `/api/v1/agent/runs/${id}/conversation`, { token: tokens.user })).body)

  it("delivers follow-ups to a worker's run, live and as a new execution; reads a run's skill from the worker's repositories", async () => {
    const runs = api(() => server, tokens.user)
    const workerRepos = tempDir()
    // The worker's repositories directory has the same layout: <repos-dir>/<team_uid>/<owner>/<repo>.
    writeRepository(workerRepos, tokens.team, "acme/skills", skill("# The worker's copy"))
    const worker = await startWorker({
      url: server.url,
      token: tokens.worker,
      workerId: "wf",
      dataDir: tempDir(),
      extra: ["--repos-dir", workerRepos]
    })

    // Live: the agent waits for a follow-up, which the worker hands to it.
    const id = await runs.create("Talk to me\n@await-followup", "wf")
    await until(() => runs.run(id), (r) => r.state === "INPROGRESS", 10_000)
    const sent = await call(server, "POST", `/api/v1/agent/runs/${id}/followups`, { token: tokens.user, body: { message: "hello worker" } })
    expect(sent.status).toBe(200)
    expect(await until(() => runs.run(id), (r) => ENDED.includes(r.state))).toMatchObject({ state: "SUCCEEDED", execution_count: 1 })
    expect(await conversationOf(id)).toContain("received: hello worker")

    // Ended: a new execution of the run, claimed by the worker.
    const again = await call(server, "POST", `/api/v1/agent/runs/${id}/followups`, { token: tokens.user, body: { message: "@say second round" } })
    expect(again.status).toBe(200)
    const second = await until(() => runs.run(id), (r) => r.execution_count === 2 && ENDED.includes(r.state))
    expect(second).toMatchObject({ state: "SUCCEEDED", execution_count: 2 })
    expect(await conversationOf(id)).toContain("second round")

    // A skill: resolved by the server at creation, read again from the worker's repositories at start.
    const env = await call(server, "POST", "/api/v1/agent/environments", {
      token: tokens.user,
      body: { team: true, config: { name: "skills", github_repos: [{ owner: "acme", repo: "skills" }] } }
    })
    expect(env.status).toBe(201)
    const created = await call(server, "POST", "/api/v1/agent/runs", {
      token: tokens.user,
      body: { prompt: "@skill", config: { worker_host: "wf", environment_id: env.body.uid, skill_spec: "acme/skills:deploy" } }
    })
    expect(created.status).toBe(200)
    const withSkill = await until(() => runs.run(created.body.run_id), (r) => ENDED.includes(r.state))
    expect(withSkill.state).toBe("SUCCEEDED")
    const said = await conversationOf(created.body.run_id)
    expect(said).toContain("skill: deploy")
    expect(said).toContain("The worker's copy")
    await kill(worker, "SIGTERM")
  }, 60_000)

  it("hands its run back when stopped (same attempt); loses it when killed, three times: requeued each time, ERROR after the third", async () => {
    const runs = api(() => server, tokens.user)
    const dataDir = tempDir()
    const sandboxes = (id: string) => {
      const dir = join(dataDir, "sandboxes", id)
      return existsSync(dir) ? readdirSync(dir).length : 0
    }
    const id = await runs.create("@sleep 60000", "wk")

    // A clean stop (SIGTERM): the worker stops its agent and hands the run back at once, at the
    // same attempt (docs/deployment.md#draining-on-deploy); no lease runs out.
    let worker = await startWorker({ url: server.url, token: tokens.worker, workerId: "wk", dataDir })
    expect(await until(() => runs.run(id), (r) => r.state === "INPROGRESS", 10_000)).toMatchObject({ state: "INPROGRESS", attempt: 1 })
    await kill(worker, "SIGTERM")
    expect(await runs.run(id)).toMatchObject({ state: "QUEUED", attempt: 1 })
    expect((await runs.timeline(id)).map((e) => e.event_type).slice(-2)).toEqual(["handed_over", "requeued"])
    expect(sandboxes(id)).toBe(0)

    // Killed (SIGKILL), three times: its agent and sandbox stay behind; the run comes back when its
    // lease expires, at the next attempt; a worker started on that data directory first takes back
    // what the killed one left; after the third, ERROR.
    for (const attempt of [1, 2, 3]) {
      worker = await startWorker({ url: server.url, token: tokens.worker, workerId: "wk", dataDir })
      if (attempt > 1) {
        const released = await until(async () => worker.output(), (o) => o.includes("released 1 sandboxes of an earlier run"), 10_000)
        expect(released).toContain("released 1 sandboxes of an earlier run")
      }
      expect(await until(() => runs.run(id), (r) => r.state === "INPROGRESS", 10_000)).toMatchObject({ state: "INPROGRESS", attempt })
      await kill(worker, "SIGKILL")
      expect(sandboxes(id)).toBeGreaterThan(0)
      if (attempt < 3) expect(await until(() => runs.run(id), (r) => r.state === "QUEUED", 10_000)).toMatchObject({ attempt: attempt + 1 })
    }
    const ended = await until(() => runs.run(id), (r) => ENDED.includes(r.state), 10_000)
    expect(ended).toMatchObject({ state: "ERROR", attempt: 3, status_message: { error_code: "resource_unavailable", retryable: true } })
    const types = (await runs.timeline(id)).map((e) => e.event_type)
    expect(types.filter((t) => t === "lease_expired")).toHaveLength(3)
    expect(types.filter((t) => t === "handed_over")).toHaveLength(1)
    expect(types.filter((t) => t === "requeued")).toHaveLength(3)
    // The last killed worker's leftovers, taken back by the next one on its directory.
    worker = await startWorker({ url: server.url, token: tokens.worker, workerId: "wk", dataDir })
    expect(await until(async () => sandboxes(id), (n) => n === 0, 10_000)).toBe(0)
    await kill(worker, "SIGTERM")
  }, 120_000)

  it("stopped with a grace period, lets its agents finish within it and hands the rest back after it (same attempt)", async () => {
    const runs = api(() => server, tokens.user)
    const short = await runs.create("short\n@sleep 2500\n@say done", "wk-drain")
    const long = await runs.create("@sleep 60000", "wk-drain")
    const worker = await startWorker({
      url: server.url,
      token: tokens.worker,
      workerId: "wk-drain",
      dataDir: tempDir(),
      extra: ["--capacity", "2", "--drain-seconds", "8"]
    })
    for (const id of [short, long]) await until(() => runs.run(id), (r) => r.state === "INPROGRESS", 10_000)
    await kill(worker, "SIGTERM")
    expect(await runs.run(short)).toMatchObject({ state: "SUCCEEDED", attempt: 1 })
    expect(await runs.run(long)).toMatchObject({ state: "QUEUED", attempt: 1 })
    expect((await runs.timeline(short)).map((e) => e.event_type)).not.toContain("handed_over")
    expect((await runs.timeline(long)).map((e) => e.event_type).slice(-2)).toEqual(["handed_over", "requeued"])
  }, 60_000)

  it("does not let a worker that lost its lease run the run a second time", async () => {
    const runs = api(() => server, tokens.user)
    const dataDir = tempDir()
    const sandboxes = (id: string) => {
      const dir = join(dataDir, "sandboxes", id)
      return existsSync(dir) ? readdirSync(dir).length : 0
    }
    const worker = await startWorker({ url: server.url, token: tokens.worker, workerId: "wr", dataDir })
    const id = await runs.create("Once only\n@sleep 1500\n@say finished once", "wr")
    await until(() => runs.run(id), (r) => r.state === "INPROGRESS", 10_000)
    const firstExecution = (await runs.timeline(id)).find((e) => e.event_type === "run_in_progress").execution_id
    // Frozen past its lease (its agent goes on and finishes): the server requeues the run.
    worker.child.kill("SIGSTOP")
    await until(() => runs.run(id), (r) => r.attempt === 2, 10_000)
    expect(sandboxes(id)).toBeGreaterThan(0)
    // Back: the lost execution's writes (its agent's words, its end) are refused and it gives the
    // run up; the worker claims the run again and runs it to its end. Every sandbox is released.
    worker.child.kill("SIGCONT")
    const done = await until(() => runs.run(id), (r) => ENDED.includes(r.state), 15_000)
    expect(await until(async () => sandboxes(id), (n) => n === 0, 15_000)).toBe(0)
    // (A claim the frozen worker had waiting on the server may have taken the run once more
    // while it was frozen, and lost it too: attempt 2 or 3.)
    expect(done.state).toBe("SUCCEEDED")
    expect(done.attempt).toBeGreaterThanOrEqual(2)
    expect(await runs.run(id)).toMatchObject({ state: "SUCCEEDED", attempt: done.attempt })
    const timeline = await runs.timeline(id)
    const succeeded = timeline.filter((e) => e.event_type === "run_succeeded")
    expect(succeeded).toHaveLength(1)
    expect(succeeded[0].execution_id).not.toBe(firstExecution)
    expect(timeline.filter((e) => e.event_type === "run_in_progress")).toHaveLength(2)
    const conversation = await call(server, "GET", `/api/v1/agent/runs/${id}/conversation`, { token: tokens.user })
    // Said once by the agent (each attempt's user was given the prompt that asks for it).
    const said = conversation.body.steps.flatMap((s: Json) => s.messages).filter((m: Json) => m.role !== "user")
    expect(JSON.stringify(said).match(/finished once/g)).toHaveLength(1)
    await kill(worker, "SIGTERM")
  }, 60_000)
})
