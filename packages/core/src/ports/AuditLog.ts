/**
 * Port: the audit log's storage (domain/Audit.ts). Entries are only ever appended, and removed by
 * the retention sweep; nothing changes one.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { AuditEntry, AuditQuery } from "../domain/Audit.js"
import type { StorageError } from "./Storage.js"

export class AuditLog extends Context.Tag("@agent-runs/core/AuditLog")<AuditLog, {
  /**
   * Runs `write` (other stores' writes) and records the entry built from its result, in one
   * transaction: both are stored, or neither (`write`'s failure, or the entry's, rolls both back).
   */
  readonly recording: <A, E, R>(
    write: Effect.Effect<A, E, R>,
    entry: (result: A) => AuditEntry
  ) => Effect.Effect<A, E | StorageError, R>
  /** Records an entry on its own (a refusal, a read). */
  readonly record: (entry: AuditEntry) => Effect.Effect<void, StorageError>
  /** The entries the query selects in its order (by id), at most `limit`, after its `cursor` when given. */
  readonly list: (query: AuditQuery) => Effect.Effect<ReadonlyArray<AuditEntry>, StorageError>
  /** Removes at most `limit` entries older than `before` (epoch ms), oldest first; how many it removed. */
  readonly prune: (before: number, limit: number) => Effect.Effect<number, StorageError>
}>() {}
