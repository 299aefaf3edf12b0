/**
 * Port: runs and everything that hangs off them (executions and leases, timeline events,
 * conversations, the follow-up inbox, artifacts) and the run list. Implemented by the SQLite and
 * PostgreSQL adapters; both pass the conformance suite.
 *
 * What a run's parts are owned by:
 * - `metadata` and `ancestor_run_ids` are fixed when the run is created; `update` keeps them.
 * - `artifacts` only grow, through `addArtifact` (and those a run is created with); `update`
 *   keeps them, so a write based on an older read never drops an artifact.
 * - Everything else of the `StoredRun` is replaced by `update`.
 */
import type { Descendant } from "../domain/BudgetTree.js"
import type { Effect, Option, Stream } from "effect"
import { Context, Data, DateTime } from "effect"
import type { Owned, Shaper, Viewer } from "../domain/Access.js"
import type { Artifact } from "../domain/Artifact.js"
import type { AuditEntry } from "../domain/Audit.js"
import type { JsonObject } from "../domain/Common.js"
import type { ConversationStep } from "../domain/Conversation.js"
import type { ConversationPart } from "../domain/ConversationLog.js"
import type { ConversationId, ExecutionId, RunId, TeamUid } from "../domain/Ids.js"
import type { RunItem } from "../domain/Run.js"
import type { OverviewRun } from "../domain/RunOverview.js"
import type { RunListPage, RunListQuery, RunListRow, RunStateCounts } from "../domain/RunQuery.js"
import type { RunState } from "../domain/RunState.js"
import type { TimelineEvent, TimelineEventType } from "../domain/Timeline.js"
import type { DuplicateKey, ExactlyOnceKey, KeyHolder, ScheduleTickKey, StaleWrite, StorageError } from "./Storage.js"

/** What a team's runs created on one UTC day spent (Budget.ts). */
export interface DaySpend {
  /** The day, `YYYY-MM-DD`. */
  readonly day: string
  readonly runs: number
  readonly cost_usd: number
  readonly input_tokens: number
  readonly output_tokens: number
}

/** A run's current lease: the execution holding it is the fencing token. */
export interface Lease {
  readonly execution_id: ExecutionId
  readonly expires_at: number
}

/** A run as stored: its wire item plus what only the service needs. */
export interface StoredRun {
  readonly item: RunItem
  readonly team_uid: TeamUid
  readonly lease: Lease | null
  readonly at_capacity: boolean
  readonly sandbox_retained: boolean
  readonly has_conversation: boolean
}

/**
 * A run of a list as its wire JSON, with its list row (what a cursor after it is made of) read
 * only when asked for: a page cut short by the response's size limit needs one.
 */
export interface RunJson {
  readonly run_id: RunId
  readonly json: string
  readonly listRow: Effect.Effect<RunListRow, StorageError>
}

/** A run as its wire JSON, and what access decisions read of it. */
export interface OwnedRunJson {
  readonly owned: Owned
  readonly json: string
}

/** The fields of a stored run that the list query reads (the row `RunQuery.pageOf` evaluates). */
export const runListRow = (run: StoredRun): RunListRow => ({
  ...run.item,
  created_at: DateTime.toEpochMillis(run.item.created_at),
  updated_at: DateTime.toEpochMillis(run.item.updated_at)
})

/** What `update` saw as it wrote: whether a run of the team waits for admission (PENDING). */
export interface Updated {
  readonly waiting: boolean
}

/** A timeline event before storage numbers it. */
export interface NewTimelineEvent {
  readonly event_type: TimelineEventType
  readonly occurred_at: number
  readonly execution_id: ExecutionId
  readonly message?: string
  readonly data?: JsonObject
}

/**
 * A run to create with its first timeline events, who shaped it besides its creator's role now,
 * and the audit entry of its creation, written by the run store with the run (both stored, or
 * neither) into the audit log of the same storage, not through the `AuditLog` port: a host keeps
 * the run store and the audit log in one storage.
 */
export interface NewRun {
  readonly run: StoredRun
  readonly events: ReadonlyArray<NewTimelineEvent>
  readonly shapers?: ReadonlyArray<Shaper>
  readonly audit?: AuditEntry
}

/** A new run's budget carved out of its parent's (Budget.ts): checked again as it is written. */
export interface Carve {
  readonly parent_run_id: RunId
  /** The parent's `max_cost_usd`. */
  readonly parent_max_cost_usd: number
}

/** The runs of one cron tick, written by `createTicks` under the tick's key. */
export interface TickRuns {
  readonly key: ScheduleTickKey
  readonly runs: ReadonlyArray<NewRun>
}

/**
 * What `createTicks` did with one tick: its runs `written` under its key, or not, its key taken
 * before; then `holder` is the run written under the key (undefined for a tick repeated within
 * the same call, whose first occurrence is the one written).
 */
export type TickWrite =
  | { readonly written: true }
  | { readonly written: false; readonly holder: KeyHolder | undefined }

/**
 * What a conditional write expects to find: the state, the lease holder when one must hold it, and
 * with `expected` the whole run as the writer last wrote or read it.
 */
export interface RunGuard {
  readonly state: RunState
  readonly execution_id?: ExecutionId
  /**
   * The run as the writer last wrote or read it: the write applies only while everything an
   * `update` writes still holds what it would write of this copy; any other write of it since (a
   * lease renewal, a report, a follow-up, a cancel) makes the write a StaleWrite. The lease holder
   * writes from its own copy this way instead of reading the run first.
   */
  readonly expected?: StoredRun
}

/** A follow-up waiting for an agent to start. */
export interface StoredFollowup {
  readonly message: string
  readonly received_at: number
}

/** What `recordFollowup` writes, all or nothing. */
export interface FollowupWrite {
  /**
   * The run after the follow-up, when it changes more than `updated_at` (a new execution):
   * replaces the run as `update` does. Absent: only `updated_at` is set (to `at`), so a write
   * based on an older read never undoes what an executor wrote meanwhile (its lease renewals).
   */
  readonly next?: StoredRun
  /** When the follow-up arrived: the run's new `updated_at` when `next` is absent. */
  readonly at: number
  /** Timeline events appended after the last sequence. */
  readonly events: ReadonlyArray<NewTimelineEvent>
  /** The message to store in the follow-up inbox; absent: none (an empty continuation). */
  readonly followup?: StoredFollowup
  /**
   * The most messages the inbox may hold with `followup` added: when it already holds this many,
   * FollowupInboxFull and nothing written. Counted inside the write, after the guarded run update
   * (whose row lock orders concurrent follow-ups), so concurrent senders never exceed it.
   */
  readonly maxPending?: number
  /**
   * The most follow-ups, and bytes of their messages, the run may receive in its whole life, this
   * one counted (an empty continuation, without `followup`, counts as a follow-up of no bytes):
   * past either, FollowupTotalSpent and nothing written. Counted in the same write, so concurrent
   * senders never exceed it.
   */
  readonly maxTotal?: { readonly count: number; readonly bytes: number }
  /** Who sent it, recorded as one who shaped the run (with `followup`, or alone for an empty continuation). */
  readonly shaper?: Shaper
}

/** A place in a run's conversation log: an execution's `ordinal` (its order in the run) and a part's `seq`. */
export interface LogPosition {
  readonly ordinal: number
  readonly seq: number
}

/** A part of a run's conversation log, with its execution and that execution's place in the run. */
export interface LoggedPart extends ConversationPart, LogPosition {
  readonly execution_id: string
}

/**
 * An ended execution's conversation rendered once as its JSON (ConversationJson.ts), kept so
 * that reading it again writes stored text instead of folding its log (docs/performance.md).
 */
export interface RenderedConversation {
  readonly execution_id: ExecutionId
  /**
   * The items of a `steps` array, comma-separated (`""` for none): the pieces `stepsJson(steps, true)`
   * writes of its steps, joined, under `RENDERED_STEPS_SHAPE`.
   */
  readonly json: string
  /** How many parts of the execution's log it was rendered from. */
  readonly parts: number
}

/**
 * An execution's conversation for reading: its rendering when one is kept of every part it has
 * now and under the current `RENDERED_STEPS_SHAPE`; otherwise its steps folded from its log,
 * with the number of parts they were folded from (what a rendering of them records).
 */
export type ExecutionConversation =
  | { readonly _tag: "Rendered"; readonly json: string }
  | {
    readonly _tag: "Folded"
    readonly execution_id: ExecutionId
    readonly parts: number
    readonly steps: ReadonlyArray<ConversationStep>
  }

/** The run's follow-up inbox already holds `FollowupWrite.maxPending` messages its agent has not received. */
export class FollowupInboxFull extends Data.TaggedError("FollowupInboxFull")<{
  readonly pending: number
}> {}

/** The run has received `FollowupWrite.maxTotal` follow-ups, or bytes of them, already. */
export class FollowupTotalSpent extends Data.TaggedError("FollowupTotalSpent")<{
  readonly count: number
  readonly bytes: number
}> {}

export class RunStore extends Context.Tag("@agent-runs/core/RunStore")<RunStore, {
  /**
   * Creates runs and their first events, with an optional exactly-once key, in one transaction.
   * A ScheduleTick key records the tick (with the first run's id); a Delivery key logs the
   * delivery and takes its identity. When the key is already taken: DuplicateKey, nothing written.
   */
  readonly create: (runs: ReadonlyArray<NewRun>, key?: ExactlyOnceKey) => Effect.Effect<void, DuplicateKey | StorageError>
  /**
   * Writes a child run whose budget is carved out of its parent's, in one transaction with a check
   * that the parent still has that much left (children created at the same time each see the
   * others): StaleWrite when it has not, nothing written.
   */
  readonly createChild: (run: NewRun, carve: Carve) => Effect.Effect<void, StaleWrite | StorageError>
  /**
   * Creates the runs of many cron ticks in one transaction (the scheduler's batch): each tick's
   * key is taken as `create` takes it, and the runs of the ticks whose key was free are written
   * with their first events. Answers, per tick in order, whether its runs were written, and when
   * its key was taken before, the run written under it then (so a replica that lost the race, or
   * fires a tick again after the one that won stopped before recording it, can still name it).
   * Replicas writing overlapping ticks at once never deadlock and each key goes to exactly one of
   * them. A storage failure writes nothing at all.
   */
  readonly createTicks: (ticks: ReadonlyArray<TickRuns>) => Effect.Effect<ReadonlyArray<TickWrite>, StorageError>
  /** Reads one run. */
  readonly get: (runId: RunId) => Effect.Effect<Option.Option<StoredRun>, StorageError>
  /** One run as the wire JSON of its presented item, with who owns it (RunJson.ts): what `GET /agent/runs/{id}` sends. */
  readonly getJson: (runId: RunId) => Effect.Effect<Option.Option<OwnedRunJson>, StorageError>
  /** The current state of each of these runs that exists (one query, e.g. for a schedule's recent runs). */
  readonly states: (runIds: ReadonlyArray<RunId>) => Effect.Effect<ReadonlyMap<RunId, RunState>, StorageError>
  /** One page of the runs the viewer may see, filtered, sorted and keyset-paginated as `query` says. */
  readonly list: (query: RunListQuery, viewer: Viewer) => Effect.Effect<RunListPage<StoredRun>, StorageError>
  /**
   * The same page as `list`, each run as the wire JSON of its presented item (`presentRun`,
   * RunJson.ts): what `GET /agent/runs` sends, served from stored documents where it can be.
   */
  readonly listJson: (query: RunListQuery, viewer: Viewer) => Effect.Effect<RunListPage<RunJson>, StorageError>
  /**
   * How many of the runs the viewer may see pass the query's filters, by state (every state, zeros
   * included): the runs `list` would page through, counted in one query. Sort, limit and cursor
   * play no part.
   */
  readonly countByState: (query: RunListQuery, viewer: Viewer) => Effect.Effect<RunStateCounts, StorageError>
  /**
   * Replaces a run if it still matches `guard` (state, lease holder and expected copy when given), appending
   * events after the last sequence; else StaleWrite. Keeps metadata, ancestors and artifacts.
   * Answers whether a run of its team was PENDING as it wrote (so that a run that ends need not
   * ask again before admitting: `admission`).
   */
  readonly update: (
    runId: RunId,
    guard: RunGuard,
    next: StoredRun,
    events: ReadonlyArray<NewTimelineEvent>
  ) => Effect.Effect<Updated, StaleWrite | StorageError>
  /**
   * Claims a QUEUED run for a worker host (null: runs without one, for the service's own
   * executors): CLAIMED, `updated_at = now`, a lease of `execution_id` until `now + lease_ms`, and a
   * `run_claimed` event, in one atomic step. Two claimers never get the same run. With `team_uid`,
   * only that team's runs (a self-hosted worker claims for its own team); without a host or a team,
   * the team by fair share first (FairShare.ts: its clock and the team's next start move in the same
   * step). Then the run with the highest `config.priority`, the oldest (`created_at`, then `run_id`)
   * among equals.
   */
  readonly claim: (params: {
    readonly worker_host: string | null
    readonly team_uid?: TeamUid | undefined
    readonly execution_id: ExecutionId
    readonly now: number
    readonly lease_ms: number
  }) => Effect.Effect<Option.Option<StoredRun>, StorageError>
  /** Extends the lease held by `execution_id`; StaleWrite when it is no longer the holder. */
  readonly renewLease: (runId: RunId, execution_id: ExecutionId, expires_at: number) => Effect.Effect<void, StaleWrite | StorageError>
  /** CLAIMED or INPROGRESS runs whose lease expired at or before `now`, oldest expiry first (then run id). */
  readonly expiredLeases: (now: number, limit: number) => Effect.Effect<ReadonlyArray<StoredRun>, StorageError>
  /**
   * QUEUED runs for a self-hosted worker (a non-empty `worker_host`) created at or before `before`
   * whose worker (of the run's team) has sent no heartbeat after `before`, or none at all; oldest
   * first. A run's later changes (a follow-up, an admission) do not make it younger.
   */
  readonly waitingForWorkers: (before: number, limit: number) => Effect.Effect<ReadonlyArray<StoredRun>, StorageError>
  /**
   * A team's admission, in one read: how many of its runs hold capacity (CLAIMED or INPROGRESS, or
   * QUEUED), and whether it has a PENDING run.
   */
  readonly admission: (team: TeamUid) => Effect.Effect<{ readonly active: number; readonly waiting: boolean }, StorageError>
  /** Teams that have PENDING runs (at most `limit`), for the admission sweep. */
  readonly waitingTeams: (limit: number) => Effect.Effect<ReadonlyArray<TeamUid>, StorageError>
  /** A team's PENDING runs waiting for capacity, oldest first (by `created_at`, then `run_id`). */
  readonly pending: (team: TeamUid, limit: number) => Effect.Effect<ReadonlyArray<StoredRun>, StorageError>
  /** A run's timeline events with a sequence greater than `after` (0: all), in order. */
  readonly timeline: (runId: RunId, after: number) => Effect.Effect<ReadonlyArray<TimelineEvent>, StorageError>
  /**
   * Appends a part of one execution's conversation log (ConversationLog.ts). A part stored already
   * under its `seq` is left as it is (a retried write is a no-op).
   */
  readonly appendConversation: (runId: RunId, execution_id: ExecutionId, part: ConversationPart) => Effect.Effect<void, StorageError>
  /**
   * The conversation of every execution of a run, in execution order (the order of their first
   * parts), each execution's parts folded in `seq` order.
   */
  readonly conversation: (runId: RunId) => Effect.Effect<ReadonlyArray<ConversationStep>, StorageError>
  /**
   * The conversation of every execution of a run, in execution order, each rendered or folded
   * (`ExecutionConversation`): what the conversation endpoints write.
   */
  readonly executionConversations: (runId: RunId) => Effect.Effect<ReadonlyArray<ExecutionConversation>, StorageError>
  /**
   * Keeps an execution's rendering, unless its log has since gained a part (then nothing is
   * written: the rendering would be stale). Rendering the same parts again writes the same text.
   */
  readonly keepRendered: (runId: RunId, rendered: RenderedConversation) => Effect.Effect<void, StorageError>
  /**
   * A run's conversation log as stored, for following it as it grows (the event stream): the parts
   * after `after` (none: from the start), executions in order (`ordinal` 1 for the first to store
   * a part), each execution's parts by `seq`.
   */
  readonly conversationLog: (runId: RunId, after?: LogPosition) => Effect.Effect<ReadonlyArray<LoggedPart>, StorageError>
  /**
   * Records a follow-up in one transaction if the run still matches `guard` (state, and lease
   * holder when given), else StaleWrite and nothing written: the run change, its events and the
   * inbox entry together, so an executor claiming the run sees the message with the new state.
   * With `maxPending`, a full inbox fails FollowupInboxFull and nothing is written; with
   * `maxTotal`, a run that received its total fails FollowupTotalSpent and nothing is written.
   * The sender (`shaper`) is recorded with the rest.
   */
  readonly recordFollowup: (
    runId: RunId,
    guard: RunGuard,
    write: FollowupWrite
  ) => Effect.Effect<void, StaleWrite | FollowupInboxFull | FollowupTotalSpent | StorageError>
  /**
   * Records principals who shaped a run (`NewRun.shapers`): kept as long as the run, never
   * removed; recording one again changes nothing. Nothing for an unknown run.
   */
  readonly addShapers: (runId: RunId, shapers: ReadonlyArray<Shaper>) => Effect.Effect<void, StorageError>
  /** Every principal recorded as having shaped any of these runs, each (principal, role) once. */
  readonly shapers: (runIds: ReadonlyArray<RunId>) => Effect.Effect<ReadonlyArray<Shaper>, StorageError>
  /** Removes and returns the stored follow-ups, oldest first (by `received_at`, then arrival); atomic. */
  readonly takeFollowups: (runId: RunId) => Effect.Effect<ReadonlyArray<StoredFollowup>, StorageError>
  /**
   * `takeFollowups` by the execution holding the run (its lease, the run CLAIMED or INPROGRESS):
   * `StaleWrite`, taking nothing, when it does not hold it.
   */
  readonly takeHeldFollowups: (
    runId: RunId,
    executionId: ExecutionId
  ) => Effect.Effect<ReadonlyArray<StoredFollowup>, StaleWrite | StorageError>
  /** Records an artifact of a run. */
  readonly addArtifact: (runId: RunId, artifact: Artifact) => Effect.Effect<void, StorageError>
  /**
   * The run that reported an EXTERNAL_REFERENCE artifact with this url (the latest report when
   * several did); with a viewer, among the runs the viewer may see only.
   */
  readonly findByExternalReference: (url: string, viewer?: Viewer) => Effect.Effect<Option.Option<StoredRun>, StorageError>
  /**
   * The runs of a conversation, oldest first (by creation, then run id): the run that started it
   * and each run created later to continue it (`conversation_id` on create).
   */
  readonly findByConversation: (conversationId: ConversationId) => Effect.Effect<ReadonlyArray<StoredRun>, StorageError>
  /** The runs descending from a run (its children, theirs…), as budgets read them (Budget.ts), at most `Budget.MAX_DESCENDANTS`. */
  readonly descendants: (runId: RunId) => Effect.Effect<ReadonlyArray<Descendant>, StorageError>
  /** What a team's runs created since `since` (epoch millis) spent, by UTC day of creation, oldest first; days without runs left out. */
  readonly spendByDay: (team: TeamUid, since: number) => Effect.Effect<ReadonlyArray<DaySpend>, StorageError>
  /**
   * The runs of the viewer's team it may see (Access.canSee) created at or after `since`, the
   * newest first (then the larger run id), at most `limit`: their state, and when each was created,
   * started and ended (RunOverview.ts).
   */
  readonly overviewRuns: (viewer: Viewer, since: number, limit: number) => Effect.Effect<ReadonlyArray<OverviewRun>, StorageError>
  /** A signal each time a run may have become claimable (the dispatcher also polls). */
  readonly wakeups: Stream.Stream<void, StorageError>
}>() {}
