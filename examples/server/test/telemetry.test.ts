/**
 * OpenTelemetry export (docs/observability.md): the built server with `OTEL_EXPORTER_OTLP_ENDPOINT`
 * pointing at an OTLP/JSON receiver on loopback (otlp.ts). A run is one trace: its creation's span
 * (the run's `trace_id` and `trace_span_id`) is the parent of its execution's span, whose children
 * are the setup and the agent (GenAI attributes) with a span per tool call, and the agent's process gets a `TRACEPARENT`
 * inside that trace. The metrics exported are those `/metrics` shows; credentials in URLs and
 * headers never reach a span; health checks make no span.
 */
import { installCopy } from "@agent-runs/scripted-agent/Location"
import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { makeTeam, waitForRun } from "./harness.js"
import { startOtlpReceiver } from "./otlp.js"
import { assertBuilt, call, type ServerProcess, spawnServer, tempDataDir } from "./process.js"
import { sharedDir } from "./support.js"
import { startWorker, teamWithWorker, tempDir } from "./workerDaemon.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const eventually = async <A>(check: () => A | undefined, timeoutMs = 30_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error("timed out waiting for the export")
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

describe("OpenTelemetry export (built server, SQLite)", () => {
  const scope = Effect.runSync(Scope.make())
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>
  let server: ServerProcess

  beforeAll(async () => {
    assertBuilt(inject("serverBuild"))
    receiver = await startOtlpReceiver()
    server = await Effect.runPromise(
      Effect.gen(function*() {
        const shared = yield* sharedDir
        installCopy(join(shared, "scripted-agent"))
        const agent = join(shared, "scripted-agent", "dist", "main.js")
        return yield* spawnServer({
          dataDir: yield* tempDataDir,
          env: {
            AGENT_RUNS_ADMIN_TOKEN: adminToken,
            AGENT_RUNS_CONCURRENCY: "2",
            AGENT_RUNS_HARNESS: `'${process.execPath}' '${agent}'`,
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
            OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
            OTEL_EXPORTER_OTLP_HEADERS: "x-collector-key=s3cret%20value",
            OTEL_SERVICE_NAME: "agent-runs-test"
          }
        })
      }).pipe(Scope.extend(scope))
    )
  }, 120_000)
  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await receiver?.close()
  }, 60_000)

  it("exports a run as one trace: creation, execution, setup and agent, parented; the agent gets TRACEPARENT", async () => {
    const team = await makeTeam({ url: server.url, adminToken }, "traced")
    const created = await call(server, "POST", "/api/v1/agent/runs", {
      token: team.tokens.member,
      body: { prompt: "@traceparent\n@tool grep {\"q\":\"x\"}\n@say done" }
    })
    expect(created.status).toBe(200)
    const run = await waitForRun(server, team.tokens.member, created.body.run_id)
    expect(run.state).toBe("SUCCEEDED")
    expect(run.trace_id).toMatch(/^[0-9a-f]{32}$/)
    expect(run.trace_span_id).toMatch(/^[0-9a-f]{16}$/)

    const inTrace = () => receiver.spans.filter((span) => span.traceId === run.trace_id)
    const execution = await eventually(() => inTrace().find((span) => span.name === "run.execution"))
    const agent = await eventually(() => inTrace().find((span) => span.name === "run.agent"))
    const setup = await eventually(() => inTrace().find((span) => span.name === "run.setup"))
    const creation = await eventually(() => inTrace().find((span) => span.spanId === run.trace_span_id))
    expect(creation.name).toBe("Runs.create")
    expect(execution.parentSpanId).toBe(run.trace_span_id)
    expect(execution.attributes["agent_runs.run_id"]).toBe(run.run_id)
    expect(setup.parentSpanId).toBe(execution.spanId)
    expect(agent.parentSpanId).toBe(execution.spanId)
    expect(agent.attributes["gen_ai.operation.name"]).toBe("invoke_agent")
    expect(agent.service).toBe("agent-runs-test")
    // Each tool call is a span of its own under the agent's.
    const tool = await eventually(() => inTrace().find((span) => span.name === "execute_tool grep"))
    expect(tool.parentSpanId).toBe(agent.spanId)
    expect(tool.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "grep", "agent_runs.tool.state": "completed" })
    // The creation's request is in the trace too, above the creation.
    const request = inTrace().find((span) => span.spanId === creation.parentSpanId)
    expect(request?.attributes["http.request.method"]).toBe("POST")

    // The agent's process got a TRACEPARENT of the agent's span.
    const conversation = await call(server, "GET", `/api/v1/agent/runs/${run.run_id}/conversation`, { token: team.tokens.member })
    expect(JSON.stringify(conversation.body)).toContain(`traceparent: 00-${run.trace_id}-${agent.spanId}-01`)
    expect(receiver.headers.every((h) => h["x-collector-key"] === "s3cret value")).toBe(true)

    // A follow-up's request has a trace of its own, linked to the run's.
    const followup = await call(server, "POST", `/api/v1/agent/runs/${run.run_id}/followups`, {
      token: team.tokens.member,
      body: { message: "@say again" }
    })
    expect(followup.status).toBe(200)
    const sent = await eventually(() => receiver.spans.find((span) => span.name === "Followups.send"))
    expect(sent.traceId).not.toBe(run.trace_id)
    expect(sent.links).toContainEqual({ traceId: run.trace_id, spanId: run.trace_span_id })
  }, 90_000)

  it("a self-hosted worker exports its execution's spans into the run's trace", async () => {
    const team = await teamWithWorker({ url: server.url }, adminToken, "traced-workers")
    await startWorker({
      url: server.url,
      token: team.worker,
      workerId: "w-otel",
      dataDir: tempDir(),
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_SERVICE_NAME: "agent-runs-worker" }
    })
    const created = await call(server, "POST", "/api/v1/agent/runs", {
      token: team.tokens.member,
      body: { prompt: "@say from the worker", config: { worker_host: "w-otel" } }
    })
    expect(created.status).toBe(200)
    const run = await waitForRun(server, team.tokens.member, created.body.run_id)
    expect(run.state).toBe("SUCCEEDED")
    const execution = await eventually(() =>
      receiver.spans.find((span) => span.traceId === run.trace_id && span.name === "run.execution" && span.service === "agent-runs-worker")
    )
    expect(execution.parentSpanId).toBe(run.trace_span_id)
    expect(execution.attributes["agent_runs.run_id"]).toBe(run.run_id)
  }, 90_000)

  it("exports the metrics /metrics shows: runs, their states and waits, requests by route", async () => {
    const names = [
      "agent_runs_runs_created_total",
      "agent_runs_run_state_changes_total",
      "agent_runs_run_queue_wait_seconds",
      "agent_runs_run_duration_seconds",
      "agent_runs_http_request_duration_seconds"
    ]
    await eventually(() => (names.every((name) => receiver.metricNames.has(name)) ? true : undefined))
    const text = await (await fetch(`${server.url}/metrics`)).text()
    for (const name of names) expect(text).toContain(name)
    expect(text).toMatch(/agent_runs_run_state_changes_total\{[^}]*to="SUCCEEDED"[^}]*\} [1-9]/)
    expect(text).toMatch(/agent_runs_http_request_duration_seconds_count\{[^}]*route="\/api\/v1\/agent\/runs\/\{id\}"[^}]*\} [1-9]/)
    // The count of runs created is the same figure on both, once an export after the last run came.
    const exported = () => {
      const created = receiver.metrics.filter((m: Json) => m.name === "agent_runs_runs_created_total").at(-1)
      return created.sum.dataPoints.reduce((total: number, point: Json) => total + (point.asDouble ?? point.asInt), 0) as number
    }
    const shown = [...text.matchAll(/^agent_runs_runs_created_total\{[^}]*\} (\d+)/gm)].reduce((t, m) => t + Number(m[1]), 0)
    expect(shown).toBeGreaterThan(0)
    expect(await eventually(() => (exported() === shown ? exported() : undefined))).toBe(shown)
  }, 60_000)

  it("keeps credentials out of spans (URLs, request and response headers), and makes none for health checks", async () => {
    const before = receiver.spans.length
    await fetch(`${server.url}/healthz`)
    await fetch(`${server.url}/READYZ/`)
    await fetch(`${server.url}/WEBHOOKS/w/AAAAAAAAAAAAAAAAAAAAAA/url-token-SECRET?token=QUERY-SECRET`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": "sha256=HEADER-SECRET" },
      body: "{}"
    })
    await fetch(`${server.url}/api/v1/downloads/transcripts/x?signature=LINK-SECRET&expires=1`)
    // A transcript's redirect answers a signed link in `location`.
    const team = await makeTeam({ url: server.url, adminToken }, "redacted")
    const created = await call(server, "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt: "@say hi" } })
    await waitForRun(server, team.tokens.member, created.body.run_id)
    const redirect = await call(server, "GET", `/api/v1/agent/runs/${created.body.run_id}/transcript`, { token: team.tokens.member })
    const signature = new URL(redirect.headers.get("location")!).searchParams.get("signature")!
    expect(signature).toMatch(/^[0-9a-f]{64}$/)
    await eventually(() =>
      receiver.spans.slice(before).some((s) => String(s.attributes["url.path"] ?? "").endsWith("/transcript")) ? true : undefined
    )
    const exported = JSON.stringify(receiver.spans)
    for (const secret of ["url-token-SECRET", "QUERY-SECRET", "HEADER-SECRET", "LINK-SECRET", signature, adminToken, team.tokens.member]) {
      expect(exported).not.toContain(secret)
    }
    expect(receiver.spans.some((s) => /\/(healthz|readyz)/i.test(String(s.attributes["url.path"] ?? "")))).toBe(false)
  }, 60_000)

  it("creates runs whatever trace headers a caller sends (a malformed one starts a trace of the run's own)", async () => {
    const team = await makeTeam({ url: server.url, adminToken }, "b3")
    for (const headers of [{ b3: "x-y" }, { b3: "80f198ee56343ba8-e457b5a2e4d86bd1-1" }, { traceparent: "00-ABCDEF0123456789ABCDEF0123456789-0123456789ABCDEF-01" }]) {
      const created = await call(server, "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt: "@say hi" }, headers })
      expect(created.status, JSON.stringify(headers)).toBe(200)
      const run = (await call(server, "GET", `/api/v1/agent/runs/${created.body.run_id}`, { token: team.tokens.member })).body
      expect(run.trace_id).toMatch(/^(?!0{32})[0-9a-f]{32}$/)
    }
    // A valid caller's trace is continued: the run is in it.
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    const continued = await call(server, "POST", "/api/v1/agent/runs", {
      token: team.tokens.member,
      body: { prompt: "@say hi" },
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` }
    })
    const run = (await call(server, "GET", `/api/v1/agent/runs/${continued.body.run_id}`, { token: team.tokens.member })).body
    expect(run.trace_id).toBe(traceId)
  }, 60_000)
})
