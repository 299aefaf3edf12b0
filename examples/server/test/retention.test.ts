/**
 * Retention (docs/retention.md) through the bundled server on SQLite and PostgreSQL, with its
 * blobs on disk: a team admin sets the team's retention within the server's ceilings; the sweep
 * removes the ended runs past it with their transcripts (gone from the API, the `q` search and the
 * blob directory), and the webhook deliveries past theirs with their payload blobs; live and newer
 * runs stay. Rows are aged by writing their times in the database (the clock itself is the core
 * test's, DataRetention.test.ts).
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import type { Layer } from "effect";
import { Effect } from "effect"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, suiteServer, type TestServer, waitForRun } from "./harness.js"
import { postRaw } from "./support.js"

const DAY = 86_400_000

/** Runs a statement on the server's database, from a connection of its own. */
const onDatabase = (server: TestServer, statement: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) => {
  const database = server.config.database
  const client: Layer.Layer<SqlClient.SqlClient, unknown> = database._tag === "Sqlite"
    ? SqliteClient.layer({ filename: database.filename })
    : PgClient.layer({ url: database.url, maxConnections: 1 })
  return Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, statement).pipe(Effect.provide(client), Effect.orDie))
}

/** Polls until `check` holds (20 s at most). */
const eventually = async (check: () => Promise<boolean>) => {
  const deadline = Date.now() + 20_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("not within 20 s")
    await new Promise((r) => setTimeout(r, 200))
  }
}

describe.each<DatabaseKind>(["sqlite", "postgres"])("retention (%s)", (kind) => {
  const server = suiteServer(kind, { retention: { runDays: 30, webhookDeliveryDays: 30, everySeconds: 1 } }, { concurrency: 2 })
  const transcript = (runId: string) => join(server().config.blobDir, "transcripts", `${runId}.jsonl`)
  const payload = (deliveryId: string) => join(server().config.blobDir, "webhook-payloads", `${deliveryId}.json`)

  it("lets team admins set the team's retention within the server's ceilings, audited", async () => {
    const { tokens } = await makeTeam(server(), `retention-settings-${kind}`)
    const path = "/api/v1/agent/team/retention"
    const read = await call(server(), "GET", path, { token: tokens.viewer })
    expect(read.status).toBe(200)
    expect(read.body).toEqual({ team: {}, server: { run_days: 30, webhook_delivery_days: 30 }, effective: { run_days: 30, webhook_delivery_days: 30 } })
    expect((await call(server(), "PUT", path, { token: tokens.member, body: { run_days: 7 } })).status).toBe(403)
    const above = await call(server(), "PUT", path, { token: tokens.admin, body: { run_days: 31 } })
    expect(above.status).toBe(400)
    expect(above.body.error).toContain("run_days")
    expect((await call(server(), "PUT", path, { token: tokens.admin, body: { run_days: 0 } })).status).toBe(400)
    const set = await call(server(), "PUT", path, { token: tokens.admin, body: { run_days: 7 } })
    expect(set.status).toBe(200)
    expect(set.body.effective).toEqual({ run_days: 7, webhook_delivery_days: 30 })
    const audit = await call(server(), "GET", "/api/v1/agent/audit-log?action=team.retention.set", { token: tokens.admin })
    expect(audit.body.entries.map((e: { outcome: string }) => e.outcome).sort()).toEqual(["denied", "failed", "succeeded"])
  })

  it("removes ended runs past the team's retention with their transcripts; live and newer runs stay", async () => {
    const { tokens } = await makeTeam(server(), `retention-runs-${kind}`)
    const admin = tokens.admin
    expect((await call(server(), "PUT", "/api/v1/agent/team/retention", { token: admin, body: { run_days: 7 } })).status).toBe(200)
    const marker = `retained-${kind}-${Date.now()}`
    const create = async (prompt: string) => {
      const reply = await call(server(), "POST", "/api/v1/agent/runs", { token: admin, body: { prompt, title: `${marker} run` } })
      expect(reply.status).toBe(200)
      return reply.body.run_id as string
    }
    const old = await create("hello")
    const recent = await create("hello")
    const live = await create("@sleep 600000")
    for (const id of [old, recent]) expect((await waitForRun(server(), admin, id)).state).toBe("SUCCEEDED")
    expect(existsSync(transcript(old))).toBe(true)
    await eventually(async () => (await call(server(), "GET", `/api/v1/agent/runs/${live}`, { token: admin })).body.state === "INPROGRESS")

    await onDatabase(server(), (sql) => sql`UPDATE runs SET updated_at = updated_at - ${8 * DAY} WHERE run_id IN (${old}, ${live})`)
    await eventually(async () => (await call(server(), "GET", `/api/v1/agent/runs/${old}`, { token: admin })).status === 404)
    // Its blobs go just after its rows (queued in the same transaction, removed after it).
    await eventually(async () => !existsSync(transcript(old)))
    for (const id of [recent, live]) expect((await call(server(), "GET", `/api/v1/agent/runs/${id}`, { token: admin })).status).toBe(200)
    expect(existsSync(transcript(recent))).toBe(true)
    expect((await call(server(), "GET", `/api/v1/agent/runs/${old}/timeline`, { token: admin })).status).toBe(404)
    const found = await call(server(), "GET", `/api/v1/agent/runs?q=${encodeURIComponent(marker)}&limit=10`, { token: admin })
    expect(found.body.runs.map((r: { run_id: string }) => r.run_id).sort()).toEqual([recent, live].sort())
    await call(server(), "POST", `/api/v1/agent/runs/${live}/cancel`, { token: admin })
  }, 90_000)

  it("removes webhook deliveries past the team's retention with their payload blobs", async () => {
    const { tokens } = await makeTeam(server(), `retention-deliveries-${kind}`)
    const api = (method: string, path: string, body?: unknown) =>
      call(server(), method, `/api/v1${path}`, { token: tokens.admin, ...(body === undefined ? {} : { body }) })
    expect((await api("PUT", "/agent/team/retention", { webhook_delivery_days: 3 })).status).toBe(200)
    const hook = (await api("POST", "/agent/webhooks", { name: "retained hook" })).body
    const automation = await api("POST", "/agent/automations", {
      name: "on delivery",
      prompt: "hello",
      trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [hook.uid] } }
    })
    expect(automation.status).toBe(201)
    const deliver = async (n: number) => {
      const reply = await postRaw(server(), `/webhooks/w/${hook.uid}`, JSON.stringify({ n }), { authorization: `Bearer ${hook.secret}` })
      expect(reply.status).toBe(202)
      return reply.body.delivery_id as string
    }
    const old = await deliver(1)
    const fresh = await deliver(2)
    expect(existsSync(payload(old))).toBe(true)
    await onDatabase(server(), (sql) =>
      Effect.zipRight(
        sql`UPDATE deliveries SET received_at = received_at - ${4 * DAY} WHERE delivery_id = ${old}`,
        sql`UPDATE webhook_payloads SET received_at = received_at - ${4 * DAY} WHERE delivery_id = ${old}`
      ))
    await eventually(async () => (await api("GET", `/agent/webhooks/${hook.uid}/deliveries/${old}`)).status === 404)
    await eventually(async () => !existsSync(payload(old)))
    expect((await api("GET", `/agent/webhooks/${hook.uid}/deliveries/${fresh}`)).status).toBe(200)
    expect(existsSync(payload(fresh))).toBe(true)
  }, 60_000)
})

describe.each<DatabaseKind>(["sqlite", "postgres"])("deleting a run (%s)", (kind) => {
  const server = suiteServer(kind, {}, { concurrency: 2 })

  it("lets its creator and the team's admins delete an ended run for good; others 403, a live run 409; its children stay", async () => {
    const { tokens } = await makeTeam(server(), `deletion-${kind}`)
    const api = (token: string, method: string, path: string, body?: unknown) =>
      call(server(), method, `/api/v1${path}`, { token, ...(body === undefined ? {} : { body }) })
    const marker = `deleted-${kind}-${Date.now()}`
    const create = async (token: string, body: Record<string, unknown>) => {
      const reply = await api(token, "POST", "/agent/runs", { title: `${marker} run`, team: true, ...body })
      expect(reply.status).toBe(200)
      return reply.body.run_id as string
    }
    const mine = await create(tokens.member, { prompt: "hello" })
    const child = await create(tokens.member, { prompt: "hello", parent_run_id: mine })
    const theirs = await create(tokens.admin, { prompt: "hello" })
    const live = await create(tokens.member, { prompt: "@sleep 600000" })
    for (const id of [mine, child, theirs]) expect((await waitForRun(server(), tokens.admin, id)).state).toBe("SUCCEEDED")
    const transcriptFile = join(server().config.blobDir, "transcripts", `${mine}.jsonl`)
    expect(existsSync(transcriptFile)).toBe(true)

    // Another member, a viewer: 403; a live run: 409 naming its state.
    expect((await api(tokens.member, "DELETE", `/agent/runs/${theirs}`)).status).toBe(403)
    expect((await api(tokens.viewer, "DELETE", `/agent/runs/${mine}`)).status).toBe(403)
    await eventually(async () => (await api(tokens.member, "GET", `/agent/runs/${live}`)).body.state === "INPROGRESS")
    const running = await api(tokens.member, "DELETE", `/agent/runs/${live}`)
    expect(running.status).toBe(409)
    expect(running.body.error).toContain("INPROGRESS")
    // A child under a live parent: the parent's budget counts it.
    const underLive = await create(tokens.member, { prompt: "hello", parent_run_id: live })
    expect((await waitForRun(server(), tokens.admin, underLive)).state).toBe("SUCCEEDED")
    const counted = await api(tokens.member, "DELETE", `/agent/runs/${underLive}`)
    expect(counted.status).toBe(409)
    expect(counted.body.error).toContain("parent_run_id")

    const deleted = await api(tokens.member, "DELETE", `/agent/runs/${mine}`)
    expect(deleted.status).toBe(200)
    expect(deleted.body).toEqual({ success: true })
    for (const path of ["", "/timeline", "/conversation", "/transcript", "/events"]) {
      expect((await api(tokens.member, "GET", `/agent/runs/${mine}${path}`)).status).toBe(404)
    }
    expect(existsSync(transcriptFile)).toBe(false)
    expect((await api(tokens.member, "DELETE", `/agent/runs/${mine}`)).status).toBe(404)
    // The team's admin deletes another's run.
    expect((await api(tokens.admin, "DELETE", `/agent/runs/${theirs}`)).status).toBe(200)
    const found = await api(tokens.admin, "GET", `/agent/runs?q=${encodeURIComponent(marker)}&limit=10`)
    expect(found.body.runs.map((r: { run_id: string }) => r.run_id).sort()).toEqual([child, live, underLive].sort())
    const kept = await api(tokens.member, "GET", `/agent/runs/${child}`)
    expect(kept.status).toBe(200)
    expect(kept.body.parent_run_id).toBe(mine)
    const audit = await api(tokens.admin, "GET", "/agent/audit-log?action=run.delete")
    expect(audit.body.entries.map((e: { outcome: string }) => e.outcome).sort())
      .toEqual(["denied", "denied", "denied", "failed", "failed", "succeeded", "succeeded"])
    // Cancelled while its agent ran: not for two minutes (it may still be writing its transcript).
    expect((await api(tokens.member, "POST", `/agent/runs/${live}/cancel`)).status).toBe(200)
    await waitForRun(server(), tokens.member, live)
    const settling = await api(tokens.member, "DELETE", `/agent/runs/${live}`)
    expect(settling.status).toBe(409)
    expect(settling.body).toMatchObject({ retryable: true })
    expect(settling.body.error).toContain("moments ago")
  }, 90_000)
})

describe.each<DatabaseKind>(["sqlite", "postgres"])("erasing a principal (%s)", (kind) => {
  const server = suiteServer(kind, {}, { concurrency: 2 })

  it("deletes the runs a principal created (those under another's kept run anonymized) or keeps them anonymized; refused while one is live", async () => {
    const { tokens, principals } = await makeTeam(server(), `erasure-${kind}`)
    const api = (token: string, method: string, path: string, body?: unknown) =>
      call(server(), method, `/api/v1${path}`, { token, ...(body === undefined ? {} : { body }) })
    const instance = server().adminToken
    const create = async (token: string, body: Record<string, unknown>) => {
      const reply = await api(token, "POST", "/agent/runs", { team: true, ...body })
      expect(reply.status).toBe(200)
      return reply.body.run_id as string
    }
    const own = await create(tokens.member, { prompt: "hello" })
    const ownChild = await create(tokens.member, { prompt: "hello", parent_run_id: own })
    const others = await create(tokens.admin, { prompt: "hello" })
    const underOthers = await create(tokens.member, { prompt: "hello", parent_run_id: others })
    for (const id of [own, ownChild, others, underOthers]) expect((await waitForRun(server(), tokens.admin, id)).state).toBe("SUCCEEDED")
    // Waiting for a worker that never comes: live, but no agent ever ran it.
    const live = await create(tokens.member, { prompt: "hello", config: { worker_host: "absent-host" } })
    expect((await api(tokens.admin, "GET", `/agent/runs/${live}`)).body.state).toBe("QUEUED")

    const erase = (token: string, uid: string, runs: string) => api(token, "POST", `/admin/principals/${uid}/erase`, { runs })
    expect((await erase(tokens.admin, principals.member, "delete")).status).toBe(403)
    const refused = await erase(instance, principals.member, "delete")
    expect(refused.status).toBe(409)
    expect(refused.body.error).toContain("runs")
    expect((await api(tokens.admin, "GET", `/agent/runs/${own}`)).status).toBe(200)
    expect((await erase(instance, principals.member, "forget")).status).toBe(400)

    expect((await api(tokens.admin, "POST", `/agent/runs/${live}/cancel`)).status).toBe(200)
    await waitForRun(server(), tokens.admin, live)
    const erased = await erase(instance, principals.member, "delete")
    expect(erased.status).toBe(200)
    expect(erased.body).toEqual({ principal_uid: principals.member, runs_deleted: 3, runs_anonymized: 1 })
    for (const id of [own, ownChild, live]) expect((await api(tokens.admin, "GET", `/agent/runs/${id}`)).status).toBe(404)
    expect(existsSync(join(server().config.blobDir, "transcripts", `${own}.jsonl`))).toBe(false)
    const kept = await api(tokens.admin, "GET", `/agent/runs/${underOthers}`)
    expect(kept.body.creator).toMatchObject({ uid: principals.member, display_name: "erased principal" })
    expect(kept.body.executor).toMatchObject({ uid: principals.member, display_name: "erased principal" })
    expect((await api(instance, "GET", `/admin/principals/${principals.member}`)).status).toBe(404)
    expect((await api(tokens.member, "GET", "/agent/me")).status).toBe(401)
    // Again: nothing left to do, and harmless.
    expect((await erase(instance, principals.member, "delete")).body).toMatchObject({ runs_deleted: 0 })

    const anonymized = await erase(instance, principals.admin, "anonymize")
    expect(anonymized.body).toEqual({ principal_uid: principals.admin, runs_deleted: 0, runs_anonymized: 1 })
    const theirs = await api(tokens.viewer, "GET", `/agent/runs/${others}`)
    expect(theirs.body.creator).toMatchObject({ uid: principals.admin, display_name: "erased principal" })
    const audit = await api(instance, "GET", "/admin/audit-log?action=principal.erase")
    expect(audit.body.entries.map((e: { outcome: string }) => e.outcome).sort()).toEqual(["denied", "failed", "succeeded", "succeeded", "succeeded"])
  }, 90_000)
})
