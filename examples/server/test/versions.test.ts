/**
 * A worker and a server one minor release apart work together; further apart they refuse each
 * other with one line naming both (docs/workers.md#versions). The built server and the built
 * CLI's worker, with, between them, an HTTP relay that can make the server look like another
 * release: one of 0.1 (its heartbeat answer says no protocol, and it refuses a `HandOver` it
 * does not know, as its schema did) or one two minor releases ahead. A worker of release 0.1 is
 * played by requests of its protocol.
 */
import { randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lifecycle } from "./lifecycle.js"
import { call, type ServerProcess } from "./process.js"
import { kill, startWorker, teamWithWorker, tempDir, until } from "./workerDaemon.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

/** How the relay makes the server look (`as is`: as it is). */
type Disguise = "0.1" | "two minors ahead" | "as is"

const bodyOf = (request: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    request.setEncoding("utf8").on("data", (chunk: string) => (body += chunk)).on("end", () => resolve(body))
  })

/** An HTTP relay to the server that answers as a server of `disguise` would; records what workers sent. */
const disguised = async (target: () => number, initially: Disguise) => {
  const seen = { claimProtocols: [] as Array<unknown>, handOvers: 0 }
  const state = { disguise: initially }
  const server: Server = createServer((request, response) => {
    relay(request, response).catch(() => response.destroy())
  })
  const relay = async (request: IncomingMessage, response: ServerResponse) => {
    const body = await bodyOf(request)
    const path = request.url ?? "/"
    const sent: Json = body === "" ? undefined : JSON.parse(body)
    if (path.endsWith("/claim")) seen.claimProtocols.push(sent?.protocol)
    if (path.endsWith("/events") && sent?.events?.some((e: Json) => e._tag === "HandOver")) {
      seen.handOvers++
      if (state.disguise === "0.1") {
        response.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: "events: unknown _tag HandOver" }))
        return
      }
    }
    const headers = Object.fromEntries(
      Object.entries(request.headers).filter(([name]) => !["host", "content-length", "connection"].includes(name))
    ) as Record<string, string>
    const answer = await fetch(`http://127.0.0.1:${target()}${path}`, { method: request.method!, headers, ...(body === "" ? {} : { body }) })
    let text = await answer.text()
    if (path.endsWith("/heartbeat") && request.method === "POST" && answer.ok && state.disguise !== "as is") {
      const { oldest_protocol: _o, protocol: _p, version: _v, ...settings } = JSON.parse(text)
      text = JSON.stringify(state.disguise === "0.1" ? settings : { ...settings, protocol: 6, oldest_protocol: 5, version: "0.4.0" })
    }
    response.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(text)
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    seen,
    set disguise(disguise: Disguise) {
      state.disguise = disguise
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

describe("a worker and a server of different releases", () => {
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const life = lifecycle("sqlite", { AGENT_RUNS_ADMIN_TOKEN: adminToken, AGENT_RUNS_WORKER_HEARTBEAT_SECONDS: "1", AGENT_RUNS_LEASE_SECONDS: "30" })
  let server: ServerProcess
  let team: Awaited<ReturnType<typeof teamWithWorker>>
  const relays: Array<{ close: () => Promise<void> }> = []

  beforeAll(async () => {
    server = await life.start()
    team = await teamWithWorker(server, adminToken, "versions")
  }, 60_000)
  afterAll(async () => {
    for (const relay of relays) await relay.close()
  })

  const create = async (prompt: string, workerHost: string) => {
    const reply = await call(server, "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt, config: { worker_host: workerHost } } })
    expect(reply.status).toBe(200)
    return reply.body.run_id as string
  }
  const run = async (id: string): Promise<Json> => (await call(server, "GET", `/api/v1/agent/runs/${id}`, { token: team.tokens.member })).body

  it("this worker speaks protocol 3 to a server of release 0.1: runs its runs, and stopped, sends no hand-over that server would refuse", async () => {
    const relay = await disguised(() => server.port, "0.1")
    relays.push(relay)
    const worker = await startWorker({ url: relay.url, token: team.worker, workerId: "w-old-server", dataDir: tempDir() })
    expect(worker.output()).toContain("release 0.1, worker protocol 3")
    const quick = await create("hello", "w-old-server")
    expect(await until(() => run(quick), (r) => r.state === "SUCCEEDED", 20_000)).toMatchObject({ state: "SUCCEEDED", attempt: 1 })
    const long = await create("@sleep 60000", "w-old-server")
    await until(() => run(long), (r) => r.state === "INPROGRESS", 20_000)
    await kill(worker, "SIGTERM")
    expect(relay.seen.handOvers).toBe(0)
    expect(relay.seen.claimProtocols.length).toBeGreaterThan(0)
    expect(new Set(relay.seen.claimProtocols)).toEqual(new Set([3]))
    // As on a server of 0.1: the run waits for its lease, not handed back.
    expect((await run(long)).state).toBe("INPROGRESS")
    expect(worker.output()).toContain("could not be handed over; its lease will run out")
  }, 60_000)

  it("a worker agrees again with a server upgraded under it: from protocol 3 to 4, and then hands over when stopped", async () => {
    const relay = await disguised(() => server.port, "0.1")
    relays.push(relay)
    const worker = await startWorker({ url: relay.url, token: team.worker, workerId: "w-upgraded", dataDir: tempDir() })
    expect(worker.output()).toContain("worker protocol 3")
    relay.disguise = "as is"
    // Two heartbeats (1 s apart) later, the next claim is made in protocol 4.
    const asked = relay.seen.claimProtocols.length
    await until(async () => relay.seen.claimProtocols.slice(asked).includes(4), (yes) => yes, 30_000)
    const id = await create("@sleep 60000", "w-upgraded")
    await until(() => run(id), (r) => r.state === "INPROGRESS", 30_000)
    await kill(worker, "SIGTERM")
    expect(relay.seen.handOvers).toBe(1)
    expect(await run(id)).toMatchObject({ state: "QUEUED", attempt: 1 })
  }, 90_000)

  it("a worker two minor releases from the server stops at start with one line naming both", async () => {
    const relay = await disguised(() => server.port, "two minors ahead")
    relays.push(relay)
    const failure = await startWorker({ url: relay.url, token: team.worker, workerId: "w-far", dataDir: tempDir() }).then(
      () => "connected",
      (e: Error) => e.message
    )
    expect(failure).toContain("(release 0.4.0) speaks worker protocols 5–6 and this worker (release 0.2.0) 3–4")
    expect(failure).not.toMatch(/^\s+at /m)
  }, 30_000)

  it("a worker of release 0.1 (no protocol at its heartbeat, protocol 3 in its claims) runs its run on this server", async () => {
    const id = await create("hello", "w-old")
    const worker = `/api/v1/workers/w-old`
    const as = { token: team.worker }
    // What a worker says of itself is bounded: a version is a short word, a protocol a small number.
    for (const bad of [{ version: "0.2.0\nforged log line" }, { version: "x".repeat(41) }, { protocol: 0 }, { oldest_protocol: 1001 }]) {
      const refused = await call(server, "POST", `${worker}/heartbeat`, { ...as, body: { capacity: 1, ...bad } })
      expect(refused.status, JSON.stringify(bad)).toBe(400)
    }
    const beat = await call(server, "POST", `${worker}/heartbeat`, { ...as, body: { capacity: 1 } })
    expect(beat.body).toMatchObject({ protocol: 4, oldest_protocol: 3, version: "0.2.0" })
    const claimed = await call(server, "POST", `${worker}/claim`, { ...as, body: { protocol: 3, wait_seconds: 5 } })
    expect(claimed.body.claim.run.run_id).toBe(id)
    const execution_id = claimed.body.claim.execution_id
    const renewed = await call(server, "POST", `${worker}/runs/${id}/renew`, { ...as, body: { execution_id, protocol: 3 } })
    expect(renewed.status).toBe(200)
    const events = [{ _tag: "EnvironmentSetupStarted" }, { _tag: "EnvironmentSetupSucceeded" }, { _tag: "Start" }, { _tag: "Succeed", message: "done" }]
    const recorded = await call(server, "POST", `${worker}/runs/${id}/events`, { ...as, body: { execution_id, events } })
    expect(recorded.body).toEqual({ state: "SUCCEEDED" })
    expect(await run(id)).toMatchObject({ state: "SUCCEEDED", attempt: 1 })
    // Listed with the protocol agreed and no release (0.1 says none): the workers an upgrade has to reach.
    const listed = await call(server, "GET", "/api/v1/agent/connected-self-hosted-workers", { token: team.tokens.member })
    const old = listed.body.workers.find((w: Json) => w.worker_id === "w-old")
    expect(old).toMatchObject({ protocol: 3 })
    expect(old.version).toBeUndefined()
  }, 30_000)
})
