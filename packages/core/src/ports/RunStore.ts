/**
 * Port: runs and everything that hangs off them (executions and leases, timeline events,
 * conversations, the follow-up inbox, artifacts) and the run list. Implemented by the SQLite and
 * PostgreSQL adapters; both pass the conformance suite.
 */
import type { Effect, Option, Stream } from "effect"
import { Context } from "effect"
import type { Viewer } from "../Access.js"
import type { Artifact } from "../Artifact.js"
import type { JsonObject } from "../Common.js"
import type { ConversationStep } from "../Conversation.js"
import type { ExecutionId, RunId, TeamUid } from "../Ids.js"
import type { RunItem } from "../Run.js"
import type { RunListPage, RunListQuery } from "../RunQuery.js"
import type { RunState } from "../RunState.js"
import type { TimelineEvent, TimelineEventType } from "../Timeline.js"
import type { DuplicateKey, ExactlyOnceKey, StaleWrite, StorageError } from "./Storage.js"

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

/** A timeline event before storage numbers it. */
export interface NewTimelineEvent {
  readonly event_type: TimelineEventType
  readonly occurred_at: number
  readonly execution_id: ExecutionId
  readonly message?: string
  readonly data?: JsonObject
}

/** A run to create with its first timeline events. */
export interface NewRun {
  readonly run: StoredRun
  readonly events: ReadonlyArray<NewTimelineEvent>
}

/** What a conditional write expects to find: the state, and the lease holder when one must hold it. */
export interface RunGuard {
  readonly state: RunState
  readonly execution_id?: ExecutionId
}

/** A follow-up waiting for an agent to start. */
export interface StoredFollowup {
  readonly message: string
  readonly received_at: number
}

export class RunStore extends Context.Tag("@agent-runs/core/RunStore")<RunStore, {
  /** Creates runs and their first events, with an optional exactly-once key, in one transaction. */
  readonly create: (runs: ReadonlyArray<NewRun>, key?: ExactlyOnceKey) => Effect.Effect<void, DuplicateKey | StorageError>
  /** Reads one run. */
  readonly get: (runId: RunId) => Effect.Effect<Option.Option<StoredRun>, StorageError>
  /** One page of the runs the viewer may see, filtered, sorted and keyset-paginated as `query` says. */
  readonly list: (query: RunListQuery, viewer: Viewer) => Effect.Effect<RunListPage<StoredRun>, StorageError>
  /** Replaces a run if it still matches `guard` (state and lease holder), appending events; else StaleWrite. */
  readonly update: (
    runId: RunId,
    guard: RunGuard,
    next: StoredRun,
    events: ReadonlyArray<NewTimelineEvent>
  ) => Effect.Effect<void, StaleWrite | StorageError>
  /** Claims the oldest QUEUED run for a worker host (null: the service's own executors) under a new lease. */
  readonly claim: (params: {
    readonly worker_host: string | null
    readonly execution_id: ExecutionId
    readonly now: number
    readonly lease_ms: number
  }) => Effect.Effect<Option.Option<StoredRun>, StorageError>
  /** Extends the lease held by `execution_id`; StaleWrite when it is no longer the holder. */
  readonly renewLease: (runId: RunId, execution_id: ExecutionId, expires_at: number) => Effect.Effect<void, StaleWrite | StorageError>
  /** Runs whose lease expired at or before `now`, oldest expiry first. */
  readonly expiredLeases: (now: number, limit: number) => Effect.Effect<ReadonlyArray<StoredRun>, StorageError>
  /** How many of a team's runs hold capacity (CLAIMED or INPROGRESS, or QUEUED). */
  readonly activeCount: (team: TeamUid) => Effect.Effect<number, StorageError>
  /** A team's PENDING runs waiting for capacity, oldest first. */
  readonly pending: (team: TeamUid, limit: number) => Effect.Effect<ReadonlyArray<StoredRun>, StorageError>
  /** A run's timeline events with a sequence greater than `after` (0: all), in order. */
  readonly timeline: (runId: RunId, after: number) => Effect.Effect<ReadonlyArray<TimelineEvent>, StorageError>
  /** Saves the conversation of one execution (the normalized steps so far), replacing the previous save. */
  readonly saveConversation: (
    runId: RunId,
    execution_id: ExecutionId,
    steps: ReadonlyArray<ConversationStep>
  ) => Effect.Effect<void, StorageError>
  /** The conversation of every execution of a run, in execution order. */
  readonly conversation: (runId: RunId) => Effect.Effect<ReadonlyArray<ConversationStep>, StorageError>
  /** Stores a follow-up for the agent that starts next. */
  readonly enqueueFollowup: (runId: RunId, followup: StoredFollowup) => Effect.Effect<void, StorageError>
  /** Removes and returns the stored follow-ups, oldest first. */
  readonly takeFollowups: (runId: RunId) => Effect.Effect<ReadonlyArray<StoredFollowup>, StorageError>
  /** Records an artifact of a run. */
  readonly addArtifact: (runId: RunId, artifact: Artifact) => Effect.Effect<void, StorageError>
  /** The run that reported an EXTERNAL_REFERENCE artifact with this url. */
  readonly findByExternalReference: (url: string) => Effect.Effect<Option.Option<StoredRun>, StorageError>
  /** A signal each time a run may have become claimable (the dispatcher also polls). */
  readonly wakeups: Stream.Stream<void, StorageError>
}>() {}
