/**
 * The bundled server in-process on a real loopback port, on SQLite and on PostgreSQL: the service
 * routes, authentication and the admin API, runs through HTTP, error bodies and headers, signed
 * transcript downloads and the event stream.
 */
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { BlobKeys, BlobStore } from "@agent-runs/core"
import { Effect } from "effect"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import type { startServer} from "./harness.js";
import { call, type DatabaseKind, makeTeam, suiteServer } from "./harness.js"

const PROBLEM = "application/problem+json"

const started = (kind: DatabaseKind, overrides?: Parameters<typeof startServer>[1]) => suiteServer(kind, overrides)

/** Reads a stream until `done` says it has seen enough (or 5 s pass), then aborts it; returns the text. */
const readUntil = async (
  response: Response,
  abort: AbortController,
  done: (text: string) => boolean
): Promise<string> => {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  const deadline = Date.now() + 5000
  while (!done(text) && Date.now() < deadline) {
    const chunk = await Promise.race([
      reader.read(),
      new Promise<{ done: true; value: undefined }>((resolve) => setTimeout(() => resolve({ done: true, value: undefined }), 5000))
    ])
    if (chunk.done) break
    text += decoder.decode(chunk.value, { stream: true })
  }
  abort.abort()
  return text
}

describe.each(["sqlite", "postgres"] as const)("bundled server (%s)", (kind) => {
  const server = started(kind)

  it("serves health, readiness, metrics, the OpenAPI document and the docs page", async () => {
    expect(await call(server(), "GET", "/healthz")).toMatchObject({ status: 200, body: { status: "ok" } })
    expect(await call(server(), "GET", "/readyz")).toMatchObject({ status: 200, body: { status: "ready" } })
    const openapi = await call(server(), "GET", "/openapi.json")
    expect(openapi.status).toBe(200)
    expect(openapi.body.openapi).toMatch(/^3\.1/)
    expect(Object.keys(openapi.body.paths)).toContain("/api/v1/agent/runs")
    const docs = await call(server(), "GET", "/docs")
    expect(docs.status).toBe(200)
    expect(docs.headers.get("content-type")).toContain("text/html")
    const metrics = await call(server(), "GET", "/metrics")
    expect(metrics.status).toBe(200)
    expect(metrics.body).toContain("# TYPE agent_runs_http_requests_total counter")
    expect(metrics.body).toMatch(/agent_runs_http_requests_total\{method="GET",status="200"\} \d+/)
  })

  it("answers 401 problems without a valid token, and unknown paths with a 404 problem", async () => {
    for (const token of [undefined, "ar_not-a-token", ""]) {
      const reply = await call(server(), "GET", "/api/v1/agent/runs", token === undefined ? {} : { token })
      expect(reply.status).toBe(401)
      expect(reply.headers.get("content-type")).toBe(PROBLEM)
      expect(reply.body).toMatchObject({ status: 401, error_code: "authentication_required", retryable: false })
      expect(reply.headers.get("x-should-retry")).toBe("false")
    }
    const unknown = await call(server(), "GET", "/api/v1/agent/nothing-here", { token: server().adminToken })
    expect(unknown.status).toBe(404)
    expect(unknown.body).toMatchObject({ error_code: "resource_not_found" })
    // A missing id is a 400 naming it (docs/reference/errors.md).
    for (const [path, field] of [
      ["/api/v1/agent/runs//timeline", "runId"],
      ["/api/v1/agent/schedules//pause", "scheduleId"],
      ["/api/v1/agent/conversations/", "conversation_id"]
    ] as const) {
      const missing = await call(server(), path.endsWith("pause") ? "POST" : "GET", path, { token: server().adminToken })
      expect(missing.status, path).toBe(400)
      expect(missing.body, path).toMatchObject({ error_code: "invalid_request" })
      expect(missing.body.error, path).toMatch(new RegExp(`^${field}: `))
    }
  })

  it("creates teams, principals and tokens through the admin API; revocation is immediate", async () => {
    const team = await makeTeam(server(), "Acme")
    const created = await call(server(), "POST", "/api/v1/agent/runs", {
      token: team.tokens.member,
      body: { prompt: "hello" }
    })
    expect(created.status).toBe(200)
    // Non-admins cannot use the admin API.
    const refused = await call(server(), "GET", "/api/v1/admin/teams", { token: team.tokens.admin })
    expect(refused.status).toBe(403)
    expect(refused.body.error_code).toBe("not_authorized")
    // Revoke: find the token id by creating one we control.
    const principal = await call(server(), "POST", "/api/v1/admin/principals", {
      token: server().adminToken,
      body: { type: "service_account", display_name: "bot", memberships: [{ team_uid: team.uid, role: "member" }] }
    })
    const token = await call(server(), "POST", `/api/v1/admin/principals/${principal.body.uid}/tokens`, {
      token: server().adminToken,
      body: {}
    })
    expect(token.body.token).toMatch(/^ar_/)
    expect((await call(server(), "GET", "/api/v1/agent/runs", { token: token.body.token })).status).toBe(200)
    const revoked = await call(server(), "DELETE", `/api/v1/admin/tokens/${token.body.token_id}`, {
      token: server().adminToken
    })
    expect(revoked).toMatchObject({ status: 200, body: { success: true } })
    expect((await call(server(), "GET", "/api/v1/agent/runs", { token: token.body.token })).status).toBe(401)
  })

  it("selects the team with X-Team-Uid (or its alias); a team the caller is not in is a 403", async () => {
    const a = await makeTeam(server(), "Team A")
    const b = await makeTeam(server(), "Team B")
    for (const header of ["x-team-uid", "x-warp-team-uid"]) {
      const own = await call(server(), "GET", "/api/v1/agent/runs", {
        token: a.tokens.member,
        headers: { [header]: a.uid }
      })
      expect(own.status).toBe(200)
      const other = await call(server(), "GET", "/api/v1/agent/runs", {
        token: a.tokens.member,
        headers: { [header]: b.uid }
      })
      expect(other.status).toBe(403)
      expect(other.body.error_code).toBe("not_authorized")
    }
    const malformed = await call(server(), "GET", "/api/v1/agent/runs", {
      token: a.tokens.member,
      headers: { "x-team-uid": "nope" }
    })
    expect(malformed.status).toBe(403)
  })

  it("runs a run's lifecycle through HTTP: create, list, get, timeline, cancel", async () => {
    const team = await makeTeam(server(), "Lifecycle")
    const member = team.tokens.member
    const created = await call(server(), "POST", "/api/v1/agent/runs", {
      token: member,
      body: { prompt: "Fix the bug\nin the parser", config: { model_id: "m1" }, metadata: { ticket: "T-1" } }
    })
    expect(created.status).toBe(200)
    expect(created.body).toMatchObject({ state: "QUEUED", at_capacity: false })
    expect(created.body.task_id).toBe(created.body.run_id)
    const runId: string = created.body.run_id
    const alias = await call(server(), "POST", "/api/v1/agent/run", { token: member, body: { prompt: "old route" } })
    expect(alias.status).toBe(200)

    const list = await call(server(), "GET", "/api/v1/agent/runs?limit=1&state=QUEUED&state=FAILED", { token: member })
    expect(list.status).toBe(200)
    expect(list.body.runs).toHaveLength(1)
    expect(list.body.page_info.has_next_page).toBe(true)
    const next = await call(
      server(),
      "GET",
      `/api/v1/agent/runs?limit=1&state=QUEUED&state=FAILED&cursor=${encodeURIComponent(list.body.page_info.next_cursor)}`,
      { token: member }
    )
    expect(next.body.runs).toHaveLength(1)
    expect(new Set([list.body.runs[0].run_id, next.body.runs[0].run_id])).toEqual(new Set([runId, alias.body.run_id]))
    const filtered = await call(server(), "GET", "/api/v1/agent/runs?metadata[ticket]=T-1", { token: member })
    expect(filtered.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([runId])

    const item = await call(server(), "GET", `/api/v1/agent/runs/${runId}`, { token: member })
    expect(item.body).toMatchObject({ run_id: runId, title: "Fix the bug", prompt: "Fix the bug\nin the parser" })
    expect(item.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const timeline = await call(server(), "GET", `/api/v1/agent/runs/${runId}/timeline`, { token: member })
    expect(timeline.body.events.map((e: { event_type: string }) => e.event_type)).toEqual([
      "run_created",
      "run_pending",
      "run_queued"
    ])

    const cancelled = await call(server(), "POST", `/api/v1/agent/runs/${runId}/cancel`, { token: member })
    expect(cancelled).toMatchObject({ status: 200, body: runId })
    const again = await call(server(), "POST", `/api/v1/agent/runs/${runId}/cancel`, { token: member })
    expect(again.status).toBe(400)
    expect(again.body).toMatchObject({ error_code: "invalid_request", retryable: false })
    expect((await call(server(), "GET", `/api/v1/agent/runs/${runId}`, { token: member })).body.state).toBe("CANCELLED")
  })

  it("counts runs by state with the run list's filters and access rules", async () => {
    const team = await makeTeam(server(), "Counts")
    const member = team.tokens.member
    const run = async (body: Record<string, unknown>) =>
      (await call(server(), "POST", "/api/v1/agent/runs", { token: member, body })).body.run_id as string
    const kept = await run({ prompt: "Deploy the web app", team: true, metadata: { ticket: "T-1" } })
    await run({ prompt: "Deploy the api", team: true })
    const cancelled = await run({ prompt: "Review the docs", metadata: { ticket: "T-1" } })
    expect((await call(server(), "POST", `/api/v1/agent/runs/${cancelled}/cancel`, { token: member })).status).toBe(200)
    const counts = (query: string, token = member) => call(server(), "GET", `/api/v1/agent/run-counts${query}`, { token })

    const all = await counts("")
    expect(all.status).toBe(200)
    expect(all.body).toEqual({
      counts: { QUEUED: 2, PENDING: 0, CLAIMED: 0, INPROGRESS: 0, SUCCEEDED: 0, FAILED: 0, BLOCKED: 0, ERROR: 0, CANCELLED: 1 },
      total: 3
    })
    // The list's filters (paging and sort ignored), its totals match the list's.
    const filtered = await counts("?metadata[ticket]=T-1&limit=1&sort_by=title")
    expect(filtered.body).toMatchObject({ counts: { QUEUED: 1, CANCELLED: 1 }, total: 2 })
    expect((await counts("?state=QUEUED&state=FAILED&q=deploy")).body).toMatchObject({ counts: { QUEUED: 2 }, total: 2 })
    const listed = await call(server(), "GET", "/api/v1/agent/runs?state=QUEUED&q=deploy", { token: member })
    expect(listed.body.runs.map((r: { run_id: string }) => r.run_id)).toContain(kept)
    expect(listed.body.runs).toHaveLength(2)
    // Another member does not count the User-scoped run; another team counts none.
    const other = await call(server(), "POST", "/api/v1/admin/principals", {
      token: server().adminToken,
      body: { type: "user", display_name: "Counts other", memberships: [{ team_uid: team.uid, role: "member" }] }
    })
    const otherToken = await call(server(), "POST", `/api/v1/admin/principals/${other.body.uid}/tokens`, {
      token: server().adminToken,
      body: { name: "test" }
    })
    expect((await counts("", otherToken.body.token)).body).toMatchObject({ counts: { QUEUED: 2, CANCELLED: 0 }, total: 2 })
    expect((await counts("", (await makeTeam(server(), "Counts elsewhere")).tokens.admin)).body.total).toBe(0)
    // Refusals as the list's: a bad filter is a 400 naming it, metadata needs the team feature.
    const badState = await counts("?state=RUNNING")
    expect(badState.status).toBe(400)
    expect(badState.body.error).toMatch(/^state/)
    expect((await call(server(), "GET", "/api/v1/agent/run-counts")).status).toBe(401)
    const off = await call(server(), "PATCH", `/api/v1/admin/teams/${team.uid}`, {
      token: server().adminToken,
      body: { features: { metadata_filtering: false } }
    })
    expect(off.status).toBe(200)
    const refused = await counts("?metadata[ticket]=T-1")
    expect(refused.status).toBe(403)
    expect(refused.body.error_code).toBe("feature_not_available")
  })

  it("rejects bad input with a 400 naming the field and stores nothing", async () => {
    const team = await makeTeam(server(), "Validation")
    const member = team.tokens.member
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{}, "prompt"],
      [{ prompt: "" }, "prompt"],
      [{ prompt: "x", config: { model_id: 3 } }, "config.model_id"],
      [{ prompt: "x", metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, "v"])) }, "metadata"],
      [{ prompt: "x", parent_run_id: "nope" }, "parent_run_id"]
    ]
    for (const [body, field] of cases) {
      const reply = await call(server(), "POST", "/api/v1/agent/runs", { token: member, body })
      expect(reply.status, JSON.stringify(body)).toBe(400)
      expect(reply.headers.get("content-type")).toBe(PROBLEM)
      expect(reply.body.error_code).toBe("invalid_request")
      expect(reply.body.error.startsWith(`${field}`)).toBe(true)
    }
    const notJson = await call(server(), "POST", "/api/v1/agent/runs", { token: member, body: "{not json" })
    expect(notJson.status).toBe(400)
    expect(notJson.body.error).toMatch(/^body/)
    const badId = await call(server(), "GET", "/api/v1/agent/runs/not-a-run-id", { token: member })
    expect(badId.status).toBe(400)
    expect(badId.body.error).toMatch(/^runId/)
    const badQuery = await call(server(), "GET", "/api/v1/agent/runs?limit=501", { token: member })
    expect(badQuery.status).toBe(400)
    expect(badQuery.body.error).toMatch(/^limit/)
    const tooLarge = await call(server(), "POST", "/api/v1/agent/runs", {
      token: member,
      body: { prompt: "x".repeat(2 * 1024 * 1024) }
    })
    expect(tooLarge.status).toBe(413)
    expect(tooLarge.body.error_code).toBe("payload_too_large")
    const list = await call(server(), "GET", "/api/v1/agent/runs", { token: team.tokens.admin })
    expect(list.body.runs).toEqual([])
  })

  it("validates schedules, filters, environments and automations, and a rejected change leaves the stored one as it was", async () => {
    const team = await makeTeam(server(), "Inputs")
    const member = team.tokens.member
    const schedule = { name: "nightly", cron_schedule: "0 3 * * *", prompt: "p", enabled: true }
    const badCases: ReadonlyArray<readonly [string, string, unknown, string]> = [
      ["POST", "/api/v1/agent/schedules", { ...schedule, cron_schedule: "61 * * * *" }, "cron_schedule"],
      ["POST", "/api/v1/agent/schedules", { ...schedule, cron_schedule: "0 0 30 2 *" }, "cron_schedule"],
      ["POST", "/api/v1/agent/schedules", { ...schedule, timezone: "Mars/Olympus" }, "timezone"],
      ["POST", "/api/v1/agent/schedules", { ...schedule, enabled: "yes" }, "enabled"],
      ["POST", "/api/v1/agent/environments", { config: { name: "e", failure_session_retention_minutes: -1 } },
        "config.failure_session_retention_minutes"],
      ["POST", "/api/v1/agent/environments", { config: { name: "e", github_repos: [{ owner: "a b", repo: "r" }] } },
        "config.github_repos[0].owner"]
    ]
    for (const [method, path, body, field] of badCases) {
      const reply = await call(server(), method, path, { token: member, body })
      expect(reply.status, `${path} ${JSON.stringify(body)}`).toBe(400)
      expect(reply.body.error.startsWith(field), reply.body.error).toBe(true)
    }
    const tooManyFilters = Array.from({ length: 6 }, (_, i) => `metadata[k${i}]=v`).join("&")
    const filters = await call(server(), "GET", `/api/v1/agent/runs?${tooManyFilters}`, { token: member })
    expect(filters.status).toBe(400)
    expect(filters.body.error).toMatch(/^metadata/)
    const badState = await call(server(), "GET", "/api/v1/agent/runs?state=RUNNING", { token: member })
    expect(badState.status).toBe(400)
    expect(badState.body.error).toMatch(/^state/)

    const created = await call(server(), "POST", "/api/v1/agent/schedules", { token: member, body: schedule })
    expect(created.status).toBe(201)
    const rejected = await call(server(), "PUT", `/api/v1/agent/schedules/${created.body.id}`, {
      token: member,
      body: { ...schedule, name: "renamed", cron_schedule: "not cron" }
    })
    expect(rejected.status).toBe(400)
    const missingField = await call(server(), "PUT", `/api/v1/agent/schedules/${created.body.id}`, {
      token: member,
      body: { name: "renamed", cron_schedule: "0 4 * * *", prompt: "p" }
    })
    expect(missingField.status).toBe(400)
    expect(missingField.body.error).toMatch(/^enabled/)
    const stored = await call(server(), "GET", `/api/v1/agent/schedules/${created.body.id}`, { token: member })
    expect(stored.body).toMatchObject({ name: "nightly", cron_schedule: "0 3 * * *", enabled: true })
    expect(stored.body.updated_at).toBe(created.body.updated_at)

    const hook = await call(server(), "POST", "/api/v1/agent/webhooks", { token: team.tokens.admin, body: { name: "h" } })
    const badFilter = await call(server(), "POST", "/api/v1/agent/automations", {
      token: team.tokens.admin,
      body: {
        name: "a",
        prompt: "p",
        trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [hook.body.uid], payload: { action: { in: 3 } } } }
      }
    })
    expect(badFilter.status).toBe(400)
    expect(badFilter.body.error).toMatch(/^trigger\.filter\.payload\.action/)
    const automations = await call(server(), "GET", "/api/v1/agent/automations", { token: team.tokens.admin })
    expect(automations.body.automations).toEqual([])
  })

  it("cancelling a PENDING run is a 409 retryable in its body, final for clients (x-should-retry: false)", async () => {
    const team = await makeTeam(server(), "Capacity")
    const patched = await call(server(), "PATCH", `/api/v1/admin/teams/${team.uid}`, {
      token: server().adminToken,
      body: { max_concurrent_runs: 1 }
    })
    expect(patched.body.max_concurrent_runs).toBe(1)
    await call(server(), "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt: "first" } })
    const waiting = await call(server(), "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt: "second" } })
    expect(waiting.body).toMatchObject({ state: "PENDING", at_capacity: true })
    const conflict = await call(server(), "POST", `/api/v1/agent/runs/${waiting.body.run_id}/cancel`, {
      token: team.tokens.member
    })
    expect(conflict.status).toBe(409)
    expect(conflict.body).toMatchObject({ error_code: "conflict", retryable: true })
    expect(conflict.headers.get("x-should-retry")).toBe("false")
  })

  it("redirects transcript requests to a signed URL that needs no token and refuses altered ones", async () => {
    const team = await makeTeam(server(), "Transcripts")
    const created = await call(server(), "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt: "x" } })
    const runId: string = created.body.run_id
    const missing = await call(server(), "GET", `/api/v1/agent/runs/${runId}/transcript`, { token: team.tokens.member })
    expect(missing.status).toBe(404)
    const bytes = new TextEncoder().encode('{"type":"message","role":"assistant","text":"hi"}\nnot json\n')
    await Effect.runPromise(
      Effect.flatMap(BlobStore.BlobStore, (blobs) => blobs.put(BlobKeys.transcriptKey(runId), bytes)).pipe(
        Effect.provide(FileBlobStore.layer({ root: join(server().dataDir, "blobs") }))
      )
    )
    const redirect = await call(server(), "GET", `/api/v1/agent/runs/${runId}/transcript`, { token: team.tokens.member })
    expect(redirect.status).toBe(302)
    const location = redirect.headers.get("location")!
    expect(location.startsWith(`${server().url}/api/v1/downloads/transcripts/${runId}?`)).toBe(true)
    const download = await fetch(location)
    expect(download.status).toBe(200)
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes)
    const altered = location.replace(/signature=([0-9a-f])/, (_, c: string) => `signature=${c === "0" ? "1" : "0"}`)
    expect((await fetch(altered)).status).toBe(403)
    const otherRun = location.replace(runId, runId.slice(0, -1) + (runId.endsWith("0") ? "1" : "0"))
    expect((await fetch(otherRun)).status).toBe(403)
    const later = location.replace(/expires=(\d+)/, (_, e: string) => `expires=${Number(e) + 60}`)
    expect((await fetch(later)).status).toBe(403)

    // The same link as JSON, with when it expires; fetched without a token, it gives the transcript.
    const link = await call(server(), "GET", `/api/v1/agent/runs/${runId}/transcript-link`, { token: team.tokens.member })
    expect(link.status).toBe(200)
    expect(Object.keys(link.body).sort()).toEqual(["expires_at", "url"])
    expect(link.body.url.startsWith(`${server().url}/api/v1/downloads/transcripts/${runId}?`)).toBe(true)
    const expires = Number(new URL(link.body.url).searchParams.get("expires"))
    expect(link.body.expires_at).toBe(new Date(expires * 1000).toISOString())
    expect(Date.parse(link.body.expires_at) - Date.now()).toBeGreaterThan(14 * 60 * 1000)
    const linked = await fetch(link.body.url)
    expect(linked.status).toBe(200)
    expect(new Uint8Array(await linked.arrayBuffer())).toEqual(bytes)
    // A run of another team, an unknown run, a run without a transcript: 404, as the redirect answers.
    const stranger = (await makeTeam(server(), "Transcript strangers")).tokens.admin
    const unknown = runId.slice(0, -1) + (runId.endsWith("0") ? "1" : "0")
    for (const [id, token] of [[runId, stranger], [unknown, team.tokens.member]] as const) {
      const hidden = await call(server(), "GET", `/api/v1/agent/runs/${id}/transcript-link`, { token })
      expect(hidden.status).toBe(404)
      expect(hidden.body.error_code).toBe("resource_not_found")
    }
    const bare = await call(server(), "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt: "y" } })
    const none = await call(server(), "GET", `/api/v1/agent/runs/${bare.body.run_id}/transcript-link`, { token: team.tokens.member })
    expect(none.status).toBe(404)
  })

  it("streams a run's timeline as Server-Sent Events, resumes after Last-Event-ID, and ends with the run", async () => {
    const team = await makeTeam(server(), "Events")
    const created = await call(server(), "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt: "x" } })
    const runId: string = created.body.run_id
    const headers = { authorization: `Bearer ${team.tokens.member}` }
    const first = new AbortController()
    const response = await fetch(`${server().url}/api/v1/agent/runs/${runId}/events`, { headers, signal: first.signal })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    const events = await readUntil(response, first, (text) => text.includes("run_queued"))
    expect(events).toContain("id: 1-0\nevent: timeline\n")
    expect(events).toContain('"event_type":"run_created"')
    // A cancel recorded while a client listens arrives on its stream.
    const second = new AbortController()
    const live = await fetch(`${server().url}/api/v1/agent/runs/${runId}/events`, {
      headers: { ...headers, "last-event-id": "3" },
      signal: second.signal
    })
    const cancel = call(server(), "POST", `/api/v1/agent/runs/${runId}/cancel`, { token: team.tokens.member })
    const resumed = await readUntil(live, second, (text) => text.includes("event: end"))
    await cancel
    expect(resumed).not.toContain("run_created")
    expect(resumed).toMatch(/id: 4-\d+\nevent: timeline\n/)
    expect(resumed).toContain('"event_type":"run_cancelled"')
    // The run's end ends the stream: `end` last, then the connection closes.
    expect(resumed.trimEnd().split("\n\n").at(-1)).toBe(`event: end\ndata: {"run_id":"${runId}","state":"CANCELLED"}`)
    const hidden = await call(server(), "GET", `/api/v1/agent/runs/${runId}/events`, {
      token: (await makeTeam(server(), "Other")).tokens.admin
    })
    expect(hidden.status).toBe(404)
  })
})

describe("bundled server download expiry", () => {
  const server = started("sqlite", { downloadTtlSeconds: 1 })

  it("refuses a signed URL once it has expired", async () => {
    const team = await makeTeam(server(), "Expiry")
    const created = await call(server(), "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt: "x" } })
    const runId: string = created.body.run_id
    await Effect.runPromise(
      Effect.flatMap(BlobStore.BlobStore, (blobs) => blobs.put(BlobKeys.transcriptKey(runId), new Uint8Array([1]))).pipe(
        Effect.provide(FileBlobStore.layer({ root: join(server().dataDir, "blobs") }))
      )
    )
    const redirect = await call(server(), "GET", `/api/v1/agent/runs/${runId}/transcript`, { token: team.tokens.member })
    const location = redirect.headers.get("location")!
    expect((await fetch(location)).status).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 2100))
    const expired = await fetch(location)
    expect(expired.status).toBe(403)
    expect(((await expired.json()) as { error: string }).error).toMatch(/expired/)
  })
})
