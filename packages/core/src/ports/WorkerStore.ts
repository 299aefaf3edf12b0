/**
 * Port: the presence of self-hosted workers, from their heartbeats (in storage, so every replica
 * lists the same workers). A worker is connected while its last heartbeat's `expires_at` has not
 * passed; the service sets that to the heartbeat's time plus the staleness period.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { Option } from "effect"
import type { PrincipalUid, TeamUid } from "../domain/Ids.js"
import type { StorageError } from "./Storage.js"

/** What a heartbeat records. */
export interface WorkerHeartbeat {
  readonly team_uid: TeamUid
  readonly worker_id: string
  readonly display_name: string
  readonly labels: ReadonlyArray<string>
  readonly capacity: number
  /** The worker's release as it says it (null: it says none, release 0.1). */
  readonly version: string | null
  /** The worker protocol agreed with it (WorkerProtocol.ts). */
  readonly protocol: number
  readonly now: number
  /** Until when the worker counts as connected without another heartbeat. */
  readonly expires_at: number
}

/** A connected worker as stored, with the runs it holds now (CLAIMED or INPROGRESS). */
export interface StoredWorker {
  readonly team_uid: TeamUid
  readonly worker_id: string
  readonly display_name: string
  readonly labels: ReadonlyArray<string>
  readonly capacity: number
  readonly version: string | null
  /** Null when its latest heartbeat was recorded by a server of release 0.1. */
  readonly protocol: number | null
  /** The first heartbeat of this connection (a heartbeat after expiry starts a new one). */
  readonly connected_at: number
  readonly last_heartbeat_at: number
  readonly expires_at: number
  readonly active_runs: number
}

export class WorkerStore extends Context.Tag("@agent-runs/core/WorkerStore")<WorkerStore, {
  /** Records a heartbeat; `connected_at` stays while the previous one had not expired at `now`, else it is `now`. */
  readonly heartbeat: (beat: WorkerHeartbeat) => Effect.Effect<void, StorageError>
  /** The worker said it disconnects: no longer connected from `now` (its latest heartbeat is kept); false when it was not connected. */
  readonly disconnect: (team: TeamUid, workerId: string, now: number) => Effect.Effect<boolean, StorageError>
  /** The time of the worker's latest heartbeat, connected or not; none when it never sent one. */
  readonly lastHeartbeat: (team: TeamUid, workerId: string) => Effect.Effect<Option.Option<number>, StorageError>
  /** The team's workers connected at `now` (not expired), by worker id. */
  readonly connected: (team: TeamUid, now: number) => Effect.Effect<ReadonlyArray<StoredWorker>, StorageError>
  /**
   * Binds the worker id to `principal` unless it is bound already (to `principal`, or to `from`
   * when given: then it moves to `principal`); returns the principal it is bound to afterwards.
   * Bindings outlive disconnects.
   */
  readonly bind: (
    team: TeamUid,
    workerId: string,
    principal: PrincipalUid,
    now: number,
    from?: PrincipalUid
  ) => Effect.Effect<PrincipalUid, StorageError>
  /** Forgets whom the worker id is bound to (the next `bind` binds it afresh); false when it was not bound. */
  readonly release: (team: TeamUid, workerId: string) => Effect.Effect<boolean, StorageError>
}>() {}
