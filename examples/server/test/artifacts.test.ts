/**
 * What runs leave behind, through the bundled server with the scripted agent running (issue 7
 * items 5 and 6), on SQLite and PostgreSQL: external references reported by the harness's
 * `artifact` line and through `POST /harness-support/report-artifact` with the run token, looked up
 * by `GET /agent/run-by-external-reference` across teams and scopes (a hidden run answers exactly
 * like no run); and a conversation read by its id across the executions of its run, with its raw
 * transcript.
 */
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import OzAPI from "oz-agent-sdk"
import { beforeAll, describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, suiteServer } from "./harness.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any
type Team = Awaited<ReturnType<typeof makeTeam>>

const started = (kind: DatabaseKind) => suiteServer(kind, {}, { concurrency: 4 })

const ended = (run: Json) => ["SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"].includes(run.state)

/** Every text block of a conversation, in order. */
const texts = (steps: ReadonlyArray<Json>): Array<string> =>
  steps.flatMap((step) => [
    ...step.messages.flatMap((m: Json) => m.content.filter((b: Json) => b.type === "text").map((b: Json) => b.text)),
    ...texts(step.steps)
  ])

/**
 * A harness that reports its prompt's first line as an EXTERNAL_REFERENCE through
 * `POST /harness-support/report-artifact` with its run token, then tries without a token, with a
 * wrong one and with invalid bodies; it says the statuses and its token, and succeeds.
 */
const reportingHarness = `
import { createInterface } from "node:readline"
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\\n")
for await (const line of createInterface({ input: process.stdin })) {
  const start = JSON.parse(line)
  const post = (token, body) => fetch(start.api.base_url + "/harness-support/report-artifact", {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: "Bearer " + token } : {}) },
    body: JSON.stringify(body)
  }).then(async (r) => r.status + (r.status === 200 ? " " + JSON.stringify(await r.json()) : ""))
  const reference = { artifact_type: "EXTERNAL_REFERENCE", data: { url: start.prompt.split("\\n")[0] } }
  const statuses = [
    await post(start.api.run_token, reference),
    await post(undefined, reference),
    await post("ar_not_a_run_token", reference),
    await post(start.api.run_token, { artifact_type: "EXTERNAL_REFERENCE", data: { url: "" } }),
    await post(start.api.run_token, { artifact_type: "NOT_A_TYPE", data: {} })
  ]
  for (const status of statuses) emit({ type: "message", role: "assistant", text: "status: " + status })
  emit({ type: "message", role: "assistant", text: "token: " + start.api.run_token })
  emit({ type: "result", outcome: "succeeded" })
  process.exit(0)
}
`

describe.each(["sqlite", "postgres"] as const)("artifacts and conversations (%s)", (kind) => {
  const server = started(kind)
  let a: Team
  let b: Team
  /** A second member of team A. */
  let aOther = ""

  beforeAll(async () => {
    a = await makeTeam(server(), "A")
    b = await makeTeam(server(), "B")
    const second = await call(server(), "POST", "/api/v1/admin/principals", {
      token: server().adminToken,
      body: { type: "user", display_name: "A member 2", memberships: [{ team_uid: a.uid, role: "member" }] }
    })
    const token = await call(server(), "POST", `/api/v1/admin/principals/${second.body.uid}/tokens`, {
      token: server().adminToken,
      body: {}
    })
    aOther = token.body.token
  }, 60_000)

  const api = (method: string, path: string, token: string, body?: unknown) =>
    call(server(), method, `/api/v1${path}`, { token, ...(body === undefined ? {} : { body }) })

  /** Polls the run until `done` holds (10 s at most). */
  const waitForRun = async (token: string, runId: string, done: (run: Json) => boolean = ended) => {
    const deadline = Date.now() + 10_000
    for (;;) {
      const run = (await api("GET", `/agent/runs/${runId}`, token)).body
      if (done(run) || Date.now() > deadline) return run
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  /** Runs a prompt to its end; returns the run. */
  const run = async (token: string, prompt: string, extra: Record<string, unknown> = {}) => {
    const created = await api("POST", "/agent/runs", token, { prompt, ...extra })
    expect(created.status, JSON.stringify(created.body)).toBe(200)
    const done = await waitForRun(token, created.body.run_id)
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED")
    return done
  }

  /** Reports `url` as an external reference from a run of the scripted agent. */
  const reporting = (token: string, url: string, extra: Record<string, unknown> = {}) =>
    run(token, `Link it\n@artifact EXTERNAL_REFERENCE ${url}`, extra)

  const lookup = (token: string, url: string) => api("GET", `/agent/run-by-external-reference?url=${encodeURIComponent(url)}`, token)

  /** The 404 answer without what differs per request. */
  const notFound = (reply: Json) => {
    expect(reply.status).toBe(404)
    const { trace_id: _, ...rest } = reply.body
    return rest
  }

  it("finds a Team-scope run by its external reference in its team only; elsewhere the 404 of a url nobody reported", async () => {
    const url = `https://tracker.example/issues/${kind}-team`
    const reported = await reporting(a.tokens.member, url, { team: true })
    expect(reported.artifacts).toEqual([
      { artifact_type: "EXTERNAL_REFERENCE", created_at: expect.any(String), data: { url } }
    ])
    for (const token of [a.tokens.member, aOther, a.tokens.admin, a.tokens.viewer]) {
      const found = await lookup(token, url)
      expect(found.status).toBe(200)
      expect(found.body.run_id).toBe(reported.run_id)
      expect(found.body.run).toMatchObject({ run_id: reported.run_id, state: "SUCCEEDED", artifacts: reported.artifacts })
    }
    const nobody = notFound(await lookup(a.tokens.member, "https://tracker.example/issues/nobody"))
    expect(nobody).toMatchObject({ error_code: "resource_not_found" })
    for (const token of [b.tokens.admin, b.tokens.member, b.tokens.viewer]) {
      expect(notFound(await lookup(token, url))).toEqual(nobody)
    }
    // The url is matched exactly.
    expect((await lookup(a.tokens.member, `${url}/`)).status).toBe(404)
  })

  it("a User-scope run's reference is found by its creator and the admins, not by other members or viewers", async () => {
    const url = `https://tracker.example/issues/${kind}-private`
    const reported = await reporting(a.tokens.member, url)
    expect(reported.scope.type).toBe("User")
    expect((await lookup(a.tokens.member, url)).body.run_id).toBe(reported.run_id)
    expect((await lookup(a.tokens.admin, url)).body.run_id).toBe(reported.run_id)
    const nobody = notFound(await lookup(a.tokens.member, "https://tracker.example/issues/nobody"))
    expect(notFound(await lookup(aOther, url))).toEqual(nobody)
    expect(notFound(await lookup(a.tokens.viewer, url))).toEqual(nobody)
    expect(notFound(await lookup(b.tokens.admin, url))).toEqual(nobody)
  })

  it("two teams reporting the same url each find their own run; within a team the newest visible report wins", async () => {
    const url = `https://tracker.example/issues/${kind}-shared`
    const ofA = await reporting(a.tokens.member, url, { team: true })
    const ofB = await reporting(b.tokens.member, url, { team: true })
    expect((await lookup(a.tokens.viewer, url)).body.run_id).toBe(ofA.run_id)
    expect((await lookup(b.tokens.viewer, url)).body.run_id).toBe(ofB.run_id)
    // A newer User-scope report in team A: its creator and the admin see it; another member still the older one.
    const mine = await reporting(aOther, url)
    expect((await lookup(aOther, url)).body.run_id).toBe(mine.run_id)
    expect((await lookup(a.tokens.admin, url)).body.run_id).toBe(mine.run_id)
    expect((await lookup(a.tokens.member, url)).body.run_id).toBe(ofA.run_id)
    expect((await lookup(b.tokens.member, url)).body.run_id).toBe(ofB.run_id)
  })

  it("the url is required and at most 2048 characters (400 naming url)", async () => {
    const token = a.tokens.member
    for (const path of ["/agent/run-by-external-reference", "/agent/run-by-external-reference?url=", "/agent/run-by-external-reference?uri=x"]) {
      const reply = await api("GET", path, token)
      expect(reply.status, path).toBe(400)
      expect(reply.body).toMatchObject({ error_code: "invalid_request" })
      expect(reply.body.error, path).toContain("url")
    }
    const base = "https://tracker.example/"
    const long = await lookup(token, base + "x".repeat(2049 - base.length))
    expect(long.status).toBe(400)
    expect(long.body.error).toContain("url")
    expect((await lookup(token, base + "x".repeat(2048 - base.length))).status).toBe(404)
    // Without a token: 401 before anything else.
    expect((await call(server(), "GET", "/api/v1/agent/run-by-external-reference")).status).toBe(401)
  })

  it("a 2048-character reference reported by the agent is found", async () => {
    const base = `https://tracker.example/${kind}/`
    const url = base + "y".repeat(2048 - base.length)
    const reported = await reporting(a.tokens.member, url)
    expect((await lookup(a.tokens.member, url)).body.run_id).toBe(reported.run_id)
  })

  it("POST /harness-support/report-artifact records an artifact with the run token only while the run runs", async () => {
    // Where sandbox users may read it (the data directory is the server's alone).
    const script = join(mkdtempSync(join(tmpdir(), "agent-runs-harness-")), "reporting-harness.mjs")
    writeFileSync(script, reportingHarness)
    chmodSync(dirname(script), 0o755)
    chmodSync(script, 0o644)
    const env = await api("POST", "/agent/environments", a.tokens.admin, {
      config: { name: "reporting", harness: `node ${script}` },
      team: true
    })
    expect(env.status).toBe(201)
    const url = `https://tracker.example/issues/${kind}-reported`
    const done = await run(a.tokens.member, url, { team: true, config: { environment_id: env.body.uid } })
    const said = texts((await api("GET", `/agent/runs/${done.run_id}/conversation`, a.tokens.member)).body.steps)
    const statuses = said.filter((t) => t.startsWith("status: ")).map((t) => t.slice("status: ".length))
    expect(statuses.map((s) => s.split(" ")[0])).toEqual(["200", "401", "401", "400", "400"])
    expect(JSON.parse(statuses[0]!.slice(4))).toEqual({ artifact_type: "EXTERNAL_REFERENCE", created_at: expect.any(String), data: { url } })
    expect(done.artifacts).toEqual([{ artifact_type: "EXTERNAL_REFERENCE", created_at: expect.any(String), data: { url } }])
    expect((await lookup(a.tokens.viewer, url)).body.run_id).toBe(done.run_id)
    expect((await lookup(b.tokens.admin, url)).status).toBe(404)
    // The run has ended: its token no longer reports anything, and is no API token.
    const token = said.find((t) => t.startsWith("token: "))!.slice("token: ".length)
    const late = await call(server(), "POST", "/api/v1/harness-support/report-artifact", {
      token,
      body: { artifact_type: "EXTERNAL_REFERENCE", data: { url: `${url}/late` } }
    })
    expect(late.status).toBe(401)
    expect((await lookup(a.tokens.admin, `${url}/late`)).status).toBe(404)
    expect((await api("POST", "/harness-support/report-artifact", a.tokens.admin, {
      artifact_type: "EXTERNAL_REFERENCE",
      data: { url: `${url}/admin` }
    })).status).toBe(401)
  })

  it("a conversation by id spans every execution of its run, in order, with one raw transcript", async () => {
    const token = a.tokens.member
    const created = await api("POST", "/agent/runs", token, { prompt: "Talk\n@say first\n@await-followup" })
    const runId = created.body.run_id as string
    await waitForRun(token, runId, (r) => r.state === "INPROGRESS")
    // The follow-up goes after the agent's first answer (INPROGRESS comes before it speaks).
    const deadline = Date.now() + 10_000
    while (!texts((await api("GET", `/agent/runs/${runId}/conversation`, token)).body.steps ?? []).includes("first")) {
      if (Date.now() > deadline) throw new Error("the agent never said first")
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect((await api("POST", `/agent/runs/${runId}/followups`, token, { message: "@say second" })).body).toMatchObject({
      route: "deliver_live"
    })
    const first = await waitForRun(token, runId)
    expect(first).toMatchObject({ state: "SUCCEEDED", execution_count: 1 })
    const again = await api("POST", `/agent/runs/${runId}/followups`, token, { message: "@say third" })
    expect(again.body).toMatchObject({ route: "new_execution", execution_count: 2 })
    const second = await waitForRun(token, runId, (r) => ended(r) && r.execution_count === 2)
    expect(second).toMatchObject({ state: "SUCCEEDED", execution_count: 2, conversation_id: first.conversation_id })

    const conversationId = second.conversation_id as string
    const byId = await api("GET", `/agent/conversations/${conversationId}`, token)
    expect(byId.status).toBe(200)
    expect(byId.body).toMatchObject({ conversation_id: conversationId, run_ids: [runId] })
    // The dialogue: the prompt and each follow-up as user messages, each answer after them.
    expect(texts(byId.body.steps)).toEqual(["Talk\n@say first\n@await-followup", "first", "@say second", "second", "@say third", "third"])
    // The same conversation as the run's.
    expect((await api("GET", `/agent/runs/${runId}/conversation`, token)).body).toEqual(byId.body)
    for (const other of [a.tokens.admin, a.tokens.viewer]) {
      // User scope: the admin sees it, the viewer does not.
      expect((await api("GET", `/agent/conversations/${conversationId}`, other)).status).toBe(other === a.tokens.admin ? 200 : 404)
    }

    const transcript = await api("GET", `/agent/conversations/${conversationId}/transcript`, token)
    expect(transcript.status).toBe(302)
    const location = transcript.headers.get("location")!
    const raw = await fetch(location).then((r) => r.text())
    const said = raw.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l)).filter((l) => l.type === "message").map((l) => l.text)
    expect(said).toEqual(["first", "second", "third"])
    // The run's transcript is the same file.
    const ofRun = await api("GET", `/agent/runs/${runId}/transcript`, token)
    expect(await fetch(ofRun.headers.get("location")!).then((r) => r.text())).toBe(raw)
    // The download URL is signed: altered, it is refused.
    expect((await fetch(location.replace(/.$/, (c) => (c === "A" ? "B" : "A")))).status).toBeGreaterThanOrEqual(400)
  })

  it("the SDK's agent.run with conversation_id continues a conversation in a new run that sees it; images reach the agent", async () => {
    const token = a.tokens.member
    const sdk = new OzAPI({ apiKey: token, baseURL: `${server().url}/api/v1`, maxRetries: 0 })
    const first = await run(token, "@say first answer")
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    const created = await sdk.agent.run({
      prompt: "Go on\n@history\n@attachments",
      conversation_id: first.conversation_id,
      images: [{ mime_type: "image/png", data: png }]
    })
    const second = await waitForRun(token, created.run_id)
    expect(second).toMatchObject({ state: "SUCCEEDED", conversation_id: first.conversation_id })
    const conversation = await api("GET", `/agent/conversations/${first.conversation_id}`, token)
    expect(conversation.body.run_ids).toEqual([first.run_id, created.run_id])
    const said = texts(conversation.body.steps)
    expect(said).toContain("first answer")
    expect(said.find((t) => t.startsWith("history:"))).toMatch(/^history: [1-9]\d* messages last: first answer$/)
    expect(said).toContain("attachment: image-1.png")
    // An image whose bytes are not its mime_type is refused, naming the field.
    const refused = await api("POST", "/agent/runs", token, { prompt: "x", images: [{ mime_type: "image/jpeg", data: png }] })
    expect(refused.status).toBe(400)
    expect(refused.body.error).toContain("images[0].data")
    // Another team cannot continue it.
    const foreign = await api("POST", "/agent/runs", b.tokens.admin, { prompt: "x", conversation_id: first.conversation_id })
    expect(foreign.status).toBe(403)
    expect(foreign.body.error).toContain("conversation_id")
  })

  it("a conversation id that is unknown or another team's is a 404; a malformed one a 400", async () => {
    const done = await run(a.tokens.member, "@say hi", { team: true })
    const conversationId = done.conversation_id as string
    expect((await api("GET", `/agent/conversations/${conversationId}`, a.tokens.viewer)).status).toBe(200)
    const unknown = "01890a5d-ac96-7000-8000-000000000000"
    for (const path of ["", "/transcript"]) {
      const nobody = notFound(await api("GET", `/agent/conversations/${unknown}${path}`, a.tokens.member))
      expect(nobody).toMatchObject({ error_code: "resource_not_found" })
      const foreign = notFound(await api("GET", `/agent/conversations/${conversationId}${path}`, b.tokens.admin))
      expect(foreign.error_code).toBe("resource_not_found")
      for (const malformed of ["not-a-uuid", conversationId.toUpperCase(), "01890a5d-ac96-4000-8000-000000000000"]) {
        const reply = await api("GET", `/agent/conversations/${malformed}${path}`, a.tokens.member)
        expect(reply.status, `${malformed}${path}`).toBe(400)
        expect(reply.body.error).toContain("conversation_id")
      }
    }
    // A conversation carries the id of the run that started it; a run that continues it has an id of its own.
    expect(conversationId).toBe(done.run_id)
    const continued = await run(a.tokens.member, "@say again", { team: true, conversation_id: conversationId })
    expect(continued.conversation_id).toBe(conversationId)
    expect((await api("GET", `/agent/conversations/${continued.run_id}`, a.tokens.member)).status).toBe(404)
  })
})
