/**
 * The conversation endpoints on a real listening server (ConversationResponses.ts, core's
 * Conversations on the in-memory storage): the body is streamed (chunked, no length) and is, byte
 * for byte, the JSON the endpoint's schema encodes; a run the caller cannot see is still a 404
 * problem, answered before any byte of a body; a failure once a body has started ends it cut
 * short (not JSON) and is logged (StreamedJson.ts).
 */
import { HttpApi, HttpApiBuilder, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, layer } from "@effect/vitest"
import { BlobStore, Conversation, Conversations, Errors, Identity, IdentityStore, Ids, Run, RunStore, Runs } from "@agent-runs/core"
import type { Access } from "@agent-runs/core"
import type { ConversationOp } from "@agent-runs/core/domain/ConversationLog"
import { memoryStorage, uid } from "@agent-runs/core/testing"
import { DateTime, Effect, Layer, Logger, Redacted, Schema, Stream } from "effect"
import { createServer } from "node:http"
import { ConversationsGroup } from "@agent-runs/api/endpoints/Conversations"
import { RunsGroup } from "@agent-runs/api/endpoints/Runs"
import * as Problems from "@agent-runs/api/Problems"
import { Authentication } from "@agent-runs/api/Security"
import { conversationResponses } from "../src/ConversationResponses.js"
import { DecodeErrorsAsProblems } from "../src/DecodeErrors.js"
import { streamedJson } from "../src/StreamedJson.js"

class MiniApi extends HttpApi.make("AgentRuns")
  .add(RunsGroup)
  .add(ConversationsGroup)
  .addError(Problems.InvalidRequest, { status: 400 })
  .addError(Problems.InternalError, { status: 500 })
  .addError(Problems.ResourceUnavailable, { status: 503 })
  .prefix("/api/v1")
{}

const T0 = DateTime.unsafeMake(Date.UTC(2026, 10, 1))
const team = uid<Ids.TeamUid>()
const viewerOf = (principal_uid: Ids.PrincipalUid): Access.Viewer => ({ principal_uid, team_uid: team, role: "member", instance_admin: false })
const alice = viewerOf(uid<Ids.PrincipalUid>())
const bob = viewerOf(uid<Ids.PrincipalUid>())
const TOKENS: Record<string, Access.Viewer> = { "ar_alice-token": alice, "ar_bob-token": bob }

/** What the server logged, as `message` lines. */
const logged: Array<string> = []
const captureLogs = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => {
  logged.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
}))

/** The text of a body whose second piece fails: a stand-in for a read that fails mid-stream. */
const CUT_SHORT_START = "{\"conversation_id\":\"x\",\"run_ids\":[],\"steps\":["
const cutShort = streamedJson(RunsGroup, "getRunTimeline")

const unused = () => Effect.die("not used by this test")

const RunsLive = HttpApiBuilder.group(MiniApi, "runs", (handlers) =>
  Effect.map(conversationResponses, (conversation) =>
    handlers
      .handle("getRunConversation", ({ path }) => conversation.ofRun(path.runId))
      .handle("getRunTimeline", ({ path }) =>
        Effect.succeed(cutShort(
          Stream.concat(Stream.make(CUT_SHORT_START), Stream.fail(new Errors.ResourceUnavailable({ message: "storage is unavailable" }))),
          { run_id: path.runId }
        )))
      .handle("createRun", unused)
      .handle("createRunDeprecated", unused)
      .handle("listRuns", unused)
      .handle("countRuns", unused)
      .handle("getRun", unused)
      .handle("getRunTranscript", unused)
      .handle("getRunTranscriptLink", unused)
      .handle("createRunFollowup", unused)
      .handle("cancelRun", unused)
      .handle("deleteRun", unused)
      .handle("getRunByExternalReference", unused)
      .handle("streamRunEvents", unused)))

const ConversationsLive = HttpApiBuilder.group(MiniApi, "conversations", (handlers) =>
  Effect.map(conversationResponses, (conversation) =>
    handlers
      .handle("getConversation", ({ path }) => conversation.byId(path.conversation_id))
      .handle("getConversationTranscript", unused)))

const AuthenticationLive = Layer.succeed(Authentication, {
  bearerAuth: (token) => {
    const viewer = TOKENS[Redacted.value(token)]
    return viewer === undefined
      ? Effect.fail(new Errors.AuthenticationRequired({ message: "missing or invalid bearer token" }))
      : Effect.succeed(viewer)
  }
})

/** Transcripts are not read here. */
const NoBlobs = Layer.succeed(BlobStore.BlobStore, BlobStore.BlobStore.of({
  append: unused,
  appendAt: unused,
  size: unused,
  put: unused,
  read: unused,
  remove: unused
}))

const Services = Layer.mergeAll(Conversations.Conversations.Default, Runs.Runs.Default).pipe(
  Layer.provideMerge(Layer.mergeAll(memoryStorage, Ids.IdsLive, NoBlobs))
)

const ServerLive = HttpApiBuilder.serve().pipe(
  Layer.provide(HttpApiBuilder.api(MiniApi).pipe(Layer.provide([RunsLive, ConversationsLive]), Layer.provide(AuthenticationLive))),
  Layer.provide(DecodeErrorsAsProblems),
  Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0 })),
  Layer.provideMerge(Services),
  Layer.provide(captureLogs)
)

/** GET `path` below /api/v1 as `token`: status, headers and the body's text. */
const get = (path: string, token: string) =>
  Effect.gen(function*() {
    const address = (yield* HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("not a TCP server")
    return yield* Effect.promise(async () => {
      const response = await fetch(`http://127.0.0.1:${address.port}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` } })
      return { status: response.status, headers: response.headers, text: await response.text() }
    })
  })

/** The team, alice and bob in the store. */
const seedTeam = Effect.gen(function*() {
  const identities = yield* IdentityStore.IdentityStore
  yield* identities.createTeam(new Identity.Team({
    uid: team,
    name: "the team",
    features: { metadata_filtering: true, scheduled_agents: true },
    max_concurrent_runs: 8,
    created_at: T0
  }))
  for (const [viewer, name] of [[alice, "Alice"], [bob, "Bob"]] as const) {
    yield* identities.createPrincipal(new Identity.Principal({
      uid: viewer.principal_uid,
      type: "user",
      display_name: name,
      instance_admin: false,
      memberships: [{ team_uid: team, role: "member" }],
      created_at: T0
    }))
  }
})

/**
 * The log of a long execution: `steps` top-level steps, each with `messages` messages (text,
 * actions and their results, output lines folded into one block), a nested step, and an end with
 * a summary; then an implicit step that never ends.
 */
const longExecution = (steps: number, messages: number, at: number): Array<ConversationOp> => {
  const ops: Array<ConversationOp> = []
  let key = 0
  for (let s = 0; s < steps; s++) {
    const top = ++key
    ops.push({ op: "step", key: top, parent: null, id: `step-${s}`, description: `step "${s}" \u2028`, at: at + s })
    for (let m = 0; m < messages; m++) {
      const t = at + s * 1000 + m
      switch (m % 4) {
        case 0:
          ops.push({ op: "message", key: top, role: "assistant", at: t, block: { type: "text", text: `message ${m} of step ${s}: ${"é".repeat(40)}` } })
          break
        case 1:
          ops.push({ op: "block", key: top, block: { type: "action", id: `a${s}-${m}`, category: "command", name: "run", input: { command: ["npm", "test"], n: m } } })
          break
        case 2:
          ops.push({
            op: "message",
            key: top,
            role: "tool",
            at: t,
            block: { type: "action_result", action_id: `a${s}-${m - 1}`, category: "command", name: "run", state: "completed", output: { ok: true, lines: [m, null] } }
          })
          break
        case 3:
          ops.push({ op: "message", key: top, role: "assistant", at: t, block: { type: "event", name: "output", data: { text: `line ${m}` } } })
          ops.push({ op: "text", key: top, text: `line ${m}, again` })
          break
      }
    }
    const inner = ++key
    ops.push({ op: "step", key: inner, parent: top, id: `step-${s}.1`, at: at + s })
    ops.push({ op: "message", key: inner, role: "assistant", at: at + s, block: { type: "text", text: "inside" } })
    ops.push({ op: "end", key: inner, at: at + s + 1 })
    ops.push({ op: "end", key: top, summary: `step ${s} done`, at: at + s + 2 })
  }
  const implicit = ++key
  ops.push({ op: "step", key: implicit, parent: null, id: "execution-implicit", at })
  ops.push({ op: "message", key: implicit, role: "user", at, block: { type: "text", text: "and then?" } })
  return ops
}

/** A run of alice's (`team`: visible to her team) with the given executions' logs, saved in parts of 500 operations. */
const runWithConversation = (executions: ReadonlyArray<ReadonlyArray<ConversationOp>>, options: { readonly team: boolean }) =>
  Effect.gen(function*() {
    const runs = yield* Runs.Runs
    const store = yield* RunStore.RunStore
    const runId = (yield* runs.create(alice, new Run.RunAgentRequest({ prompt: "work", team: options.team }))).run_id
    for (const ops of executions) {
      const executionId = yield* (yield* Ids.Ids).executionId
      for (let i = 0, seq = 1; i < ops.length; i += 500, seq++) {
        yield* store.appendConversation(runId, executionId, { seq, ops: ops.slice(i, i + 500) })
      }
    }
    return runId
  })

const encode = Schema.encodeSync(Conversation.ConversationResponse)

describe("the conversation endpoints", () => {
  layer(ServerLive, { timeout: "60 seconds" })("on a listening server", (it) => {
    it.effect("stream a large multi-step conversation: chunked, and the text the schema encodes (by run and by conversation id)", () =>
      Effect.gen(function*() {
        yield* seedTeam
        const at = Date.UTC(2026, 10, 29, 12)
        const runId = yield* runWithConversation([longExecution(3, 2_000, at), longExecution(2, 1_000, at + 3_600_000)], { team: true })
        const conversations = yield* Conversations.Conversations
        const expected = encode(yield* conversations.ofRun(bob, runId))
        expect(expected.steps).toHaveLength(3 + 1 + 2 + 1)

        const byRun = yield* get(`/agent/runs/${runId}/conversation`, "ar_bob-token")
        expect(byRun.status).toBe(200)
        expect(byRun.headers.get("content-type")).toBe("application/json")
        expect(byRun.headers.get("transfer-encoding")).toBe("chunked")
        expect(byRun.headers.get("content-length")).toBeNull()
        expect(byRun.text.length).toBeGreaterThan(1_000_000)
        expect(JSON.parse(byRun.text)).toEqual(expected)
        expect(byRun.text).toBe(JSON.stringify(expected))

        const byId = yield* get(`/agent/conversations/${expected.conversation_id}`, "ar_alice-token")
        expect(byId.status).toBe(200)
        expect(byId.headers.get("transfer-encoding")).toBe("chunked")
        expect(JSON.parse(byId.text)).toEqual(encode(yield* conversations.get(alice, expected.conversation_id as Ids.ConversationId)))
        expect(byId.text).toBe(byRun.text)
      }))

    it.effect("a run the caller cannot see is a 404 problem, like a run that does not exist, by run and by conversation id", () =>
      Effect.gen(function*() {
        const runId = yield* runWithConversation([longExecution(1, 100, Date.UTC(2026, 10, 29))], { team: false })
        const conversationId = (yield* (yield* Conversations.Conversations).ofRun(alice, runId)).conversation_id
        expect((yield* get(`/agent/runs/${runId}/conversation`, "ar_alice-token")).status).toBe(200)

        const hidden = yield* get(`/agent/runs/${runId}/conversation`, "ar_bob-token")
        const unknownId = "019a6b2e-7c4d-7f00-8a00-0000000000ff"
        const unknown = yield* get(`/agent/runs/${unknownId}/conversation`, "ar_bob-token")
        for (const answer of [hidden, unknown]) {
          expect(answer.status).toBe(404)
          expect(answer.headers.get("content-type")).toBe("application/problem+json")
        }
        expect(JSON.parse(hidden.text)).toEqual({ ...JSON.parse(unknown.text), error: `run ${runId} not found`, id: runId })
        expect(JSON.parse(hidden.text)).toMatchObject({ status: 404, error: `run ${runId} not found` })

        const hiddenById = yield* get(`/agent/conversations/${conversationId}`, "ar_bob-token")
        expect(hiddenById.status).toBe(404)
        expect(hiddenById.headers.get("content-type")).toBe("application/problem+json")
        expect(JSON.parse(hiddenById.text)).toMatchObject({ status: 404, error: `conversation ${conversationId} not found` })
      }))

    it.effect("a failure after the status was sent ends the body cut short (not JSON), and is logged", () =>
      Effect.gen(function*() {
        const runId = "019a6b2e-7c4d-7f00-8a00-0000000000aa"
        const answer = yield* get(`/agent/runs/${runId}/timeline`, "ar_alice-token")
        expect(answer.status).toBe(200)
        expect(answer.text).toBe(CUT_SHORT_START)
        expect(() => JSON.parse(answer.text)).toThrow()
        expect(logged.some((line) => line.includes("its body ends cut short"))).toBe(true)
      }))
  })
})
