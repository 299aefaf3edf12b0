/**
 * AuditLog in memory: entries by id. `recording` runs the write, then adds the entry, in one
 * synchronous step after the write (the memory stores' writes are atomic steps themselves), so an
 * entry is added only for a write that succeeded. The list is the reference evaluator
 * (`Audit.matchesAudit`, `Audit.afterCursor`) over every entry, in the query's order.
 */
import type { Context } from "effect"
import { DateTime, Effect } from "effect"
import { afterCursor, type AuditEntry, type AuditQuery, matchesAudit } from "../../src/domain/Audit.js"
import { AuditLog } from "../../src/ports/AuditLog.js"
import type { MemoryState } from "./MemoryState.js"

export const makeMemoryAuditLog = (state: MemoryState): Context.Tag.Service<AuditLog> => {
  const add = (entry: AuditEntry) => Effect.sync(() => void state.audit.set(entry.id, entry))

  const recording = <A, E, R>(write: Effect.Effect<A, E, R>, entry: (result: A) => AuditEntry) =>
    Effect.tap(write, (result) => add(entry(result)))

  const list = (query: AuditQuery) =>
    Effect.sync(() =>
      [...state.audit.values()]
        .filter((e) => matchesAudit(e, query) && afterCursor(e, query))
        .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) * (query.order === "newest_first" ? 1 : -1))
        .slice(0, query.limit)
    )

  const prune = (before: number, limit: number) =>
    Effect.sync(() => {
      const old = [...state.audit.values()]
        .filter((e) => DateTime.toEpochMillis(e.at) < before)
        .sort((a, b) => (a.id < b.id ? -1 : 1))
        .slice(0, limit)
      for (const e of old) state.audit.delete(e.id)
      return old.length
    })

  return AuditLog.of({ recording, record: add, list, prune })
}
