/**
 * `@agent-runs/client` against the bundled server in-process (SQLite, the process executor with
 * the scripted agent): the Promise client creates a run, follows its live events until it ends,
 * reads it back (run, timeline, conversation, transcript), lists runs page after page with a
 * metadata filter, cancels a running run, and fails with NotFoundError and AuthenticationError;
 * the Effect client reads and lists too. Everything stays on 127.0.0.1.
 */
import { FetchHttpClient } from "@effect/platform"
import {
  AgentRunsClient,
  AuthenticationError,
  ConflictError,
  createClient,
  NotFoundError,
  type RunEvent
} from "@agent-runs/client"
import { Errors, Ids, Run } from "@agent-runs/core"
import { Chunk, Effect, Stream } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { makeTeam, suiteServer } from "./harness.js"

const server = suiteServer("sqlite", {}, { concurrency: 2, cancelGraceSeconds: 1 })

/** An id no run has. */
const UNKNOWN_RUN = "01936f2a-8b7c-7d4e-9f01-23456789abcd"

/** The text blocks the agent said in a conversation's steps (not the user's messages), in order. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const texts = (steps: ReadonlyArray<any>): Array<string> =>
  steps.flatMap((step) => [
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    ...step.messages.flatMap((m: any) => m.role === "user" ? [] : m.content.filter((b: any) => b.type === "text").map((b: any) => b.text)),
    ...texts(step.steps)
  ])

describe("@agent-runs/client against the bundled server", () => {
  let team: Awaited<ReturnType<typeof makeTeam>>
  let client: ReturnType<typeof createClient>

  beforeAll(async () => {
    team = await makeTeam(server(), "client")
    client = createClient({ url: server().url, token: team.tokens.member, teamUid: team.uid, timeoutMs: 10_000 })
  })

  it("creates a run, follows its events until it ends, and reads its run, timeline, conversation and transcript", async () => {
    const created = await client.runs.create({ prompt: "Fix the parser\nIt breaks on empty input", title: "Parser" })
    expect(created).toMatchObject({ task_id: created.run_id, at_capacity: false })

    // The stream ends by itself when the run has ended.
    const events: Array<RunEvent> = []
    for await (const event of client.runs.events(created.run_id)) events.push(event)
    const timelineOf = (all: ReadonlyArray<RunEvent>) => all.flatMap((e) => (e.event === "timeline" ? [e.data] : []))
    const conversationOf = (all: ReadonlyArray<RunEvent>) => all.flatMap((e) => (e.event === "conversation" ? [e.data] : []))
    const types = timelineOf(events).map((e) => e.event_type)
    expect(types[0]).toBe("run_created")
    expect(types).toContain("run_in_progress")
    expect(types.at(-1)).toBe("run_succeeded")
    // The conversation as it grew: the user's prompt, the agent's answer.
    const said = conversationOf(events).flatMap((e) => (e.op === "message" && e.block.type === "text" ? [`${e.role}: ${e.block.text}`] : []))
    expect(said).toEqual(["user: Fix the parser\nIt breaks on empty input", "assistant: Done: Fix the parser"])
    // Ids are `T-C` and only grow.
    const positions = events.map((e) => e.id.split("-").map(Number) as [number, number])
    for (const [i, [t, c]] of positions.entries()) {
      const [pt, pc] = i === 0 ? [0, 0] : positions[i - 1]!
      expect(t - pt + c - pc, `${events[i]!.id} after ${pt}-${pc}`).toBe(1)
    }

    const run = await client.runs.get(created.run_id)
    expect(run).toMatchObject({ run_id: created.run_id, title: "Parser", state: "SUCCEEDED", execution_count: 1 })
    expect(typeof run.created_at).toBe("string")

    const timeline = await client.runs.timeline(created.run_id)
    expect(timeline.events.map((e) => e.event_type)).toEqual(types)

    // Resuming after any event answers exactly the rest: nothing twice, nothing lost.
    for (const at of [2, events.length - 2]) {
      const resumed: Array<RunEvent> = []
      for await (const event of client.runs.events(created.run_id, { lastEventId: events[at]!.id })) resumed.push(event)
      expect(timelineOf(resumed)).toEqual(timelineOf(events.slice(at + 1)))
      expect(conversationOf(resumed)).toEqual(conversationOf(events.slice(at + 1)))
    }

    const conversation = await client.runs.conversation(created.run_id)
    expect(conversation.run_ids).toEqual([created.run_id])
    expect(texts(conversation.steps)).toEqual(["Done: Fix the parser"])

    const url = await client.runs.transcriptUrl(created.run_id)
    expect(url.startsWith(`${server().url}/`)).toBe(true)
    const raw = await fetch(url).then((r) => r.text())
    expect(raw).toContain("Done: Fix the parser")
  })

  it("lists runs with async iteration over pages, with a state and a metadata filter", async () => {
    const listing = await makeTeam(server(), "client listing")
    const lister = createClient({ url: server().url, token: listing.tokens.member })
    const batch: Array<string> = []
    for (let i = 0; i < 5; i++) {
      batch.push((await lister.runs.create({ prompt: `@say ${i}`, metadata: { batch: "b1" } })).run_id)
    }
    const other = (await lister.runs.create({ prompt: "@say other", metadata: { batch: "b2" } })).run_id

    const seen: Array<string> = []
    for await (const run of lister.runs.list({ limit: 2, metadata: { batch: "b1" }, sort_by: "created_at" })) seen.push(run.run_id)
    expect([...seen].sort()).toEqual([...batch].sort())

    const pages: Array<number> = []
    for await (const page of lister.runs.list({ limit: 2, sort_by: "created_at", sort_order: "asc" }).pages()) {
      pages.push(page.runs.length)
    }
    expect(pages).toEqual([2, 2, 2])

    const all: Array<string> = []
    for await (const run of lister.runs.list({ sort_by: "created_at", sort_order: "asc", limit: 4 })) all.push(run.run_id)
    expect(all).toEqual([...batch, other])

    // A state filter: every state a run may be in by now. The runs are still moving, and a run
    // updated between pages moves in the default sort (updated_at), so this pages by created_at.
    const states = ["PENDING", "QUEUED", "CLAIMED", "INPROGRESS", "SUCCEEDED"] as const
    const filtered: Array<string> = []
    for await (const run of lister.runs.list({ state: [...states], limit: 3, sort_by: "created_at" })) {
      expect(states).toContain(run.state)
      filtered.push(run.run_id)
    }
    expect(filtered).toHaveLength(6)
    const none: Array<string> = []
    for await (const run of lister.runs.list({ state: "CANCELLED" })) none.push(run.run_id)
    expect(none).toEqual([])
  })

  it("cancels a running run; its events end with run_cancelled", async () => {
    const created = await client.runs.create({ prompt: "@sleep 60000" })
    for await (const event of client.runs.events(created.run_id)) {
      if (event.event === "timeline" && event.data.event_type === "run_in_progress") break
    }
    let cancelled: string | undefined
    for (let attempt = 0; cancelled === undefined; attempt++) {
      try {
        cancelled = await client.runs.cancel(created.run_id)
      } catch (error) {
        // 409 (retryable) while the run moves between states.
        if (!(error instanceof ConflictError) || attempt === 5) throw error
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    expect(cancelled).toBe(created.run_id)
    const types: Array<string> = []
    for await (const event of client.runs.events(created.run_id)) if (event.event === "timeline") types.push(event.data.event_type)
    expect(types.at(-1)).toBe("run_cancelled")
    expect((await client.runs.get(created.run_id)).state).toBe("CANCELLED")
  })

  it("an unknown run is a NotFoundError; a bad token an AuthenticationError", async () => {
    const notFound = await client.runs.get(UNKNOWN_RUN).then(() => undefined, (error: unknown) => error)
    expect(notFound).toBeInstanceOf(NotFoundError)
    expect(notFound).toMatchObject({ status: 404, errorCode: "resource_not_found" })
    expect((notFound as NotFoundError).body).toMatchObject({ error_code: "resource_not_found", retryable: false })

    const events = (async () => {
      for await (const _ of client.runs.events(UNKNOWN_RUN)) break
    })()
    await expect(events).rejects.toBeInstanceOf(NotFoundError)

    const stranger = createClient({ url: server().url, token: "ar_not-a-valid-token" })
    const unauthenticated = await stranger.runs.get(UNKNOWN_RUN).then(() => undefined, (error: unknown) => error)
    expect(unauthenticated).toBeInstanceOf(AuthenticationError)
    expect(unauthenticated).toMatchObject({ status: 401, errorCode: "authentication_required" })
    const listing = (async () => {
      for await (const _ of stranger.runs.list()) break
    })()
    await expect(listing).rejects.toBeInstanceOf(AuthenticationError)
  })

  it("the Effect client: typed by the API, with the core error of a problem", async () => {
    const program = Effect.gen(function*() {
      const effectClient = yield* AgentRunsClient.AgentRunsClient
      const created = yield* effectClient.runs.createRun({
        headers: {},
        payload: new Run.RunAgentRequest({ prompt: "@say from Effect" })
      })
      const run = yield* effectClient.runs.getRun({ headers: {}, path: { runId: created.run_id } })
      const runs = yield* Stream.runCollect(effectClient.streamRuns({ limit: 1 }))
      const missing = yield* Effect.flip(
        effectClient.runs.getRun({ headers: {}, path: { runId: Ids.RunId.make(UNKNOWN_RUN) } })
      )
      return { run, runs: Chunk.toArray(runs), missing }
    })
    const { missing, run, runs } = await Effect.runPromise(
      program.pipe(
        Effect.provide(AgentRunsClient.layer({ url: server().url, token: team.tokens.member })),
        Effect.provide(FetchHttpClient.layer)
      )
    )
    expect(run.prompt).toBe("@say from Effect")
    expect(runs.map((r) => r.run_id)).toContain(run.run_id)
    expect(runs.length).toBeGreaterThanOrEqual(2)
    expect(runs.every((run) => typeof run.run_id === "string")).toBe(true)
    expect(missing).toBeInstanceOf(Errors.ResourceNotFound)
  })
})
