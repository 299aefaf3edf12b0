/**
 * An execution host in memory, for tests of the execution loop alone (no storage, no server): runs
 * are offered as plans, claimed in order, and moved by the real run state machine; what the loop
 * records, reports and outputs is kept for the test to read. `failing` makes every operation but
 * the claim fail with a `StorageError` while it is on; `cancel` cancels a run as a caller would.
 */
import { Clock, Effect, Either, Layer, Option, Ref, Stream } from "effect"
import type { Artifact } from "../src/domain/Artifact.js"
import { foldParts } from "../src/domain/ConversationLog.js"
import type { ConversationPart } from "../src/domain/ConversationLog.js"
import type { ExecutionEvent, Report } from "../src/domain/ExecutionEvent.js"
import { toRunEvent } from "../src/domain/ExecutionEvent.js"
import { ExecutionHost, Lost } from "../src/engine/ExecutionHost.js"
import type { ExecutionPlan } from "../src/engine/ExecutionPlan.js"
import type { ExecutionId, RunId, TeamUid } from "../src/domain/Ids.js"
import type { Sandbox } from "../src/ports/Executor.js"
import { StorageError } from "../src/ports/Storage.js"
import { newRunSnapshot, RunEvent, transition } from "../src/domain/RunStateMachine.js"
import type { RunSnapshot } from "../src/domain/RunStateMachine.js"

/** A run as the memory host keeps it. */
export interface MemoryRun {
  readonly plan: ExecutionPlan
  snapshot: RunSnapshot
  readonly events: Array<ExecutionEvent>
  readonly reports: Array<Report>
  /** For each report, how many events were recorded before it (a report written with events counts them). */
  readonly reportedAfter: Array<number>
  readonly inbox: Array<string>
  readonly transcript: Array<number>
  readonly parts: Array<ConversationPart>
  readonly artifacts: Array<Artifact>
  retained: Sandbox | undefined
}

const TEAM = "AAAAAAAAAAAAAAAAAAAAAA" as TeamUid

/** A plan for the prompt (the scripted executor's agents follow it), with `overrides`. */
export const planFor = (runId: RunId, prompt: string, overrides: Partial<ExecutionPlan> = {}): ExecutionPlan => ({
  run_id: runId,
  execution_id: "" as ExecutionId,
  team_uid: TEAM,
  run_token: "rt",
  harness: null,
  sandbox: {
    run_id: runId,
    execution_id: "" as ExecutionId,
    team_uid: TEAM,
    docker_image: null,
    repos: [],
    setup_commands: [],
    attachments: [],
    env: {}
  },
  agent_env: {},
  has_environment: false,
  pull_request: null,
  retention_ms: 0,
  failure: null,
  agent: { type: "oz" },
  unconfigured: null,
  resume_session: null,
  says_prompt: true,
  start: { conversation_id: null, prompt, title: prompt.slice(0, 20), base_prompt: null, model_id: null, skill: null, mcp_servers: {}, history: [] },
  usage: { input_tokens: 0, output_tokens: 0, inference_cost: 0, compute_cost: 0 },
  transcript_bytes: 0,
  trace: null,
  max_runtime_seconds: null,
  budget: { max_cost_usd: null, max_turns: null, spent_before: 0 },
  ...overrides
})

export const memoryHost = (leaseMs: number) =>
  Effect.gen(function*() {
    const runs = new Map<RunId, MemoryRun>()
    /** Agent CLI session files by run: kept when a run is offered again (a continuation). */
    const agentStates = new Map<RunId, Uint8Array>()
    const queue: Array<RunId> = []
    const failing = yield* Ref.make(false)

    const held = (runId: RunId, executionId: ExecutionId) =>
      Effect.gen(function*() {
        if (yield* Ref.get(failing)) return yield* new StorageError({ operation: "memory host", cause: "injected fault" })
        const run = runs.get(runId)
        if (run === undefined) return yield* new Lost()
        const lease = run.snapshot.lease
        if (lease?.execution_id !== executionId || (run.snapshot.state !== "CLAIMED" && run.snapshot.state !== "INPROGRESS")) {
          return yield* new Lost()
        }
        return run
      })

    const move = (run: MemoryRun, event: RunEvent) =>
      Effect.gen(function*() {
        const moved = transition(run.snapshot, event, yield* Clock.currentTimeMillis)
        if (Either.isLeft(moved)) return yield* new Lost()
        run.snapshot = moved.right.run
      })

    const up = (): Effect.Effect<void, StorageError> =>
      Effect.flatMap(Ref.get(failing), (on) => (on ? Effect.fail(new StorageError({ operation: "memory host", cause: "injected fault" })) : Effect.void))

    const layer = Layer.succeed(ExecutionHost, ExecutionHost.of({
      wakeups: Stream.never,
      claim: (executionId) =>
        Effect.gen(function*() {
          const runId = queue.shift()
          if (runId === undefined) return Option.none()
          const run = runs.get(runId)!
          const now = yield* Clock.currentTimeMillis
          yield* Effect.orDie(move(run, RunEvent.Claim({ executionId, leaseExpiresAt: now + leaseMs })))
          return Option.some({ ...run.plan, execution_id: executionId, sandbox: { ...run.plan.sandbox, execution_id: executionId } })
        }),
      // As storage does: the holder renews its lease even after it lapsed, while no one took the run.
      renew: (runId, executionId) =>
        Effect.gen(function*() {
          const run = yield* held(runId, executionId)
          run.snapshot = { ...run.snapshot, lease: { execution_id: executionId, expires_at: (yield* Clock.currentTimeMillis) + leaseMs } }
        }),
      // Runs here create no children.
      childrenHold: () => Effect.succeed(0),
      // A report given with the events is kept with them, as storage writes both at once.
      record: (runId, executionId, events, report) =>
        Effect.gen(function*() {
          yield* up()
          const run = runs.get(runId)
          if (run === undefined) return yield* new Lost()
          const now = yield* Clock.currentTimeMillis
          // A lease that lapsed while the host failed is still the holder's: renewed first (as RunExecutions does).
          let next = run.snapshot.lease?.execution_id === executionId && run.snapshot.lease.expires_at <= now
            ? { ...run.snapshot, lease: { execution_id: executionId, expires_at: now + leaseMs } }
            : run.snapshot
          for (const e of events) {
            const moved = transition(next, toRunEvent(e, executionId), now)
            if (Either.isLeft(moved)) return yield* new Lost()
            next = moved.right.run
          }
          run.snapshot = next
          run.events.push(...events)
          if (report !== undefined) {
            run.reports.push(report)
            run.reportedAfter.push(run.events.length)
          }
          return { state: next.state, sandbox_retained: next.sandbox_retained }
        }),
      report: (runId, executionId, report) =>
        Effect.map(held(runId, executionId), (run) => {
          run.reports.push(report)
          run.reportedAfter.push(run.events.length)
        }),
      followups: (runId, executionId) => Effect.map(held(runId, executionId), (run) => run.inbox.splice(0)),
      output: (runId) => {
        const run = () => runs.get(runId)!
        return {
          appendTranscript: (offset, bytes) =>
            Effect.map(up(), () => {
              const transcript = run().transcript
              // Bytes already there are not written again (a retry).
              for (let i = Math.max(0, transcript.length - offset); i < bytes.length; i++) transcript.push(bytes[i]!)
              return transcript.length
            }),
          appendConversation: (part) =>
            Effect.map(up(), () => {
              if (!run().parts.some((p) => p.seq === part.seq)) run().parts.push(part)
            }),
          addArtifact: (artifact) => Effect.map(up(), () => void run().artifacts.push(artifact))
        }
      },
      retain: (runId, sandbox) => Effect.sync(() => void (runs.get(runId)!.retained = sandbox)),
      agentState: (runId) => Effect.sync(() => Option.fromNullable(agentStates.get(runId))),
      saveAgentState: (runId, executionId, state) => Effect.map(held(runId, executionId), () => void agentStates.set(runId, state))
    }))

    return {
      layer,
      failing,
      /** Offers a run to claim. */
      offer: (plan: ExecutionPlan) =>
        Effect.sync(() => {
          const snapshot = transition(newRunSnapshot({ execution_location: "REMOTE", source: "API" }), RunEvent.Admit({ atCapacity: false }), 0)
          if (Either.isLeft(snapshot)) throw new Error("a new run is always admitted")
          runs.set(plan.run_id, {
            plan,
            snapshot: snapshot.right.run,
            events: [],
            reports: [],
            reportedAfter: [],
            inbox: [],
            transcript: [],
            parts: [],
            artifacts: [],
            retained: undefined
          })
          queue.push(plan.run_id)
        }),
      /** A follow-up for the run's agent. */
      send: (runId: RunId, message: string) => Effect.sync(() => void runs.get(runId)!.inbox.push(message)),
      /** Replaces the agent CLI session files kept for the run (its next execution restores them). */
      keepAgentState: (runId: RunId, state: Uint8Array) => Effect.sync(() => void agentStates.set(runId, state)),
      /** Cancels the run as a caller would. */
      cancel: (runId: RunId) => Effect.orDie(move(runs.get(runId)!, RunEvent.Cancel())),
      run: (runId: RunId) => Effect.sync(() => runs.get(runId)!),
      /** The texts the agent said in the run's conversation (not the user's), as stored parts fold it. */
      texts: (runId: RunId) =>
        Effect.sync(() => {
          const steps = foldParts(runs.get(runId)!.parts)
          const texts = (s: ReadonlyArray<(typeof steps)[number]>): Array<string> =>
            s.flatMap((step) => [
              ...step.messages.flatMap((m) => m.role === "user" ? [] : m.content.flatMap((b) => (b.type === "text" ? [b.text] : []))),
              ...texts(step.steps)
            ])
          return texts(steps)
        }),
      transcriptText: (runId: RunId) => Effect.sync(() => new TextDecoder().decode(new Uint8Array(runs.get(runId)!.transcript)))
    } as const
  })
