/**
 * The Effect client against a tiny node:http server: typed by the API (core errors decoded from
 * problem bodies), timeouts, paging streams, the run counts and transcript link, the run event
 * stream and the layer. The tests run
 * on the live clock (timeouts and retries wait for real).
 */
import { FetchHttpClient } from "@effect/platform"
import { Errors, Ids } from "@agent-runs/core"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, DateTime, Effect, Either, Layer, Stream } from "effect"
import { AgentRunsClient, Transport } from "../src/index.js"
import { json, problem, RUN, runIdOf, runItem, startServer, type Handler } from "./server.js"

const TOKEN = "ar_effect"

/** A server for the test's scope, and the client layer for it. */
const withServer = (handler: Handler, options: Partial<AgentRunsClient.ClientOptions> = {}) =>
  Effect.acquireRelease(Effect.promise(() => startServer(handler)), (server) => Effect.promise(() => server.close())).pipe(
    Effect.map((server) => ({
      server,
      layer: AgentRunsClient.layer({ url: server.url, token: TOKEN, ...options }).pipe(Layer.provide(FetchHttpClient.layer))
    }))
  )

describe("AgentRunsClient (Effect)", () => {
  it.scopedLive("answers decoded values and fails with the core error of the problem", () =>
    Effect.gen(function*() {
      const { layer, server } = yield* withServer((request, response) =>
        request.url.endsWith(RUN)
          ? json(response, 200, runItem())
          : problem(response, 404, "resource_not_found", "run not found", { resource: "run" }))
      const client = yield* Effect.provide(AgentRunsClient.AgentRunsClient, layer)
      const runId = Ids.RunId.make(RUN)
      const run = yield* client.runs.getRun({ headers: {}, path: { runId } })
      expect(run.run_id).toBe(RUN)
      expect(run.constructor.name).toBe("RunItem")
      const other = Ids.RunId.make(runIdOf(1))
      const failure = yield* Effect.flip(client.runs.getRun({ headers: {}, path: { runId: other } }))
      expect(failure).toBeInstanceOf(Errors.ResourceNotFound)
      expect(failure).toMatchObject({ _tag: "ResourceNotFound", message: "run not found", resource: "run" })
      // A team header of the request wins over none configured.
      yield* client.runs.getRun({ headers: { "x-team-uid": "Tm7QpX2vLk9sRw4Yz1Ab3C" }, path: { runId } })
      expect(server.requests[2]!.headers["x-team-uid"]).toBe("Tm7QpX2vLk9sRw4Yz1Ab3C")
    }))

  it.scopedLive("a 401 is AuthenticationRequired; a timeout is a RequestError that isTimeout", () =>
    Effect.gen(function*() {
      const { layer } = yield* withServer((request, response) => {
        if (request.url.includes("slow")) return
        problem(response, 401, "authentication_required", "invalid token")
      }, { timeout: "150 millis" })
      const client = yield* Effect.provide(AgentRunsClient.AgentRunsClient, layer)
      const unauthorized = yield* Effect.flip(client.schedules.listSchedules({ headers: {} }))
      expect(unauthorized).toBeInstanceOf(Errors.AuthenticationRequired)
      const slow = yield* Effect.flip(client.runs.getRunByExternalReference({ headers: {}, urlParams: { url: "slow" } }))
      expect(Transport.isTimeout(slow)).toBe(true)
      expect(Transport.isConnectionError(slow)).toBe(false)
    }))

  it.scopedLive("runs a schedule now and previews a cron expression, decoded by the API's schemas", () =>
    Effect.gen(function*() {
      const SCHEDULE = Ids.ScheduleId.make("Sc7QpX2vLk9sRw4Yz1Ab3C")
      const { layer, server } = yield* withServer((request, response) =>
        request.url.endsWith("/run")
          ? json(response, 200, { run_id: RUN, task_id: RUN, state: "QUEUED", at_capacity: false })
          : json(response, 200, { description: "every 15 minutes", next_runs: ["2026-11-28T04:15:00.000Z"] }))
      const client = yield* Effect.provide(AgentRunsClient.AgentRunsClient, layer)
      const started = yield* client.schedules.runSchedule({ headers: {}, path: { scheduleId: SCHEDULE } })
      expect(started).toMatchObject({ run_id: RUN, state: "QUEUED" })
      const preview = yield* client.schedules.previewSchedule({
        headers: {},
        payload: { cron_schedule: "*/15 * * * *", timezone: "UTC", count: 1 }
      })
      expect(preview.description).toBe("every 15 minutes")
      expect(preview.next_runs.map(DateTime.formatIso)).toEqual(["2026-11-28T04:15:00.000Z"])
      expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
        `POST /api/v1/agent/schedules/${SCHEDULE}/run`,
        "POST /api/v1/agent/schedules/preview"
      ])
    }))

  it.scopedLive("streamRuns follows next_cursor over every page", () =>
    Effect.gen(function*() {
      const { layer, server } = yield* withServer((request, response) => {
        const cursor = new URL(request.url, "http://localhost").searchParams.get("cursor")
        const page = cursor === null ? 0 : Number(cursor)
        json(response, 200, {
          runs: [runItem(runIdOf(page))],
          page_info: page < 2 ? { has_next_page: true, next_cursor: String(page + 1) } : { has_next_page: false }
        })
      })
      const client = yield* Effect.provide(AgentRunsClient.AgentRunsClient, layer)
      const runs = yield* Stream.runCollect(client.streamRuns({ state: "QUEUED", sort_by: "created_at" }))
      expect(Chunk.toArray(runs).map((r) => r.run_id)).toEqual([0, 1, 2].map(runIdOf))
      const queries = server.requests.map((r) => Object.fromEntries(new URL(r.url, "http://localhost").searchParams))
      expect(queries).toEqual([
        { state: "QUEUED", sort_by: "created_at" },
        { state: "QUEUED", sort_by: "created_at", cursor: "1" },
        { state: "QUEUED", sort_by: "created_at", cursor: "2" }
      ])
    }))

  it.scopedLive("countRuns sends the list's filters (metadata pairs included); runTranscriptLink decodes its expiry", () =>
    Effect.gen(function*() {
      const { layer, server } = yield* withServer((request, response) =>
        request.url.includes("transcript-link")
          ? json(response, 200, { url: "https://example.com/t?expires=1&signature=ab", expires_at: "1970-01-01T00:00:01.000Z" })
          : json(response, 200, {
            counts: { QUEUED: 1, PENDING: 0, CLAIMED: 0, INPROGRESS: 0, SUCCEEDED: 4, FAILED: 0, BLOCKED: 0, ERROR: 0, CANCELLED: 0 },
            total: 5
          }))
      const client = yield* Effect.provide(AgentRunsClient.AgentRunsClient, layer)
      const counts = yield* client.countRuns({ state: ["QUEUED", "SUCCEEDED"], metadata: { env: "prod" } })
      expect(counts).toMatchObject({ counts: { QUEUED: 1, SUCCEEDED: 4 }, total: 5 })
      const link = yield* client.runTranscriptLink(RUN)
      expect(link.url).toBe("https://example.com/t?expires=1&signature=ab")
      expect(DateTime.toEpochMillis(link.expires_at)).toBe(1000)
      expect(server.requests.map((r) => r.url)).toEqual([
        "/api/v1/agent/run-counts?state=QUEUED&state=SUCCEEDED&metadata%5Benv%5D=prod",
        `/api/v1/agent/runs/${RUN}/transcript-link`
      ])
    }))

  it.scopedLive("followRun decodes timeline events; a malformed event fails the stream", () =>
    Effect.gen(function*() {
      const { layer } = yield* withServer((_request, response) => {
        response.writeHead(200, { "content-type": "text/event-stream" })
        const event = { sequence: 1, event_type: "run_created", occurred_at: "2026-11-22T03:17:28.123Z", execution_id: RUN }
        response.write(`id: 1\nevent: timeline\ndata: ${JSON.stringify(event)}\n\n`)
        response.write(`id: 2\nevent: timeline\ndata: {"sequence": 0}\n\n`)
      })
      const client = yield* Effect.provide(AgentRunsClient.AgentRunsClient, layer)
      const [first] = Chunk.toArray(yield* Stream.runCollect(Stream.take(client.followRun(RUN), 1)))
      expect(first?.event === "timeline" && first.data.event_type).toBe("run_created")
      expect(first?.event === "timeline" && first.data.sequence).toBe(1)
      const all = yield* Effect.either(Stream.runCollect(client.followRun(RUN)))
      expect(Either.isLeft(all) && all.left._tag).toBe("ParseError")
    }))

  it.scopedLive("followRun: conversation events decoded; the run's end ends the stream, a close before it reconnects after the last id", () =>
    Effect.gen(function*() {
      const timeline = { sequence: 1, event_type: "run_created", occurred_at: "2026-11-22T03:17:28.123Z", execution_id: RUN }
      const conversation = {
        op: "message",
        execution_id: RUN,
        step: 1,
        role: "user",
        block: { type: "text", text: "hello" },
        at: "2026-11-22T03:17:29.000Z"
      }
      const { layer, server } = yield* withServer((request, response) => {
        response.writeHead(200, { "content-type": "text/event-stream" })
        // The first connection closes before the run's end; the second sends the rest and `end`.
        if (request.headers["last-event-id"] === undefined) {
          response.end(`: open\n\nid: 1-0\nevent: timeline\ndata: ${JSON.stringify(timeline)}\n\n`)
        } else {
          response.end(
            `id: 1-1\nevent: conversation\ndata: ${JSON.stringify(conversation)}\n\n` +
              `event: end\ndata: {"run_id":"${RUN}","state":"SUCCEEDED"}\n\n`
          )
        }
      })
      const client = yield* Effect.provide(AgentRunsClient.AgentRunsClient, layer)
      const events = Chunk.toArray(yield* Stream.runCollect(client.followRun(RUN)))
      expect(events.map((e) => [e.id, e.event])).toEqual([["1-0", "timeline"], ["1-1", "conversation"]])
      const said = events[1]!
      expect(said.event === "conversation" && said.data).toMatchObject({ op: "message", role: "user", block: { text: "hello" } })
      // Reconnected once, after the last id; not again after `end`.
      expect(server.requests.map((r) => r.headers["last-event-id"])).toEqual([undefined, "1-0"])
    }))

  it("Transport.parseRetryAfter: seconds, HTTP dates, garbage", () => {
    const now = Date.parse("2026-01-01T00:00:00Z")
    expect(Transport.parseRetryAfter("3", now)).toBe(3000)
    expect(Transport.parseRetryAfter(" 0 ", now)).toBe(0)
    expect(Transport.parseRetryAfter("Thu, 01 Jan 2026 00:00:05 GMT", now)).toBe(5000)
    expect(Transport.parseRetryAfter("Wed, 31 Dec 2025 00:00:05 GMT", now)).toBe(0)
    expect(Transport.parseRetryAfter("soon", now)).toBeUndefined()
    expect(Transport.parseRetryAfter("-1", now)).toBeUndefined()
    expect(Transport.parseRetryAfter(undefined, now)).toBeUndefined()
    expect(Transport.retryDelay("120", 0, Transport.DEFAULT_MAX_RETRY_WAIT, now)).toBe(30_000)
    const backoff = Transport.retryDelay(undefined, 1, Transport.DEFAULT_MAX_RETRY_WAIT, now)
    expect(backoff).toBeGreaterThanOrEqual(750)
    expect(backoff).toBeLessThanOrEqual(1000)
  })
})
