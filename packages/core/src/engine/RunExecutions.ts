/**
 * The server's records of executions, over storage: what an execution's claim, events, report,
 * follow-ups and lease do to its stored run. One implementation for every execution, wherever its
 * agent runs: the server's own (LocalHost.ts) and self-hosted workers' (the worker endpoints,
 * Workers.ts), so a worker's events are applied exactly like the server's. The sweep and debug
 * windows (Supervisor.ts, DebugWindows.ts) write through it too.
 *
 * - Every state change is a `RunStateMachine.transition` written with a guard on the state and
 *   lease holder (`advance`); a guard that fails means someone else moved the run: `Lost`.
 * - A lease that lapsed while storage failed (renewals failed too) is still its execution's as long
 *   as no one took the run: the holder's next write renews it first.
 * - After an execution's events: the environment's `setup_failed` and newest-run summary are kept
 *   current, and an ended run's team admits its next waiting runs.
 */
import { Chunk, Clock, DateTime, Effect, Either, Option, Stream } from "effect"
import type { Shaper } from "../domain/Access.js"
import type { Artifact } from "../domain/Artifact.js"
import type { ConversationPart } from "../domain/ConversationLog.js"
import { EVENT_PAYLOAD_NAME, eventPayloadKey, runImagesKey, transcriptKey } from "../domain/BlobKeys.js"
import type { ConversationStep } from "../domain/Conversation.js"
import { heldBy } from "../domain/BudgetTree.js"
import { historyOf } from "../domain/Harness.js"
import { Ids } from "../domain/Ids.js"
import type { ExecutionId, RunId, TeamUid } from "../domain/Ids.js"
import { concatBytes } from "../internal/Bytes.js"
import { BlobStore } from "../ports/BlobStore.js"
import { EnvironmentStore } from "../ports/EnvironmentStore.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { RunStore } from "../ports/RunStore.js"
import type { NewTimelineEvent, StoredRun } from "../ports/RunStore.js"
import { RunTokens } from "../ports/RunTokens.js"
import { GitHost, GitHubHosts } from "../ports/GitHost.js"
import { SecretStore } from "../ports/SecretStore.js"
import { gitHubAccess } from "../internal/GitHubAccess.js"
import { secretOf } from "../domain/GitHub.js"
import { secretsRefusalOf } from "../domain/RunTokenRole.js"
import { type StorageError, StaleWrite } from "../ports/Storage.js"
import { WorkerStore } from "../ports/WorkerStore.js"
import { decodeImageData, decodeKeptImages, RunItem } from "../domain/Run.js"
import { isTerminal } from "../domain/RunState.js"
import { RunEvent, transition } from "../domain/RunStateMachine.js"
import { applyTransition, currentExecution, eventsAt, guardOf, holds, noteAbsentWorker, runSnapshot } from "../domain/RunRecords.js"
import { logClaimed, logTransition } from "../domain/RunLog.js"
import type { TimelineEventType } from "../domain/Timeline.js"
import type { ExecutionEvent, Report } from "../domain/ExecutionEvent.js"
import { toRunEvent } from "../domain/ExecutionEvent.js"
import { Lost } from "./ExecutionHost.js"
import type { OutputSink, Recorded } from "./ExecutionHost.js"
import type { ClaimedRun } from "./ExecutionPlan.js"
import * as HolderCopies from "./HolderCopies.js"

/**
 * A run's item with what its agent reported (session, usage, status) at `now`. The status line is
 * informational: an ended run keeps the status message of its outcome (an agent stopped for its
 * budget may say "cancelled" on its way out).
 */
const reportedItem = (item: RunItem, reported: Report, now: number): RunItem =>
  new RunItem({
    ...item,
    ...(reported.session_id === undefined ? {} : { session_id: reported.session_id, session_link: reported.session_link ?? null }),
    request_usage: reported.request_usage,
    ...(reported.status === undefined || isTerminal(item.state) ? {} : { status_message: { message: reported.status } }),
    updated_at: DateTime.unsafeMake(now)
  }, true)

export class RunExecutions extends Effect.Service<RunExecutions>()("@agent-runs/core/RunExecutions", {
  effect: Effect.gen(function*() {
    const store = yield* RunStore
    const blobs = yield* BlobStore
    const environments = yield* EnvironmentStore
    const identities = yield* IdentityStore
    const tokens = yield* RunTokens
    const ids = yield* Ids
    // The team's GitHub host for the repositories of its runs (taken once, as built).
    const github = gitHubAccess(identities, yield* SecretStore, yield* GitHost, yield* GitHubHosts)
    /** A connected team's host, for a run whose environment names repositories or whose agent gets the token (see ClaimedRun.github). */
    const githubOf = (team: TeamUid, needed: boolean): Effect.Effect<ClaimedRun["github"], StorageError> =>
      !needed
        ? Effect.succeed(undefined)
        : github(team).pipe(
          Effect.map(Option.match({ onNone: () => undefined, onSome: (a) => ({ base_url: a.connection.base_url, api_url: a.apiUrl, token: a.token, secret: secretOf(a.connection.auth)[1] }) })),
          Effect.catchTag("GitHostError", (e) => Effect.succeed({ failure: e.message }))
        )
    // Worker presence: a run queued again for a worker that is not connected says so.
    const presence = yield* Effect.serviceOption(WorkerStore)

    /** What holders wrote or claimed last (HolderCopies.ts): their next write needs no read. */
    const copies = HolderCopies.make()

    /**
     * The run a write of `executionId` starts from: `current` (the caller just read it), else the
     * holder's copy (`copied`), else the run as stored now.
     */
    const runOf = (runId: RunId, executionId: ExecutionId, current: StoredRun | undefined) => {
      if (current !== undefined) return Effect.succeed({ copied: false, found: Option.some(current) })
      const copy = copies.of(runId, executionId)
      return copy === undefined
        ? Effect.map(store.get(runId), (found) => ({ copied: false, found }))
        : Effect.succeed({ copied: true, found: Option.some(copy) })
    }

    /**
     * Writes `next` over `run`, guarded by the whole of `run` (its state, holder, and every column
     * the write replaces: a write since, by anyone, makes it a StaleWrite), and keeps `next` as the
     * holder's copy.
     */
    const writeFrom = (runId: RunId, executionId: ExecutionId, run: StoredRun, next: StoredRun, events: ReadonlyArray<NewTimelineEvent>) =>
      Effect.tap(store.update(runId, { ...guardOf(run), expected: run }, next, events), () => copies.keep(executionId, next))

    /**
     * `attempt`, given `current` on its first run only: a retry of it (after a StaleWrite) starts
     * from the run as copied or stored, never from the same stale read again.
     */
    const fromCurrentOnce = <A, E, R>(current: StoredRun | undefined, attempt: (current: StoredRun | undefined) => Effect.Effect<A, E, R>) => {
      let first = current
      return Effect.suspend(() => {
        const given = first
        first = undefined
        return attempt(given)
      })
    }

    /** Forgets the holder's copy when `effect` fails (it may be stale, or the run lost). */
    const droppingCopy = <A, E, R>(executionId: ExecutionId, effect: Effect.Effect<A, E, R>) =>
      Effect.tapError(effect, () => Effect.sync(() => copies.drop(executionId)))

    /**
     * Applies `event` (several in order, written at once) to the current run (`runOf`), guarded by
     * the whole run it started from (`writeFrom`), with `change` applied to the result. A lost race
     * or a stale copy is tried again from the run as stored, three times; `Lost` when the event no
     * longer applies. With `renewFor`, the writer is the execution holding the run, and renews its
     * lapsed lease by that long first (never the sweep writing for a gone holder). Answers the run
     * written and whether a run of its team waited for admission then.
     */
    const advance = (
      runId: RunId,
      event: RunEvent | ReadonlyArray<RunEvent>,
      executionId: ExecutionId,
      options: {
        readonly change?: (next: StoredRun, now: number) => StoredRun
        readonly renewFor?: number
        readonly current?: StoredRun
      } = {}
    ): Effect.Effect<{ readonly next: StoredRun; readonly waiting: boolean }, Lost | StorageError> =>
      fromCurrentOnce(options.current, (current) => droppingCopy(executionId, Effect.gen(function*() {
        const { copied, found } = yield* runOf(runId, executionId, current)
        if (Option.isNone(found)) return yield* new Lost()
        const now = yield* Clock.currentTimeMillis
        let run = found.value
        const renewFor = options.renewFor
        if (renewFor !== undefined && run.lease !== null && run.lease.execution_id === executionId && run.lease.expires_at <= now) {
          yield* store.renewLease(runId, executionId, now + renewFor)
          run = { ...run, lease: { ...run.lease, expires_at: now + renewFor } }
        }
        let next = run
        const timeline: Array<TimelineEventType> = []
        for (const e of Array.isArray(event) ? event : [event]) {
          const moved = transition(runSnapshot(next), e as RunEvent, now)
          // Refused by a copy: it may be stale, so the run is read again before giving up.
          if (Either.isLeft(moved)) return yield* (copied ? new StaleWrite({ what: `run ${runId} (the holder's copy)` }) : new Lost())
          next = applyTransition(next, moved.right, now)
          timeline.push(...moved.right.timeline)
        }
        if (options.change !== undefined) next = options.change(next, now)
        const { waiting } = yield* writeFrom(runId, executionId, run, next, yield* noteAbsentWorker(presence, next, eventsAt(timeline, now, executionId), now))
        yield* logTransition(run, next, executionId)
        return { next, waiting }
      }))).pipe(
        Effect.retry({ times: 3, while: (e) => e._tag === "StaleWrite" }),
        Effect.catchTag("StaleWrite", () => Effect.fail(new Lost()))
      )

    /** `advance` by the sweep or a debug window: none when the run moved on. */
    const advanceUnlessLost = (runId: RunId, event: RunEvent, executionId: ExecutionId, change?: (next: StoredRun) => StoredRun) =>
      advance(runId, event, executionId, change === undefined ? {} : { change }).pipe(
        Effect.map(({ next }) => Option.some(next)),
        Effect.catchTag("Lost", () => Effect.succeedNone)
      )

    /**
     * Queues a team's PENDING runs, oldest first, while it has capacity. Most teams have none
     * waiting: one read says so (with the count of runs holding capacity), before anything else
     * is read (statements per run, docs/performance.md).
     */
    const admit = (team: TeamUid) =>
      Effect.gen(function*() {
        const { active, waiting } = yield* store.admission(team)
        if (!waiting) return
        const found = yield* identities.getTeam(team)
        if (Option.isNone(found)) return
        const room = found.value.max_concurrent_runs - active
        if (room <= 0) return
        for (const run of yield* store.pending(team, room)) {
          const executionId = yield* currentExecution(store, ids, run)
          yield* advanceUnlessLost(run.item.run_id, RunEvent.CapacityFreed(), executionId, (next) => ({ ...next, at_capacity: false }))
        }
      })

    /** Keeps the environment's `setup_failed` and newest-run summary current; a failure is only logged. */
    const touchEnvironment = (run: StoredRun, setupFailed: boolean | undefined) =>
      Effect.gen(function*() {
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
      }).pipe(Effect.catchAll((e) => Effect.logWarning("execution: could not update the environment", e)))

    /** The files a run's agent gets: the webhook delivery's payload that started it, its images. */
    const attachmentsOf = (item: RunItem) =>
      Effect.gen(function*() {
        const deliveryId = item.metadata["delivery_id"]
        const attachments: Array<ClaimedRun["attachments"][number]> = []
        if (item.source === "WEBHOOK" && deliveryId !== undefined) {
          const blob = yield* blobs.read(eventPayloadKey(deliveryId))
          if (Option.isSome(blob)) {
            const bytes = concatBytes(Chunk.toReadonlyArray(yield* Stream.runCollect(blob.value)))
            attachments.push({ name: EVENT_PAYLOAD_NAME, media_type: "application/json", bytes })
          }
        }
        const images = yield* blobs.read(runImagesKey(item.run_id))
        if (Option.isSome(images)) {
          const text = new TextDecoder().decode(concatBytes(Chunk.toReadonlyArray(yield* Stream.runCollect(images.value))))
          for (const image of decodeKeptImages(text)) {
            const bytes = decodeImageData(image.data)
            if (bytes !== undefined) attachments.push({ name: image.name, media_type: image.mime_type, bytes })
          }
        }
        return attachments
      })

    /**
     * The conversation so far: the earlier runs of its conversation (a run created with
     * `conversation_id`), then this run's earlier executions. A run whose conversation carries its
     * own id started it: no run came before it (Runs.ts).
     */
    const historyFor = (item: RunItem) =>
      Effect.gen(function*() {
        const earlier: Array<ConversationStep> = []
        if (item.conversation_id !== null && item.conversation_id !== item.run_id) {
          for (const r of yield* store.findByConversation(item.conversation_id)) {
            if (r.item.run_id === item.run_id) break
            earlier.push(...(yield* store.conversation(r.item.run_id)))
          }
        }
        if (item.execution_count > 1) earlier.push(...(yield* store.conversation(item.run_id)))
        return historyOf(earlier)
      })

    /** What a run's children hold of its budget (Budget.committedBy). */
    const childrenHold = (runId: RunId) => Effect.map(store.descendants(runId), (found) => heldBy(runId, found))

    /**
     * What a claimed run's execution needs from storage (read failures: left out, as before a
     * retry). Its environment and shapers first; then what storage holds, side by side; then the
     * team's Git host.
     */
    const gather = (run: StoredRun, executionId: ExecutionId, host: Shaper | undefined): Effect.Effect<ClaimedRun, StorageError> =>
      Effect.gen(function*() {
        const item = run.item
        const runId = item.run_id
        const uid = item.environment_id
        const env = uid === null ? Option.none() : yield* environments.get(uid)
        // Its last editor shapes this execution (setup commands, harness), and so does the worker
        // that runs it (a self-hosted worker executes whatever it likes): recorded before the agent
        // gets its token, which then acts with no more than their roles.
        const shapers = [...(Option.isSome(env) ? [env.value.editor] : []), ...(host === undefined ? [] : [host])]
        if (shapers.length > 0) yield* store.addShapers(runId, shapers)
        const read = yield* Effect.all({
          refusal: secretsRefusalOf(store, identities, run),
          attachments: attachmentsOf(item),
          history: historyFor(item),
          run_token: tokens.issue({ run_id: runId, execution_id: executionId }),
          transcript_bytes: blobs.size(transcriptKey(runId)),
          descendants_committed: item.agent_config.max_cost_usd === undefined ? Effect.succeed(0) : childrenHold(runId)
        }, { concurrency: "unbounded" })
        // Last, once the rest is read: it may mint a token at the Git host.
        const github = yield* githubOf(
          run.team_uid,
          item.agent_config.github_token === true || Option.exists(env, (e) => e.item.config.github_repos.length > 0)
        )
        return {
          ...read,
          github,
          run: item,
          team_uid: run.team_uid,
          execution_id: executionId,
          environment: Option.match(env, { onNone: () => null, onSome: (e) => e.item.config }),
          environment_missing: uid !== null && Option.isNone(env)
        }
      })

    /**
     * Claims the next QUEUED run for `worker_host` (null: the server's own; RunStore.claim) under a lease of
     * `execution_id`, and gathers what its execution needs. What cannot be read once claimed is
     * read again (a few times); then the execution goes on without it (no history, no attachment)
     * rather than wait for its lease to expire.
     */
    const claim = (params: {
      readonly worker_host: string | null
      readonly team_uid?: TeamUid | undefined
      readonly execution_id: ExecutionId
      readonly lease_ms: number
      /** The principal of the self-hosted worker claiming (it shapes what runs). */
      readonly host?: Shaper | undefined
    }): Effect.Effect<Option.Option<ClaimedRun>, StorageError> =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const { host: _host, ...where } = params
        const claimed = yield* store.claim({ ...where, now })
        if (Option.isNone(claimed)) return Option.none()
        const run = claimed.value
        copies.keep(params.execution_id, run)
        yield* logClaimed(run, params.execution_id)
        return Option.some(yield* gather(run, params.execution_id, params.host).pipe(Effect.retry({ times: 3 })))
      })

    /**
     * Takes up an execution an earlier process of the service left running (its agent adopted):
     * what it needs, gathered as for a claim, while it still holds its run (its lease renewed);
     * none otherwise.
     */
    const resume = (runId: RunId, executionId: ExecutionId, leaseMs: number): Effect.Effect<Option.Option<ClaimedRun>, StorageError> =>
      Effect.gen(function*() {
        const found = yield* store.get(runId)
        if (Option.isNone(found) || !holds(found.value, executionId)) return Option.none()
        copies.keep(executionId, found.value)
        const renewed = yield* renew(runId, executionId, leaseMs).pipe(Effect.as(true), Effect.catchTag("Lost", () => Effect.succeed(false)))
        if (!renewed) return Option.none()
        return Option.some(yield* gather(found.value, executionId, undefined).pipe(Effect.retry({ times: 3 })))
      })

    /**
     * Records an execution's events, with what its agent reported last when there is `report` (in
     * the same write); keeps its environment current and admits after its end. With `renewFor`, a
     * lease that lapsed while storage failed is renewed first (the server's own executions);
     * without, a lapsed lease is lost.
     */
    const record = (
      runId: RunId,
      executionId: ExecutionId,
      events: ReadonlyArray<ExecutionEvent>,
      options: { readonly renewFor?: number | undefined; readonly report?: Report | undefined; readonly current?: StoredRun } = {}
    ) =>
      Effect.gen(function*() {
        const started = events.some((e) => e._tag === "Start")
        const { current, renewFor, report: reported } = options
        // Only a hand-over asks how many came before it (MAX_FREE_HANDOVERS): a rare read.
        const handOvers = events.some((e) => e._tag === "HandOver")
          ? (yield* store.timeline(runId, 0)).filter((e) => e.event_type === "handed_over").length
          : 0
        const { next, waiting } = yield* advance(runId, events.map((e) => toRunEvent(e, executionId, handOvers)), executionId, {
          ...(renewFor === undefined ? {} : { renewFor }),
          ...(current === undefined ? {} : { current }),
          change: (run, now) => {
            const item = reported === undefined ? run.item : reportedItem(run.item, reported, now)
            return started && item.started_at === null
              ? { ...run, item: new RunItem({ ...item, started_at: DateTime.unsafeMake(now) }, true) }
              : item === run.item ? run : { ...run, item }
          }
        })
        const setupFailed = events.some((e) => e._tag === "EnvironmentSetupFailed") ? true : started ? false : undefined
        yield* touchEnvironment(next, setupFailed)
        // A run that ends frees capacity: admission, when a run of the team waited as it ended.
        if (isTerminal(next.item.state) && waiting) {
          yield* admit(next.team_uid).pipe(
            Effect.catchAll((e) => Effect.logWarning("execution: admission failed; the sweep will admit later", e))
          )
        }
        return { state: next.item.state, sandbox_retained: next.sandbox_retained } satisfies Recorded
      })

    /**
     * Records what the agent reported, on the run its execution holds: from `current` (the caller
     * just read it) or the holder's copy, as `advance`; a stale copy is tried once more from a read.
     */
    const report = (runId: RunId, executionId: ExecutionId, reported: Report, current?: StoredRun) =>
      fromCurrentOnce(current, (given) => droppingCopy(executionId, Effect.gen(function*() {
        const { found } = yield* runOf(runId, executionId, given)
        if (Option.isNone(found) || !holds(found.value, executionId)) return yield* new Lost()
        const run = found.value
        const next = { ...run, item: reportedItem(run.item, reported, yield* Clock.currentTimeMillis) }
        yield* writeFrom(runId, executionId, run, next, [])
      }))).pipe(
        Effect.retry({ times: 1, while: (e) => e._tag === "StaleWrite" }),
        Effect.catchTag("StaleWrite", () => Effect.fail(new Lost()))
      )

    /** Fails `Lost` unless the execution holds the run. */
    const held = (runId: RunId, executionId: ExecutionId) =>
      Effect.gen(function*() {
        const found = yield* store.get(runId)
        if (Option.isNone(found) || !holds(found.value, executionId)) return yield* new Lost()
      })

    /** Takes the follow-ups waiting for the agent of the execution holding the run (one statement on PostgreSQL); `Lost` when it does not hold it. */
    const followups = (runId: RunId, executionId: ExecutionId) =>
      droppingCopy(executionId, store.takeHeldFollowups(runId, executionId)).pipe(
        Effect.map((taken) => taken.map((f) => f.message)),
        Effect.catchTag("StaleWrite", () => Effect.fail(new Lost()))
      )

    /** Extends the lease of the execution holding the run. */
    const renew = (runId: RunId, executionId: ExecutionId, leaseMs: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        droppingCopy(executionId, Effect.tap(store.renewLease(runId, executionId, now + leaseMs), () => copies.renewed(executionId, now + leaseMs)))).pipe(
        Effect.catchTag("StaleWrite", () => Effect.fail(new Lost()))
      )

    /** Where an execution's (or a debug session's) output goes: the run's transcript, conversation log, artifacts. */
    const output = (runId: RunId, executionId: ExecutionId): OutputSink => ({
      appendTranscript: (offset, bytes) => blobs.appendAt(transcriptKey(runId), offset, bytes),
      appendConversation: (part: ConversationPart) => store.appendConversation(runId, executionId, part),
      addArtifact: (artifact: Artifact) => store.addArtifact(runId, artifact)
    })

    return { advance, advanceUnlessLost, admit, claim, resume, record, report, held, followups, renew, childrenHold, output } as const
  })
}) {}
