/**
 * The dispatcher (CONTRACT §6, §7): what makes a run run. Over the ports, on every replica:
 * - claims QUEUED runs (woken by `RunStore.wakeups`, polling as a fallback) under a lease while it
 *   has free slots, and executes each: environment setup in a sandbox of the `Executor`, the
 *   agent harness started with its start message, its stdout appended to the transcript blob and
 *   reduced (`Harness`) into the conversation, artifacts, usage, session and status, then the
 *   outcome recorded; the lease is renewed while the agent lives;
 * - watches each live run: a run no longer held (cancelled, or its lease lost) has its agent
 *   stopped (cancel message, then SIGTERM, then SIGKILL after the grace period); follow-ups in the
 *   inbox of an INPROGRESS run are delivered to the agent's stdin;
 * - sweeps expired leases (requeue with `attempt + 1`, ERROR `resource_unavailable` after 3) and
 *   admits PENDING runs oldest first when their team has capacity;
 * - keeps the sandbox of a failed setup for its debug window, starts a debug agent (mode `debug`)
 *   in it for the follow-ups sent meanwhile, and releases it when the window ends;
 * - at start-up, takes back the sandboxes of an earlier life of the service: those of an open
 *   debug window are kept, the others released. Runs such a life held come back through the
 *   lease sweep once their lease expires (so a replica that restarts never runs a run twice
 *   while another replica holds it).
 *
 * Every state change is a `RunStateMachine.transition` written with a guard on the state and the
 * lease holder; a guard that fails means someone else moved the run (a cancel, a sweep), and the
 * execution stops touching it. Several replicas on one database share the work through
 * `RunStore.claim`, which never gives one run to two claimers.
 *
 * Decisions where the contract is silent:
 * - The harness command is a shell command: the environment's `config.harness`, else the server's
 *   default, run as `/bin/sh -c "exec <command>"` in the sandbox with `AGENT_RUNS_RUN_ID`,
 *   `AGENT_RUNS_EXECUTION_ID`, `AGENT_RUNS_API_URL` and `AGENT_RUNS_RUN_TOKEN` set (the start
 *   message carries the same `api`).
 * - The transcript of a run is one blob over all its executions (and debug sessions).
 * - The conversation is appended to (new operations only, ConversationLog.ts) at most every
 *   `flushMs` while the agent runs, and at its end.
 * - A failure of the executor itself (it could not prepare or start) ends the run ERROR
 *   `internal_error`; a failure of the setup commands ends it FAILED `environment_setup_failed`.
 * - A run whose environment was deleted since fails its setup ("environment … no longer exists").
 * - The skill of a run (its resolved `skill_spec`) is read again from its repository when an
 *   execution starts, and its MCP servers are resolved then (registered servers, team secrets;
 *   McpServers.ts): the start message's `skill` is `{spec, name, description, path, content}`
 *   (`spec` the id `owner/repo:path`, `path` the file in the repository, `content` the whole
 *   file) and `mcp_servers` the resolved configurations. A skill no longer there, or a secret or
 *   registered server deleted since, fails the setup (`environment_setup_failed`). Where no
 *   SecretStore is at hand (a self-hosted worker), servers that need secrets fail the setup too.
 */
import { Clock, Context, Data, DateTime, Deferred, Duration, Effect, Either, Fiber, Layer, Option, Ref, Schedule, Stream } from "effect"
import type { Scope } from "effect"
import { transcriptKey } from "./Conversations.js"
import {
  addUsage,
  cancelMessage,
  emptyLineBuffer,
  type ExecutionState,
  flushLines,
  followupMessage,
  historyOf,
  newExecutionState,
  outcomeOf,
  reduce,
  splitLines,
  type StartMessage,
  takeArtifacts,
  takeOps
} from "./Harness.js"
import type { ConversationOp } from "./ConversationLog.js"
import { Health, outage, STORAGE_PATIENCE_MS, supervise } from "./Health.js"
import { Ids } from "./Ids.js"
import { resolveMcpServers, secretReferences } from "./McpServers.js"
import type { McpDirectServer } from "./McpServers.js"
import type { ExecutionId, RunId, TeamUid } from "./Ids.js"
import { runAttachments } from "./Ingress.js"
import { BlobStore } from "./ports/BlobStore.js"
import { EnvironmentStore } from "./ports/EnvironmentStore.js"
import type { StoredEnvironment } from "./ports/EnvironmentStore.js"
import type { AgentProcess, Sandbox } from "./ports/Executor.js"
import { Executor } from "./ports/Executor.js"
import { IdentityStore } from "./ports/IdentityStore.js"
import { RunStore } from "./ports/RunStore.js"
import type { StoredRun } from "./ports/RunStore.js"
import { RunTokens } from "./ports/RunTokens.js"
import { RepoSource } from "./ports/RepoSource.js"
import { SecretStore } from "./ports/SecretStore.js"
import type { StorageError } from "./ports/Storage.js"
import { WorkerStore } from "./ports/WorkerStore.js"
import { RunItem } from "./Run.js"
import { isTerminal } from "./RunState.js"
import { isDebugWindowOpen, RunEvent, transition } from "./RunStateMachine.js"
import { applyTransition, currentExecution, eventsAt, guardOf, noteAbsentWorker, runSnapshot } from "./RunRecords.js"
import { logClaimed, logTransition } from "./RunLog.js"
import { readSkill } from "./Skills.js"
import type { TimelineEventType } from "./Timeline.js"

/** How the dispatcher runs; the server reads it from its configuration. */
export interface DispatcherSettings {
  /** The default harness command (a shell command), when the environment names none. */
  readonly harness: string
  /** The API base URL agents call, e.g. `http://127.0.0.1:8080/api/v1`. */
  readonly apiBaseUrl: string
  /** How many runs this replica executes at once. */
  readonly concurrency: number
  /** Lease length; renewed every third of it. */
  readonly leaseMs: number
  /** Claim poll when no wake-up comes. */
  readonly pollMs: number
  /** How often a live run is checked for cancel and follow-ups. */
  readonly watchMs: number
  /** How often expired leases and waiting teams are swept. */
  readonly sweepMs: number
  /** How long an agent has to exit after the cancel message, and then after SIGTERM. */
  readonly cancelGraceMs: number
  /** How often the conversation is saved while the agent runs. */
  readonly flushMs: number
  /**
   * The most a run's agents may print (its transcript, over all its executions), in bytes: past
   * it the agent is stopped and the run FAILED `agent_failed`. Default 50 MiB.
   */
  readonly maxOutputBytes?: number | undefined
  /**
   * How long a QUEUED run waits for its self-hosted worker: once the run is this old and the
   * worker has sent no heartbeat for as long, the sweep fails it (`resource_unavailable`).
   */
  readonly workerWaitMs?: number | undefined
  /**
   * Set on a self-hosted worker (docs/workers.md): the worker id whose runs this dispatcher claims
   * (`agent_config.worker_host`). Its ports are the server's worker endpoints, so it leaves the
   * lease sweep, admission and environment bookkeeping to the server, and keeps no sandbox for a
   * debug window. Absent (the server's own dispatcher): runs without a worker host.
   */
  readonly workerHost?: string | undefined
}

/** The most a run's agents may print by default: 50 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 50 * 1024 * 1024

/** How long a run waits for an absent self-hosted worker by default: 10 minutes. */
export const DEFAULT_WORKER_WAIT_MS = 10 * 60_000

export const defaultSettings = (harness: string, apiBaseUrl: string): DispatcherSettings => ({
  harness,
  apiBaseUrl,
  concurrency: 16,
  leaseMs: 30_000,
  pollMs: 1_000,
  watchMs: 250,
  sweepMs: 1_000,
  cancelGraceMs: 5_000,
  flushMs: 250,
  maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES,
  workerWaitMs: DEFAULT_WORKER_WAIT_MS
})

export class DispatcherConfig extends Context.Tag("@agent-runs/core/DispatcherConfig")<DispatcherConfig, DispatcherSettings>() {}

/** Why an execution stops touching its run: someone else moved it. */
class Lost {
  readonly _tag = "Lost"
}


/** The skill or MCP servers of a run cannot be given to its agent: the setup fails. */
class InputsUnavailable extends Data.TaggedError("InputsUnavailable")<{ readonly message: string }> {}

/** How long the output of an agent that exited is still read. */
const DRAIN_MS = 2_000

/** Where an execution's conversation log stands: the next part's number, the part being written. */
interface ConversationWriter {
  seq: number
  inflight: Array<ConversationOp> | undefined
}

/** What an execution's output is saved into, and where its saving stands. */
interface Output {
  readonly runId: RunId
  readonly executionId: ExecutionId
  readonly state: ExecutionState
  readonly log: ConversationWriter
  /** The run as this execution holds it, and its item fields last written; none for a debug session. */
  readonly held: { readonly base: StoredRun; written: string } | undefined
}

/** About how large a part of a conversation log is at most (one operation may be larger). */
const PART_CHARS = 256 * 1024

/** Whether an execution still holds its run: once it lost it (a cancel, a lost lease), it stops retrying writes. */
interface Holding {
  lost: boolean
}

/** What the reader of an agent's output is doing: whether it waits for storage to take a chunk. */
interface Reading {
  writing: boolean
}

/** A retained sandbox of a failed setup, kept for its debug window. */
interface Retained {
  readonly sandbox: Sandbox
  debugging: boolean
}

/**
 * The dispatcher's parts, for the scope given: claiming, the sweep (lease expiry, admission, runs
 * whose self-hosted worker stayed away), the retained sandboxes and recovery. `layer` runs them in
 * loops; tests call them one by one on the TestClock.
 */
export const make = (scope: Scope.Scope) => Effect.gen(function*() {
  const settings = yield* DispatcherConfig
  const store = yield* RunStore
  const environments = yield* EnvironmentStore
  const identities = yield* IdentityStore
  const executor = yield* Executor
  const blobs = yield* BlobStore
  const tokens = yield* RunTokens
  const ids = yield* Ids
  const repos = yield* RepoSource
  const secrets = yield* Effect.serviceOption(SecretStore)
  // Worker presence (on the server): a run queued again for a worker that is not connected says so.
  const presence = yield* Effect.serviceOption(WorkerStore)
  const health = yield* Health

  const retained = new Map<RunId, Retained>()
  /** A self-hosted worker's dispatcher: the server sweeps, admits and keeps environments current. */
  const onWorker = settings.workerHost !== undefined
  /** Executions under way on this replica. */
  let running = 0
  /** Serializes claiming: one claimer per replica at a time. */
  const claiming = yield* Effect.makeSemaphore(1)

  // -------------------------------------------------------------------------------------------
  // Writing transitions

  /**
   * Retries a write of an execution while storage fails (reported to `Health`), backing off up to
   * 5 s, for `STORAGE_PATIENCE_MS` at most: an outage delays the run instead of losing it (its
   * lease stays held meanwhile, see `execute`).
   */
  const persistently = <A, E>(write: Effect.Effect<A, E | StorageError>, holding?: Holding): Effect.Effect<A, E | StorageError> =>
    write.pipe(
      Effect.tapErrorTag("StorageError" as never, () => health.storageFailed),
      Effect.retry({
        schedule: Schedule.exponential(Duration.millis(100)).pipe(
          Schedule.union(Schedule.spaced(Duration.seconds(5))),
          Schedule.upTo(Duration.millis(STORAGE_PATIENCE_MS))
        ),
        // An execution that lost its run stops retrying (a worker's server refuses its writes).
        while: (e) => (e as { _tag?: string })._tag === "StorageError" && holding?.lost !== true
      })
    )

  /**
   * Applies `event` to the current run and writes it guarded by its state and lease holder, with
   * `change` applied to the next item. Retries a lost race twice; `Lost` when the event no longer
   * applies (the run moved on without us). A storage failure is the caller's to handle: the loops
   * report it, executions retry (`advance`). Only the `holder` (the execution itself, never the
   * sweep writing for a gone one) renews its lapsed lease first.
   */
  const advanceOnce = (
    runId: RunId,
    event: RunEvent | ReadonlyArray<RunEvent>,
    executionId: ExecutionId,
    change: (next: StoredRun, now: number) => StoredRun = (next) => next,
    holder = false
  ): Effect.Effect<StoredRun, Lost | StorageError> =>
    Effect.gen(function*() {
      const found = yield* store.get(runId)
      if (Option.isNone(found)) return yield* Effect.fail(new Lost())
      const now = yield* Clock.currentTimeMillis
      let run = found.value
      if (holder && run.lease !== null && run.lease.execution_id === executionId && run.lease.expires_at <= now) {
        // A lease that lapsed while storage failed (renewals failed too) is still this execution's
        // as long as no one took the run: renewed first (refused, StaleWrite, once it was taken).
        yield* store.renewLease(runId, executionId, now + settings.leaseMs)
        run = { ...run, lease: { ...run.lease, expires_at: now + settings.leaseMs } }
      }
      // Several events are applied in order and written at once (one round trip to storage).
      let next = run
      const timeline: Array<TimelineEventType> = []
      for (const e of Array.isArray(event) ? event : [event]) {
        const moved = transition(runSnapshot(next), e as RunEvent, now)
        if (Either.isLeft(moved)) return yield* Effect.fail(new Lost())
        next = applyTransition(next, moved.right, now)
        timeline.push(...moved.right.timeline)
      }
      next = change(next, now)
      yield* store.update(
        runId,
        guardOf(run),
        next,
        yield* noteAbsentWorker(presence, next, eventsAt(timeline, now, executionId), now)
      )
      yield* logTransition(run, next, executionId)
      return next
    }).pipe(
      Effect.retry({ times: 2, while: (e) => e._tag === "StaleWrite" }),
      Effect.catchTag("StaleWrite", () => Effect.fail(new Lost()))
    )

  /** `advanceOnce` for an execution: retried while storage fails. */
  const advance = (
    runId: RunId,
    event: RunEvent | ReadonlyArray<RunEvent>,
    executionId: ExecutionId,
    change?: (next: StoredRun, now: number) => StoredRun
  ): Effect.Effect<StoredRun, Lost | StorageError> => persistently(advanceOnce(runId, event, executionId, change, true))

  /** The run after `write`, or none when the run moved on without us. */
  const unlessLost = <E>(write: Effect.Effect<StoredRun, Lost | E>): Effect.Effect<Option.Option<StoredRun>, Exclude<E, Lost>> =>
    write.pipe(
      Effect.asSome,
      Effect.catchIf((e): e is Lost => e instanceof Lost, () => Effect.succeedNone)
    ) as Effect.Effect<Option.Option<StoredRun>, Exclude<E, Lost>>

  /** Replaces the item's fields of a run this execution holds (session, usage, status). */
  const patchItem = (runId: RunId, executionId: ExecutionId, fields: Partial<ConstructorParameters<typeof RunItem>[0]>) =>
    Effect.gen(function*() {
      const found = yield* store.get(runId)
      if (Option.isNone(found)) return yield* Effect.fail(new Lost())
      const run = found.value
      if (run.lease?.execution_id !== executionId) return yield* Effect.fail(new Lost())
      const now = yield* Clock.currentTimeMillis
      const next: StoredRun = {
        ...run,
        item: new RunItem({ ...run.item, ...fields, updated_at: DateTime.unsafeMake(now) }, true)
      }
      yield* store.update(runId, { state: run.item.state, execution_id: executionId }, next, [])
    }).pipe(Effect.catchTag("StaleWrite", () => Effect.fail(new Lost())))

  /** Keeps the environment's `setup_failed` and newest-run summary current. */
  const touchEnvironment = (run: StoredRun, setupFailed?: boolean) =>
    Effect.gen(function*() {
      if (onWorker) return
      const uid = run.item.environment_id
      if (uid === null) return
      const found = yield* environments.get(uid)
      if (Option.isNone(found)) return
      const last = found.value.item.last_task_created
      // Only the environment's newest run speaks for it.
      if (last === null || last.id !== run.item.run_id) return
      yield* environments.noteRun(uid, {
        ...(setupFailed === undefined ? {} : { setup_failed: setupFailed }),
        last_task_created: { ...last, state: run.item.state, updated_at: run.item.updated_at, started_at: run.item.started_at }
      })
    }).pipe(Effect.catchAll((e) => Effect.logWarning("dispatcher: could not update the environment", e)))

  // -------------------------------------------------------------------------------------------
  // Admission and the sweep

  /** Queues a team's PENDING runs, oldest first, while it has capacity. */
  const admit = (team: TeamUid) =>
    Effect.gen(function*() {
      if (onWorker) return
      const found = yield* identities.getTeam(team)
      if (Option.isNone(found)) return
      const active = yield* store.activeCount(team)
      const room = found.value.max_concurrent_runs - active
      if (room <= 0) return
      const waiting = yield* store.pending(team, room)
      for (const run of waiting) {
        const executionId = yield* currentExecution(store, ids, run)
        yield* unlessLost(advanceOnce(run.item.run_id, RunEvent.CapacityFreed(), executionId, (next) => ({ ...next, at_capacity: false })))
      }
    })

  /** `admit` after an execution ended: a failure is only logged (the sweep admits the team later). */
  const admitAfter = (team: TeamUid) =>
    admit(team).pipe(Effect.catchAll((e) => Effect.logWarning("dispatcher: admission failed; the sweep will admit later", e)))

  const sweep = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    // While storage failed lately, holders could not renew: their leases expire a whole lease
    // after the last failure at the earliest.
    const fault = yield* health.lastStorageFault
    const expired = Option.isSome(fault) && now - fault.value < settings.leaseMs ? [] : yield* store.expiredLeases(now, 100)
    for (const run of expired) {
      const lease = run.lease
      if (lease === null) continue
      const next = yield* unlessLost(advanceOnce(run.item.run_id, RunEvent.LeaseExpired({ executionId: lease.execution_id }), lease.execution_id))
      if (Option.isSome(next) && isTerminal(next.value.item.state)) yield* admit(next.value.team_uid)
      if (Option.isSome(next)) yield* Effect.logInfo(`dispatcher: lease of run ${run.item.run_id} expired; now ${next.value.item.state}`)
    }
    for (const team of yield* store.waitingTeams(100)) yield* admit(team)
    yield* failAbandoned(now)
  })

  /**
   * Fails the QUEUED runs whose self-hosted worker stayed away: the run was created at least
   * `workerWaitMs` ago and the worker has sent no heartbeat for as long (or never sent one); a
   * follow-up or a late admission does not restart the wait. Their team's capacity goes to the
   * next waiting runs.
   */
  const failAbandoned = (now: number) =>
    Effect.gen(function*() {
      const waitMs = settings.workerWaitMs ?? DEFAULT_WORKER_WAIT_MS
      if (Option.isNone(presence)) return
      for (const run of yield* store.waitingForWorkers(now - waitMs, 100)) {
        const workerId = run.item.agent_config.worker_host
        if (workerId === undefined) continue
        const seen = yield* presence.value.lastHeartbeat(run.team_uid, workerId)
        if (Option.isSome(seen) && now - seen.value < waitMs) continue
        const executionId = yield* currentExecution(store, ids, run)
        const message = `self-hosted worker ${workerId} has not been connected for ${Math.round(waitMs / 1000)} s; ` +
          "the run stopped waiting for it"
        const next = yield* unlessLost(advanceOnce(run.item.run_id, RunEvent.WorkerAbsent({ message }), executionId))
        if (Option.isSome(next)) {
          yield* Effect.logInfo(`dispatcher: run ${run.item.run_id} failed: ${message}`)
          yield* admit(run.team_uid)
        }
      }
    })

  // -------------------------------------------------------------------------------------------
  // Running an agent

  /**
   * Pumps the agent's stdout into the transcript and the execution's state. Output past the run's
   * limit is not kept: the state records the violation, and `violated` is completed once the agent
   * breaks the protocol so that the execution stops it.
   */
  const pump = (
    runId: RunId,
    agent: AgentProcess,
    state: ExecutionState,
    violated: Deferred.Deferred<void>,
    reading: Reading,
    holding: Holding
  ) =>
    Effect.gen(function*() {
      const key = transcriptKey(runId)
      const limit = settings.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES
      let size = yield* persistently(blobs.size(key))
      let buffer = emptyLineBuffer
      const noteViolation = Effect.suspend(() => state.violation === undefined ? Effect.void : Deferred.succeed(violated, undefined))
      yield* agent.stdout.pipe(
        Stream.runForEach((chunk) =>
          Effect.gen(function*() {
            if (state.violation !== undefined) return
            const room = limit - size
            const kept = chunk.length <= room ? chunk : chunk.subarray(0, Math.max(0, room))
            if (kept.length > 0) {
              // The agent waits (its pipe fills) while storage fails: no output is dropped.
              const at = size
              reading.writing = true
              yield* persistently(blobs.appendAt(key, at, kept), holding).pipe(
                Effect.ensuring(Effect.sync(() => (reading.writing = false))),
                Effect.catchAll((e) => Effect.logError("dispatcher: the transcript could not be written; output lost", e))
              )
              size += kept.length
            }
            const split = splitLines(buffer, kept)
            buffer = split.buffer
            const now = yield* Clock.currentTimeMillis
            for (const line of split.lines) reduce(state, line, now)
            if (kept.length < chunk.length) {
              state.violation ??= `the agent's output passed the run's limit of ${limit} bytes; the agent was stopped`
            }
            yield* noteViolation
          })
        ),
        Effect.catchAll((e) => Effect.logWarning("dispatcher: reading the agent's output failed", e))
      )
      const now = yield* Clock.currentTimeMillis
      for (const line of flushLines(buffer)) reduce(state, line, now)
      yield* noteViolation
    })

  /**
   * Saves what an execution's output changed: conversation, artifacts, and for a held run its
   * session, usage and status. Nothing counts as saved before storage confirmed it: after a failed
   * write, the next save writes it again. Fails with the storage failure (the caller decides
   * whether to retry).
   */
  const save = ({ executionId, held, log, runId, state }: Output) =>
    Effect.gen(function*() {
      // The conversation's new operations, in parts: a part once formed is written as it is until
      // storage took it (a retry after a lost answer is then a no-op), before the next is formed.
      for (;;) {
        if (log.inflight === undefined && state.pending.length > 0) log.inflight = takeOps(state, PART_CHARS)
        if (log.inflight === undefined) break
        yield* store.appendConversation(runId, executionId, { seq: log.seq, ops: log.inflight })
        log.inflight = undefined
        log.seq += 1
      }
      const artifacts = takeArtifacts(state)
      for (const [i, artifact] of artifacts.entries()) {
        yield* store.addArtifact(runId, artifact).pipe(
          Effect.tapError(() => Effect.sync(() => state.artifacts.unshift(...artifacts.slice(i))))
        )
      }
      if (held === undefined) return
      const base = held.base.item
      const usage = state.usage === undefined ? base.request_usage : addUsage(base.request_usage, state.usage)
      const session = state.session
      const fields = {
        ...(session === undefined ? {} : { session_id: session.session_id, session_link: session.session_link }),
        request_usage: usage,
        ...(state.status === undefined ? {} : { status_message: { message: state.status } })
      }
      const written = JSON.stringify(fields)
      if (written === held.written) return
      yield* patchItem(runId, executionId, fields).pipe(Effect.catchTag("Lost", () => Effect.void))
      held.written = written
    }).pipe(
      // A save cut short would leave half of it unmarked: the periodic save is interrupted at the
      // end of an execution, and finishes first.
      Effect.uninterruptible
    )

  /** The periodic save while the agent runs: a failure is logged once per outage, the next save tries again. */
  const flush = (output: Output) => {
    const saves = outage(health, "dispatcher: saving the conversation (the next save tries again)")
    return save(output).pipe(Effect.zipRight(saves.succeeded), Effect.catchAll(saves.failed))
  }

  /** The last save of an execution: retried while storage fails, before the run's outcome is written. */
  const flushLast = (output: Output, holding: Holding) => persistently(save(output), holding)

  /**
   * Waits until the agent has exited and its output is read: its exit code. Output still in the
   * pipe is read for up to `DRAIN_MS` after the exit; a process the agent left behind that holds
   * the pipe open does not keep the run going.
   */
  const finished = (agent: AgentProcess, pumping: Fiber.RuntimeFiber<void, StorageError>, reading: Reading) =>
    Effect.gen(function*() {
      const exitCode = yield* agent.exitCode.pipe(Effect.orElseSucceed(() => 1))
      let drained = yield* Fiber.join(pumping).pipe(Effect.timeoutOption(Duration.millis(DRAIN_MS)))
      // Output read but not yet written (storage failing) is waited for.
      while (Option.isNone(drained) && reading.writing) {
        drained = yield* Fiber.join(pumping).pipe(Effect.timeoutOption(Duration.millis(DRAIN_MS)))
      }
      if (Option.isNone(drained)) {
        yield* Fiber.interrupt(pumping)
        yield* Effect.logWarning(`dispatcher: the agent exited with code ${exitCode} but its output stayed open; stopped reading`)
      }
      return exitCode
    })

  /** Stops an agent: the cancel message, then SIGTERM, then SIGKILL, each after the grace period. */
  const stopAgent = (agent: AgentProcess) =>
    Effect.gen(function*() {
      yield* agent.send(cancelMessage).pipe(Effect.ignore)
      const exited = yield* agent.exitCode.pipe(Effect.timeoutOption(Duration.millis(settings.cancelGraceMs)), Effect.orElseSucceed(() => Option.some(-1)))
      if (Option.isNone(exited)) yield* agent.terminate(settings.cancelGraceMs)
    })

  const harnessCommand = (env: StoredEnvironment | undefined) => [
    "/bin/sh",
    "-c",
    `exec ${env?.item.config.harness ?? settings.harness}`
  ]

  const agentEnv = (runId: RunId, executionId: ExecutionId, token: string) => ({
    AGENT_RUNS_RUN_ID: runId,
    AGENT_RUNS_EXECUTION_ID: executionId,
    AGENT_RUNS_API_URL: settings.apiBaseUrl,
    AGENT_RUNS_RUN_TOKEN: token
  })

  /** What the agent receives besides the run itself: its skill, read again, and its MCP servers resolved. */
  const agentInputs = (run: StoredRun) =>
    Effect.gen(function*() {
      const spec = run.item.agent_config.skill_spec
      let skill: StartMessage["skill"] = null
      if (spec !== undefined) {
        const found = yield* readSkill(repos, run.team_uid, spec).pipe(
          Effect.mapError((e) => new InputsUnavailable({ message: `skill ${spec}: ${e.message}` }))
        )
        if (Option.isNone(found)) {
          return yield* new InputsUnavailable({ message: `skill ${spec} is no longer available (missing or malformed)` })
        }
        const { content, description, id, name, path } = found.value
        skill = { spec: id, name, description, path, content }
      }
      const servers = run.item.agent_config.mcp_servers
      if (Option.isNone(secrets)) {
        const needing = Object.entries(servers ?? {}).find(([, s]) =>
          ("server_id" in s && s.server_id !== undefined) || secretReferences(s as McpDirectServer).length > 0
        )
        if (needing !== undefined) {
          return yield* new InputsUnavailable({ message: `MCP server ${needing[0]} needs team secrets, which cannot be read here` })
        }
        return { skill, mcp_servers: servers ?? {} }
      }
      const mcp_servers = yield* resolveMcpServers(secrets.value, run.team_uid, servers).pipe(
        Effect.catchTags({
          StorageError: () => new InputsUnavailable({ message: "the team's secrets could not be read" }),
          McpResolutionFailed: (e) => new InputsUnavailable({ message: e.message })
        })
      )
      return { skill, mcp_servers }
    })

  const startMessage = (
    run: StoredRun,
    executionId: ExecutionId,
    sandbox: Sandbox,
    token: string,
    mode: "normal" | "debug",
    followups: ReadonlyArray<string>,
    history: StartMessage["history"],
    inputs: Pick<StartMessage, "skill" | "mcp_servers">
  ): StartMessage => ({
    type: "start",
    run_id: run.item.run_id,
    execution_id: executionId,
    conversation_id: run.item.conversation_id,
    mode,
    prompt: run.item.prompt,
    title: run.item.title,
    base_prompt: run.item.agent_config.base_prompt ?? null,
    model_id: run.item.agent_config.model_id ?? null,
    skill: inputs.skill,
    mcp_servers: inputs.mcp_servers,
    attachments: sandbox.attachments,
    history,
    followups,
    api: { base_url: settings.apiBaseUrl, run_token: token }
  })

  /** Runs one claimed execution to its end. */
  const execute = (claimed: StoredRun, executionId: ExecutionId): Effect.Effect<void, never, Scope.Scope> =>
    Effect.gen(function*() {
      const runId = claimed.item.run_id
      const lost = yield* Deferred.make<void>()
      // Renew the lease while the execution lives; a renewal refused means the run was taken away.
      // One that storage failed is tried again (logged once per outage): the agent goes on, and
      // the sweep leaves the lease alone until the holder could renew it again (Health.ts).
      const renewals = outage(health, "dispatcher: lease renewal (the agent goes on)")
      yield* Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* store.renewLease(runId, executionId, now + settings.leaseMs)
        yield* renewals.succeeded
      }).pipe(
        Effect.catchTag("StorageError", renewals.failed),
        Effect.repeat(Schedule.spaced(Duration.millis(Math.max(10, Math.floor(settings.leaseMs / 3))))),
        Effect.catchTag("StaleWrite", () => Deferred.succeed(lost, undefined)),
        Effect.delay(Duration.millis(Math.floor(settings.leaseMs / 3))),
        Effect.forkScoped
      )

      const envUid = claimed.item.environment_id
      const env = envUid === null ? undefined : Option.getOrUndefined(yield* environments.get(envUid).pipe(Effect.orElseSucceed(() => Option.none())))
      // With nothing to set up, the setup's start is written together with the agent's start.
      const setupStarted = RunEvent.EnvironmentSetupStarted({ executionId })
      const trivial = env === undefined && envUid === null
      if (!trivial) yield* advance(runId, setupStarted, executionId)
      if (envUid !== null && env === undefined) {
        const failed = yield* advance(
          runId,
          RunEvent.EnvironmentSetupFailed({ executionId, message: `environment ${envUid} no longer exists` }),
          executionId
        )
        return yield* admitAfter(failed.team_uid)
      }
      const inputs = yield* agentInputs(claimed).pipe(Effect.either)
      if (Either.isLeft(inputs)) {
        const failed = yield* advance(
          runId,
          [...(trivial ? [setupStarted] : []), RunEvent.EnvironmentSetupFailed({ executionId, message: inputs.left.message })],
          executionId
        )
        return yield* admitAfter(failed.team_uid)
      }
      const token = yield* tokens.issue({ run_id: runId, execution_id: executionId })
      const prepared = yield* executor.prepare({
        run_id: runId,
        execution_id: executionId,
        team_uid: claimed.team_uid,
        docker_image: env?.item.config.docker_image ?? null,
        repos: env?.item.config.github_repos ?? [],
        setup_commands: env?.item.config.setup_commands ?? [],
        attachments: yield* runAttachments(blobs, claimed.item).pipe(
          Effect.catchAll((e) => Effect.as(Effect.logWarning(`dispatcher: the attachments of run ${runId} could not be read`, e), []))
        ),
        env: {}
      }).pipe(Effect.either)
      if (Either.isLeft(prepared)) {
        const error = prepared.left
        if (error._tag === "ExecutorError") {
          yield* Effect.logError(`dispatcher: the executor failed for run ${runId}: ${error.message}`)
          const ended = yield* advance(
            runId,
            RunEvent.Error({ executionId, errorCode: "internal_error", message: `the executor failed: ${error.message}` }),
            executionId
          )
          return yield* admitAfter(ended.team_uid)
        }
        const retention = onWorker ? 0 : (env?.item.config.failure_session_retention_minutes ?? 0) * 60_000
        const failed = yield* advance(
          runId,
          RunEvent.EnvironmentSetupFailed({ executionId, message: error.message, retentionMillis: retention }),
          executionId
        ).pipe(Effect.tapError(() => error.sandbox.release))
        yield* touchEnvironment(failed, true)
        if (failed.sandbox_retained) {
          retained.set(runId, { sandbox: error.sandbox, debugging: false })
        } else {
          yield* error.sandbox.release
        }
        return yield* admitAfter(failed.team_uid)
      }
      const sandbox = prepared.right
      yield* Effect.addFinalizer(() => sandbox.release)

      const followups = yield* store.takeFollowups(runId).pipe(Effect.orElseSucceed(() => []))
      const history = claimed.item.execution_count > 1 ? historyOf(yield* store.conversation(runId).pipe(Effect.orElseSucceed(() => []))) : []
      const agent = yield* sandbox.start(harnessCommand(env), agentEnv(runId, executionId, token)).pipe(
        Effect.catchTag("ExecutorError", (error) =>
          advance(
            runId,
            RunEvent.Error({ executionId, errorCode: "internal_error", message: `the agent could not start: ${error.message}` }),
            executionId
          ).pipe(Effect.zipRight(Effect.fail(new Lost())))
        )
      )
      // The agent starts working while its start is written; if the write finds the run moved on
      // (a cancel meanwhile), the execution ends and its scope stops the agent.
      yield* agent.send(startMessage(claimed, executionId, sandbox, token, "normal", followups.map((f) => f.message), history, inputs.right)).pipe(
        Effect.ignore
      )
      const started = yield* advance(
        runId,
        [
          ...(trivial ? [setupStarted] : []),
          RunEvent.EnvironmentSetupSucceeded({ executionId }),
          RunEvent.Start({ executionId })
        ],
        executionId,
        (next, now) => ({
          ...next,
          item: new RunItem({ ...next.item, started_at: next.item.started_at ?? DateTime.unsafeMake(now) }, true)
        })
      )
      yield* touchEnvironment(started, false)

      const state = newExecutionState(executionId)
      const log: ConversationWriter = { seq: 1, inflight: undefined }
      const held = { base: started, written: "" }
      const violated = yield* Deferred.make<void>()
      const reading: Reading = { writing: false }
      const holding: Holding = { lost: false }
      const pumping = yield* pump(runId, agent, state, violated, reading, holding).pipe(Effect.forkScoped)
      const output: Output = { runId, executionId, state, log, held }
      const flushing = yield* flush(output).pipe(
        Effect.repeat(Schedule.spaced(Duration.millis(settings.flushMs))),
        Effect.forkScoped
      )
      const stopped = yield* Ref.make(false)
      // Stops the agent of a run this execution no longer holds (cancelled, or its lease lost).
      const stop = Effect.gen(function*() {
        if (yield* Ref.getAndSet(stopped, true)) return
        holding.lost = true
        yield* stopAgent(agent)
      })
      // Watch for a cancel (or a lost lease) and for follow-ups to deliver. While storage fails the
      // agent goes on (logged once per outage).
      const watches = outage(health, "dispatcher: watching the run (the agent goes on)")
      const watching = yield* Effect.gen(function*() {
        const found = yield* store.get(runId)
        const run = Option.getOrUndefined(found)
        if (run === undefined || run.item.state !== "INPROGRESS" || run.lease?.execution_id !== executionId) {
          return yield* Effect.fail(new Lost())
        }
        const messages = yield* store.takeFollowups(runId)
        for (const f of messages) yield* agent.send(followupMessage(f.message, "normal")).pipe(Effect.ignore)
        yield* watches.succeeded
      }).pipe(
        Effect.catchTag("StorageError", watches.failed),
        Effect.repeat(Schedule.spaced(Duration.millis(settings.watchMs))),
        Effect.catchAll(() => stop),
        Effect.forkScoped
      )
      yield* Deferred.await(lost).pipe(Effect.zipRight(stop), Effect.forkScoped)
      // An agent that broke the protocol is stopped; its run fails (below) with the reason.
      yield* Deferred.await(violated).pipe(Effect.zipRight(stopAgent(agent)), Effect.forkScoped)

      const exitCode = yield* finished(agent, pumping, reading)
      yield* Fiber.interrupt(watching)
      yield* Fiber.interrupt(flushing)
      yield* flushLast(output, holding)
      if (yield* Ref.get(stopped)) {
        const run = Option.getOrUndefined(yield* store.get(runId).pipe(Effect.orElseSucceed(() => Option.none())))
        if (run !== undefined) yield* admitAfter(run.team_uid)
        return
      }
      const outcome = outcomeOf(state, exitCode)
      const event = outcome._tag === "Succeeded"
        ? RunEvent.Succeed({ executionId, message: outcome.message })
        : outcome._tag === "Blocked"
        ? RunEvent.Block({ executionId, message: outcome.message })
        : RunEvent.Fail({ executionId, errorCode: outcome.error_code, message: outcome.message })
      const ended = yield* advance(runId, event, executionId)
      yield* touchEnvironment(ended)
      yield* admitAfter(ended.team_uid)
    }).pipe(
      Effect.catchTag("Lost", () => Effect.logDebug(`dispatcher: run ${claimed.item.run_id} moved on without this execution`)),
      Effect.catchAllCause((cause) =>
        Effect.logError(`dispatcher: execution of run ${claimed.item.run_id} failed`, cause).pipe(
          Effect.zipRight(
            advance(
              claimed.item.run_id,
              RunEvent.Error({ executionId, errorCode: "internal_error", message: "the service failed while running the agent" }),
              executionId
            ).pipe(Effect.ignore)
          )
        )
      ),
      Effect.annotateLogs({ run_id: claimed.item.run_id, execution_id: executionId })
    )

  // -------------------------------------------------------------------------------------------
  // Debug sessions in retained sandboxes

  const debugSession = (runId: RunId, keep: Retained, first: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const found = yield* store.get(runId)
      if (Option.isNone(found)) return
      const run = found.value
      const executionId = yield* ids.executionId
      const token = yield* tokens.issue({ run_id: runId, execution_id: executionId })
      const envUid = run.item.environment_id
      const env = envUid === null ? undefined : Option.getOrUndefined(yield* environments.get(envUid))
      const agent = yield* keep.sandbox.start(harnessCommand(env), agentEnv(runId, executionId, token))
      const inputs = yield* agentInputs(run).pipe(
        Effect.tapError((e) => Effect.logWarning(`dispatcher: debug session of run ${runId} without skill and MCP servers: ${e.message}`)),
        Effect.orElseSucceed(() => ({ skill: null, mcp_servers: {} }))
      )
      yield* agent.send(startMessage(run, executionId, keep.sandbox, token, "debug", first, [], inputs)).pipe(Effect.ignore)
      const state = newExecutionState(executionId)
      const log: ConversationWriter = { seq: 1, inflight: undefined }
      const violated = yield* Deferred.make<void>()
      const reading: Reading = { writing: false }
      const holding: Holding = { lost: false }
      const pumping = yield* pump(runId, agent, state, violated, reading, holding).pipe(Effect.forkScoped)
      yield* Deferred.await(violated).pipe(Effect.zipRight(stopAgent(agent)), Effect.forkScoped)
      const output: Output = { runId, executionId, state, log, held: undefined }
      const flushing = flush(output)
      const delivering = yield* Effect.gen(function*() {
        for (const f of yield* store.takeFollowups(runId)) yield* agent.send(followupMessage(f.message, "debug")).pipe(Effect.ignore)
        yield* flushing
      }).pipe(Effect.repeat(Schedule.spaced(Duration.millis(settings.watchMs))), Effect.ignore, Effect.forkScoped)
      yield* finished(agent, pumping, reading)
      yield* Fiber.interrupt(delivering)
      yield* flushLast(output, holding)
    }).pipe(
      Effect.scoped,
      Effect.catchAllCause((cause) => Effect.logWarning(`dispatcher: debug session of run ${runId} failed`, cause)),
      Effect.ensuring(Effect.sync(() => (keep.debugging = false)))
    )

  /** Ends the debug windows that are over, and starts debug agents for waiting follow-ups. */
  const tendRetained = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    for (const [runId, keep] of retained) {
      const run = Option.getOrUndefined(yield* store.get(runId))
      const open = run !== undefined && isDebugWindowOpen(runSnapshot(run), now)
      if (!open) {
        if (keep.debugging) continue
        retained.delete(runId)
        yield* keep.sandbox.release
        if (run !== undefined && run.sandbox_retained) {
          yield* unlessLost(advanceOnce(runId, RunEvent.SandboxReleased(), yield* currentExecution(store, ids, run)))
        }
        continue
      }
      if (keep.debugging) continue
      const waiting = yield* store.takeFollowups(runId)
      if (waiting.length === 0) continue
      keep.debugging = true
      yield* debugSession(runId, keep, waiting.map((f) => f.message)).pipe(Effect.forkIn(scope))
    }
  })

  // -------------------------------------------------------------------------------------------
  // Start-up and the loops

  /** Takes back the sandboxes of an earlier life: open debug windows are kept, the rest released. */
  const recover = Effect.gen(function*() {
    const leftovers = yield* executor.leftovers.pipe(
      Effect.catchAll((e) => Effect.logWarning("dispatcher: could not list leftover sandboxes", e).pipe(Effect.as([])))
    )
    const now = yield* Clock.currentTimeMillis
    for (const sandbox of leftovers) {
      const run = Option.getOrUndefined(yield* store.get(sandbox.run_id).pipe(Effect.orElseSucceed(() => Option.none())))
      if (run !== undefined && isDebugWindowOpen(runSnapshot(run), now) && !retained.has(run.item.run_id)) {
        retained.set(run.item.run_id, { sandbox, debugging: false })
      } else {
        yield* sandbox.release
      }
    }
    if (leftovers.length > 0) yield* Effect.logInfo(`dispatcher: found ${leftovers.length} sandboxes of an earlier run of the service`)
  })

  /** Claims and starts runs while there are free slots and queued runs. */
  const claimSome: Effect.Effect<void, StorageError> = claiming.withPermits(1)(
    Effect.gen(function*() {
      while (running < settings.concurrency) {
        const executionId = yield* ids.executionId
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* store.claim({ worker_host: settings.workerHost ?? null, execution_id: executionId, now, lease_ms: settings.leaseMs })
        if (Option.isNone(claimed)) return
        yield* logClaimed(claimed.value, executionId)
        running += 1
        yield* execute(claimed.value, executionId).pipe(
          Effect.scoped,
          // A slot is free again: look for more work at once (interruptible: a finalizer is not,
          // and what it forks would inherit that).
          Effect.ensuring(Effect.suspend(() => {
            running -= 1
            return Effect.forkIn(Effect.interruptible(claimQuietly), scope)
          })),
          Effect.forkIn(scope)
        )
      }
    })
  )

  /** `claimSome` on a wake-up or a freed slot: a failure is left to the polling loop to report. */
  const claimQuietly = claimSome.pipe(Effect.catchAllCause((cause) => Effect.logDebug("dispatcher: claim failed", cause)))

  return { claimSome, claimQuietly, sweep, tendRetained, recover } as const
})

/**
 * The dispatcher's loops, for the scope of the layer: recovery first, then claiming (on every
 * wake-up and every `pollMs`), the sweep and the retained sandboxes (every `sweepMs`), each
 * supervised (Health.ts): a failing iteration is reported and retried, never the end of the loop.
 */
export const layer: Layer.Layer<
  never,
  never,
  DispatcherConfig | RunStore | EnvironmentStore | IdentityStore | Executor | BlobStore | RunTokens | Ids | RepoSource | Health
> = Layer.scopedDiscard(
  Effect.gen(function*() {
    const settings = yield* DispatcherConfig
    const store = yield* RunStore
    const dispatcher = yield* make(yield* Effect.scope)
    yield* dispatcher.recover
    // Wake-ups only hasten claiming (the poll finds the same runs): a broken subscription is
    // opened again, and not reported.
    yield* store.wakeups.pipe(
      Stream.runForEach(() => dispatcher.claimQuietly),
      Effect.zipRight(Effect.fail("the wake-ups ended")),
      Effect.catchAllCause((cause) => Effect.logWarning("dispatcher: wake-ups failed; polling until they are back", cause)),
      Effect.zipRight(Effect.sleep(Duration.millis(settings.pollMs))),
      Effect.forever,
      Effect.forkScoped
    )
    yield* supervise("dispatcher claim loop", dispatcher.claimSome, settings.pollMs).pipe(Effect.forkScoped)
    if (settings.workerHost === undefined) {
      yield* supervise("dispatcher lease sweep", dispatcher.sweep, settings.sweepMs).pipe(Effect.forkScoped)
    }
    yield* supervise("dispatcher debug windows", dispatcher.tendRetained, settings.sweepMs).pipe(Effect.forkScoped)
  })
)
