/**
 * `agent-runs runs create|list|get|cancel|delete|followup|watch|logs`: runs through the HTTP API with the
 * Effect client of `@agent-runs/client`. `watch` follows a run live (Server-Sent Events), prints the
 * agent's messages and exits with the run's outcome (Failure.ts: 0 SUCCEEDED, 5 FAILED or ERROR,
 * 6 CANCELLED, 7 BLOCKED; 130 when stopped by SIGINT/SIGTERM before the run ended).
 */
import { Args, Command, Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import { Ids, Run, RunState, type Timeline } from "@agent-runs/core"
import { Chunk, Console, DateTime, Effect, Option, Schedule, Schema, Stream } from "effect"
import * as Failure from "../Failure.js"
import * as Format from "../Format.js"
import * as Connection from "./Connection.js"
import * as IdArgs from "./Ids.js"

const json = Options.boolean("json").pipe(Options.withDescription("print JSON (the API's answer) instead of text"))

const runIdArg = Args.text({ name: "RUN_ID" }).pipe(Args.withDescription("the run's id"))

const ENDED: ReadonlySet<RunState.RunState> = new Set<RunState.RunState>(["SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"])

/** The state a timeline event moves a run to, if any. */
const STATE_OF_EVENT: Partial<Record<Timeline.TimelineEventType, RunState.RunState>> = {
  run_created: "QUEUED",
  run_queued: "QUEUED",
  requeued: "QUEUED",
  run_pending: "PENDING",
  run_claimed: "CLAIMED",
  run_in_progress: "INPROGRESS",
  run_succeeded: "SUCCEEDED",
  run_failed: "FAILED",
  run_blocked: "BLOCKED",
  run_errored: "ERROR",
  run_cancelled: "CANCELLED"
}

/** A run id argument, checked before anything is sent (a malformed one is a usage error). */
const decodeRunId = IdArgs.decode(Ids.RunId, "run id")
const problemOf = IdArgs.problemOf

/** `-` reads the text from stdin. */
const textOrStdin = (text: string, what: string): Effect.Effect<string, Failure.UsageError> =>
  text !== "-" ? Effect.succeed(text) : Effect.promise(async () => {
    const chunks: Array<Buffer> = []
    for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Uint8Array))
    return Buffer.concat(chunks).toString("utf8")
  }).pipe(
    Effect.filterOrFail((read) => read.trim() !== "", () => new Failure.UsageError({ message: `the ${what} on stdin is empty` }))
  )

const runJson = (run: Run.RunItem): string => JSON.stringify(Schema.encodeSync(Run.RunItem)(run))

const runRows = (runs: ReadonlyArray<Run.RunItem>) =>
  Format.table(
    ["RUN ID", "STATE", "CREATED", "TITLE"],
    runs.map((run) => [run.run_id, run.state, Format.date(run.created_at), Format.short(run.title)])
  )

/** A run as `key: value` lines. */
const describeRun = (run: Run.RunItem): string => {
  const lines: Array<[string, string]> = [
    ["run", run.run_id],
    ["title", run.title],
    ["state", run.state],
    ["created", Format.date(run.created_at)],
    ["started", Format.date(run.started_at)],
    ["ended", Format.date(run.ended_at)],
    ["creator", run.creator.uid],
    ["source", run.source]
  ]
  if (run.environment_id !== null) lines.push(["environment", run.environment_id])
  if (run.agent_config.model_id !== undefined) lines.push(["model", run.agent_config.model_id])
  if (run.agent_config.harness !== undefined) lines.push(["harness", run.agent_config.harness.type])
  if (run.agent_config.priority !== undefined) lines.push(["priority", String(run.agent_config.priority)])
  if (run.status_message !== null) {
    const code = run.status_message.error_code === undefined ? "" : `${run.status_message.error_code}: `
    lines.push(["status", `${code}${run.status_message.message}`])
  }
  if (run.session_link !== null) lines.push(["session", run.session_link])
  for (const artifact of run.artifacts) lines.push(["artifact", `${artifact.artifact_type} ${JSON.stringify(artifact.data)}`])
  const usage = run.request_usage
  lines.push(["usage", `${usage.input_tokens} input tokens, ${usage.output_tokens} output tokens`])
  for (const [key, value] of Object.entries(run.metadata)) lines.push(["metadata", `${key}=${value}`])
  const width = Math.max(...lines.map(([key]) => key.length)) + 1
  return [...lines.map(([key, value]) => `${`${key}:`.padEnd(width)} ${value}`), "", run.prompt].join("\n")
}

// runs create ---------------------------------------------------------------------------------------

const create = Command.make(
  "create",
  {
    ...Connection.options,
    prompt: Options.text("prompt").pipe(Options.withDescription("what the agent should do; - reads it from stdin")),
    title: Options.text("title").pipe(Options.optional, Options.withDescription("the run's title")),
    environment: Options.text("environment").pipe(Options.optional, Options.withDescription("the uid of the environment to run in")),
    harness: Options.text("harness").pipe(
      Options.optional,
      Options.withDescription("the harness type (claude, codex, gemini, opencode, oz); default: the server's")
    ),
    model: Options.text("model").pipe(Options.optional, Options.withDescription("the model id")),
    priority: Options.integer("priority").pipe(
      Options.optional,
      Options.withDescription("-10 to 10 (default 0): within the team, runs with a higher priority are claimed first")
    ),
    json
  },
  (options) =>
    Effect.gen(function*() {
      const prompt = yield* textOrStdin(options.prompt, "prompt")
      const config = {
        ...Option.match(options.environment, { onNone: () => ({}), onSome: (environment_id) => ({ environment_id }) }),
        ...Option.match(options.model, { onNone: () => ({}), onSome: (model_id) => ({ model_id }) }),
        ...Option.match(options.harness, { onNone: () => ({}), onSome: (type) => ({ harness: { type } }) }),
        ...Option.match(options.priority, { onNone: () => ({}), onSome: (priority) => ({ priority }) })
      }
      const request = yield* Schema.decodeUnknown(Run.RunAgentRequest)({
        prompt,
        ...Option.match(options.title, { onNone: () => ({}), onSome: (title) => ({ title }) }),
        ...(Object.keys(config).length === 0 ? {} : { config })
      }).pipe(Effect.mapError((error) => new Failure.UsageError({ message: problemOf(error) })))
      const client = yield* AgentRunsClient.AgentRunsClient
      const created = yield* client.runs.createRun({ headers: {}, payload: request })
      if (options.json) yield* Console.log(JSON.stringify(Schema.encodeSync(Run.RunAgentResponse)(created)))
      else {
        yield* Console.log(created.run_id)
        if (created.at_capacity) yield* Console.error(`run ${created.run_id} waits PENDING: the team is at capacity`)
      }
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("Create a run; prints its id (--json: the API's answer)."))

// runs list -----------------------------------------------------------------------------------------

const list = Command.make(
  "list",
  {
    ...Connection.options,
    state: Options.choice("state", RunState.RunState.literals).pipe(
      Options.repeated,
      Options.withDescription("only runs in this state (repeatable: any of them)")
    ),
    limit: Options.integer("limit").pipe(
      Options.withSchema(Schema.Int.pipe(Schema.between(1, 500))),
      Options.optional,
      Options.withDescription("how many runs (a page of 1 to 500; default 20); with --all, the page size")
    ),
    all: Options.boolean("all").pipe(Options.withDescription("every run, page after page")),
    json: Options.boolean("json").pipe(Options.withDescription("print NDJSON: one run per line, as the API sends it"))
  },
  (options) =>
    Effect.gen(function*() {
      const client = yield* AgentRunsClient.AgentRunsClient
      const query: AgentRunsClient.RunListQuery = {
        ...(options.state.length === 0 ? {} : { state: options.state }),
        ...Option.match(options.limit, { onNone: () => (options.all ? { limit: 100 } : {}), onSome: (limit) => ({ limit }) })
      }
      if (options.json && options.all) {
        return yield* client.streamRuns(query).pipe(Stream.runForEach((run) => Console.log(runJson(run))))
      }
      const page = options.all
        ? { runs: Chunk.toReadonlyArray(yield* Stream.runCollect(client.streamRuns(query))), more: false }
        : yield* Effect.map(client.listRunsPage(query), (page) => ({ runs: page.runs, more: page.page_info.has_next_page }))
      if (options.json) return yield* Effect.forEach(page.runs, (run) => Console.log(runJson(run)), { discard: true })
      yield* Console.log(page.runs.length === 0 ? "no runs" : runRows(page.runs))
      if (page.more) yield* Console.error("(more runs: --all, or a larger --limit)")
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("List runs, newest first: a table, or NDJSON with --json."))

// runs get ------------------------------------------------------------------------------------------

const get = Command.make(
  "get",
  { ...Connection.options, runId: runIdArg, json },
  (options) =>
    Effect.gen(function*() {
      const runId = yield* decodeRunId(options.runId)
      const client = yield* AgentRunsClient.AgentRunsClient
      const run = yield* client.runs.getRun({ headers: {}, path: { runId } })
      yield* Console.log(options.json ? runJson(run) : describeRun(run))
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("Show a run (--json: as the API sends it)."))

// runs cancel ---------------------------------------------------------------------------------------

const cancel = Command.make(
  "cancel",
  { ...Connection.options, runId: runIdArg },
  (options) =>
    Effect.gen(function*() {
      const runId = yield* decodeRunId(options.runId)
      const client = yield* AgentRunsClient.AgentRunsClient
      // 409 retryable: the run is between states (PENDING, being claimed); try again shortly.
      yield* client.runs.cancelRun({ headers: {}, path: { runId } }).pipe(
        Effect.retry({
          while: (error) => error._tag === "Conflict" && error.retryable,
          schedule: Schedule.spaced("250 millis"),
          times: 8
        })
      )
      yield* Console.log(`cancelled ${runId}`)
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("Cancel a run: the agent is stopped and the run ends CANCELLED."))

// runs delete ---------------------------------------------------------------------------------------

const remove = Command.make(
  "delete",
  { ...Connection.options, runId: runIdArg },
  (options) =>
    Effect.gen(function*() {
      const runId = yield* decodeRunId(options.runId)
      const client = yield* AgentRunsClient.AgentRunsClient
      yield* client.runs.deleteRun({ headers: {}, path: { runId } })
      yield* Console.log(`deleted ${runId}`)
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("Delete an ended run for good, with its conversation, transcript and artifacts (its creator and the team's admins)."))

// runs followup -------------------------------------------------------------------------------------

const followup = Command.make(
  "followup",
  {
    ...Connection.options,
    runId: runIdArg,
    message: Options.text("message").pipe(Options.withDescription("the follow-up message; - reads it from stdin"))
  },
  (options) =>
    Effect.gen(function*() {
      const runId = yield* decodeRunId(options.runId)
      const message = yield* textOrStdin(options.message, "message")
      const client = yield* AgentRunsClient.AgentRunsClient
      const answer = yield* client.runs.createRunFollowup({
        headers: {},
        path: { runId },
        payload: new Run.RunFollowupRequest({ message })
      })
      yield* Console.log(`follow-up sent to ${answer.run_id} (${answer.route}); the run is ${answer.state}`)
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(
  Command.withDescription(
    "Send a follow-up message to a run: stored until it starts, delivered live while it runs, or a new execution of an ended run."
  )
)

// following a run -----------------------------------------------------------------------------------

interface Handlers {
  /** A timeline event (those already there first, then the live ones). */
  readonly onEvent: (event: Timeline.TimelineEvent) => Effect.Effect<void>
  /** A conversation block not seen before. */
  readonly onBlock: (block: Format.ConversationBlock) => Effect.Effect<void>
  /** Every 2 s while following. */
  readonly onTick: Effect.Effect<void>
}

/**
 * Reads a run's timeline and conversation, and, with `live`, follows them until the run ends (the
 * event stream for the timeline, the conversation re-read on each event and every 2 s). Answers the run
 * as it is at the end.
 */
const follow = (runId: Ids.RunId, live: boolean, handlers: Handlers) =>
  Effect.gen(function*() {
    const client = yield* AgentRunsClient.AgentRunsClient
    let seen = 0
    const conversation = client.runs.getRunConversation({ headers: {}, path: { runId } }).pipe(
      Effect.map((answer) => Format.blocks(answer.steps)),
      // No conversation yet (404), or one that cannot be normalized (422).
      Effect.catchTags({ ResourceNotFound: () => Effect.succeed([]), OperationNotSupported: () => Effect.succeed([]) }),
      Effect.flatMap((all) => {
        const fresh = all.slice(seen)
        seen = all.length
        return Effect.forEach(fresh, handlers.onBlock, { discard: true })
      })
    )
    const getRun = client.runs.getRun({ headers: {}, path: { runId } })
    // The run before its timeline: a run that had ended by then has its last events in the timeline
    // read next (a state and its events are written together); one that ends after is followed.
    const run = yield* getRun
    const timeline = yield* client.runs.getRunTimeline({ headers: {}, path: { runId } })
    yield* Effect.forEach(timeline.events, handlers.onEvent, { discard: true })
    yield* conversation
    if (!live || ENDED.has(run.state)) return run
    const last = timeline.events.at(-1)
    const events = client.followRun(runId, {
      untilEnded: true,
      ...(last === undefined ? {} : { lastEventId: String(last.sequence) })
    }).pipe(Stream.filterMap((event) => event.event === "timeline" ? Option.some(Option.some(event.data)) : Option.none()))
    const ticks = Stream.tick("2 seconds").pipe(Stream.map(() => Option.none<Timeline.TimelineEvent>()))
    yield* Stream.merge(events, ticks, { haltStrategy: "left" }).pipe(
      Stream.runForEach(Option.match({
        onSome: (event) => Effect.zipRight(handlers.onEvent(event), conversation),
        onNone: () => Effect.zipRight(conversation, handlers.onTick)
      }))
    )
    // The terminal event is out: the run has ended (read it again briefly if the read races the write).
    let ended = yield* getRun
    for (let attempt = 0; attempt < 10 && !ENDED.has(ended.state); attempt++) {
      ended = yield* Effect.zipRight(Effect.sleep("300 millis"), getRun)
    }
    yield* conversation
    return ended
  })

/** The exit code of a watched run's final state. */
export const exitCodeOfState = (state: RunState.RunState): number => {
  switch (state) {
    case "SUCCEEDED":
      return Failure.EXIT_OK
    case "CANCELLED":
      return Failure.EXIT_RUN_CANCELLED
    case "BLOCKED":
      return Failure.EXIT_RUN_BLOCKED
    default:
      return Failure.EXIT_RUN_FAILED
  }
}

// runs watch ----------------------------------------------------------------------------------------

const watch = Command.make(
  "watch",
  { ...Connection.options, runId: runIdArg },
  (options) =>
    Effect.gen(function*() {
      const runId = yield* decodeRunId(options.runId)
      yield* Failure.exitOnInterrupt(Failure.EXIT_INTERRUPTED)
      const client = yield* AgentRunsClient.AgentRunsClient
      const start = yield* client.runs.getRun({ headers: {}, path: { runId } })
      const tty = process.stderr.isTTY === true
      let state: RunState.RunState = start.state
      let lastEvent = "-"
      const createdAt = DateTime.toEpochMillis(start.created_at)
      const progress = (final: boolean) =>
        Effect.sync(() => {
          const line = `${runId} ${state} ${Format.elapsed(Date.now() - createdAt)} ${lastEvent}`
          if (tty) process.stderr.write(`\r\x1b[K${line}${final ? "\n" : ""}`)
          else process.stderr.write(`${line}\n`)
        })
      const run = yield* follow(runId, true, {
        onEvent: (event) =>
          Effect.suspend(() => {
            state = STATE_OF_EVENT[event.event_type] ?? state
            lastEvent = event.message === undefined ? event.event_type : `${event.event_type}: ${Format.short(event.message)}`
            return progress(false)
          }),
        onBlock: ({ block, role }) =>
          role === "assistant" && block.type === "text"
            ? Effect.zipRight(tty ? Effect.sync(() => process.stderr.write("\r\x1b[K")) : Effect.void, Console.log(block.text))
            : Effect.void,
        onTick: tty ? progress(false) : Effect.void
      })
      state = run.state
      if (tty) yield* progress(true)
      const code = exitCodeOfState(run.state)
      if (code !== Failure.EXIT_OK) {
        const status = run.status_message
        const why = status === null
          ? ""
          : `: ${status.error_code === undefined ? "" : `${status.error_code}: `}${Format.short(status.message, 200)}`
        yield* Console.error(`agent-runs: run ${runId} ${run.state}${why}`)
        return yield* new Failure.Reported({ exitCode: code })
      }
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(
  Command.withDescription(
    "Follow a run live until it ends: progress on stderr, the agent's messages on stdout; exits 0 SUCCEEDED, " +
      "5 FAILED or ERROR, 6 CANCELLED, 7 BLOCKED."
  )
)

// runs logs -----------------------------------------------------------------------------------------

const logs = Command.make(
  "logs",
  {
    ...Connection.options,
    runId: runIdArg,
    follow: Options.boolean("follow").pipe(Options.withAlias("f"), Options.withDescription("follow the run until it ends"))
  },
  (options) =>
    Effect.gen(function*() {
      const runId = yield* decodeRunId(options.runId)
      if (options.follow) yield* Failure.exitOnInterrupt(Failure.EXIT_INTERRUPTED)
      yield* follow(runId, options.follow, {
        onEvent: (event) =>
          Console.log(
            `[${Format.date(event.occurred_at)}] ${event.event_type}${event.message === undefined ? "" : `: ${event.message}`}`
          ),
        onBlock: (block) => Console.log(Format.block(block)),
        onTick: Effect.void
      })
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(
  Command.withDescription(
    "Print a run's timeline and conversation as text (-f: follow them until the run ends)."
  )
)

/** `agent-runs runs …`. */
export const runsCommand = Command.make("runs").pipe(
  Command.withDescription("Create, list, inspect, follow, cancel and delete runs."),
  Command.withSubcommands([create, list, get, cancel, remove, followup, watch, logs])
)
