/**
 * WorkerStore in memory, with the semantics of `WorkerStoreSql.ts`: one entry per (team, worker
 * id), replaced by each heartbeat (a heartbeat at or after the previous expiry starts a new
 * connection), and the worker id's owner (bound once, moved only from a named holder, kept across
 * disconnects). A connected worker's active runs are the team's CLAIMED and INPROGRESS runs
 * addressed to it (read from the run store's table).
 */
import type { Context } from "effect"
import { Effect, Option } from "effect"
import type { PrincipalUid, TeamUid } from "../../src/domain/Ids.js"
import { compareCodePoints } from "../../src/domain/RunQuery.js"
import { type StoredWorker, type WorkerHeartbeat, WorkerStore } from "../../src/ports/WorkerStore.js"
import { entryOf, HOLDING_STATES, type MemoryState, type WorkerBinding, type WorkerRow, workerHostOf } from "./MemoryState.js"

/** WorkerStore over the shared state. */
export const makeMemoryWorkerStore = (state: MemoryState): Context.Tag.Service<WorkerStore> => {
  const workersOf = (team: TeamUid) => entryOf(state.workers, team, () => new Map<string, WorkerRow>())
  const bindingsOf = (team: TeamUid) => entryOf(state.workerBindings, team, () => new Map<string, WorkerBinding>())

  const heartbeat = (beat: WorkerHeartbeat) =>
    Effect.sync(() => {
      const workers = workersOf(beat.team_uid)
      const before = workers.get(beat.worker_id)
      workers.set(beat.worker_id, {
        display_name: beat.display_name,
        labels: [...beat.labels],
        capacity: beat.capacity,
        version: beat.version,
        protocol: beat.protocol,
        connected_at: before !== undefined && before.expires_at > beat.now ? before.connected_at : beat.now,
        last_heartbeat_at: beat.now,
        expires_at: beat.expires_at
      })
    })

  const disconnect = (team: TeamUid, workerId: string, now: number) =>
    Effect.sync(() => {
      const workers = state.workers.get(team)
      const worker = workers?.get(workerId)
      if (workers === undefined || worker === undefined || worker.expires_at <= now) return false
      workers.set(workerId, { ...worker, expires_at: now })
      return true
    })

  const lastHeartbeat = (team: TeamUid, workerId: string) =>
    Effect.sync(() => Option.fromNullable(state.workers.get(team)?.get(workerId)?.last_heartbeat_at))

  const connected = (team: TeamUid, now: number) =>
    Effect.sync((): ReadonlyArray<StoredWorker> => {
      const active = new Map<string, number>()
      for (const runState of HOLDING_STATES) {
        for (const id of state.runsByState.get(runState) ?? []) {
          const run = state.runs.get(id)!.run
          const host = workerHostOf(run)
          if (run.team_uid === team && host !== null) active.set(host, (active.get(host) ?? 0) + 1)
        }
      }
      return [...(state.workers.get(team) ?? new Map<string, WorkerRow>())]
        .filter(([, worker]) => worker.expires_at > now)
        .sort(([a], [b]) => compareCodePoints(a, b))
        .map(([worker_id, worker]) => ({
          team_uid: team,
          worker_id,
          display_name: worker.display_name,
          labels: worker.labels,
          capacity: worker.capacity,
          version: worker.version,
          protocol: worker.protocol,
          connected_at: worker.connected_at,
          last_heartbeat_at: worker.last_heartbeat_at,
          expires_at: worker.expires_at,
          active_runs: active.get(worker_id) ?? 0
        }))
    })

  const bind = (team: TeamUid, workerId: string, principal: PrincipalUid, now: number, from?: PrincipalUid) =>
    Effect.sync(() => {
      const bindings = bindingsOf(team)
      const holder = bindings.get(workerId)
      if (holder === undefined || (from !== undefined && holder.principal_uid === from)) {
        bindings.set(workerId, { principal_uid: principal, bound_at: now })
        return principal
      }
      return holder.principal_uid
    })

  const release = (team: TeamUid, workerId: string) => Effect.sync(() => state.workerBindings.get(team)?.delete(workerId) ?? false)

  return WorkerStore.of({ heartbeat, disconnect, lastHeartbeat, connected, bind, release })
}
