/**
 * RetentionStore over SqlClient (migration 0024): removes ended runs and old deliveries in bounded
 * batches, and queues the keys of their blobs in `blob_removals` in the same transaction.
 *
 * Decisions:
 * - Candidates are read oldest first through `runs_team_updated` (a team's runs by last change)
 *   and `webhook_payloads_team`; the delete repeats the candidate's conditions, so a run a
 *   follow-up took up again after it was read stays (on PostgreSQL the delete waits for the
 *   follow-up's transaction and re-checks).
 * - What hangs off a run goes by `ON DELETE CASCADE` (timeline, conversation, artifacts, metadata,
 *   ancestors, shapers, follow-ups); its outbound changes and deliveries, which reference it
 *   without a key, are removed by statement. Its execution ids are read before (from its timeline)
 *   for the keys of agent state a worker was still sending.
 * - A run whose ancestor is still kept stays (its spend counts in their budgets); the tree goes
 *   from its root down, a level per pass.
 * - Deliveries go by their webhook's team (`deliveries_by_webhook` per webhook); their identities
 *   by cascade, so an old delivery sent again is new again (docs/webhooks.md says so). A payload
 *   stays while a live run it started still gets it as its attachment.
 */
import { runBlobKeys, eventPayloadKey } from "@agent-runs/core/domain/BlobKeys"
import type { PrincipalUid, RunId, TeamUid } from "@agent-runs/core/domain/Ids"
import { type RunState, TerminalRunStates } from "@agent-runs/core/domain/RunState"
import { RetentionStore } from "@agent-runs/core/ports/RetentionStore"
import { StaleWrite } from "@agent-runs/core/ports/Storage"
import { SqlClient } from "@effect/sql"
import { Array as Arr, Clock, Effect, Layer } from "effect"
import { operation } from "./internal/Catalog.js"
import { joinTransaction } from "./internal/JoinTransaction.js"

type Row = { readonly run_id: string; readonly execution_id: string }

/**
 * Removes the runs named that are still ended, last changed before `before` and without an
 * ancestor still kept, queuing their blobs; the ids removed, with the keys queued. Inside the
 * caller's transaction.
 */
export const removeRuns = (runIds: ReadonlyArray<string>, before: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    if (runIds.length === 0) return { ids: [], keys: [] }
    const executions = yield* sql<Row>`SELECT DISTINCT run_id, execution_id FROM timeline_events
      WHERE run_id IN ${sql.in(runIds)} AND execution_id <> ''`
    const removed = yield* sql<{ run_id: string }>`DELETE FROM runs
      WHERE run_id IN ${sql.in(runIds)} AND state IN ${sql.in(TerminalRunStates)} AND updated_at < ${before}
        AND NOT EXISTS (
          SELECT 1 FROM run_ancestors a JOIN runs p ON p.run_id = a.ancestor_run_id WHERE a.run_id = runs.run_id
        )
      RETURNING run_id`
    const ids = removed.map((row) => row.run_id)
    if (ids.length === 0) return { ids, keys: [] }
    yield* sql`DELETE FROM outbound_deliveries WHERE run_id IN ${sql.in(ids)}`
    yield* sql`DELETE FROM outbound_changes WHERE run_id IN ${sql.in(ids)}`
    const keys = ids.flatMap((id) => runBlobKeys(id, executions.filter((e) => e.run_id === id).map((e) => e.execution_id)))
    yield* queueBlobs(keys)
    return { ids, keys }
  })

/** Keys queued per statement (two parameters each: well within both dialects' limits). */
const KEYS_PER_STATEMENT = 5_000

/** Queues blob keys for removal. */
export const queueBlobs = (keys: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const now = yield* Clock.currentTimeMillis
    yield* Effect.forEach(Arr.chunksOf(keys, KEYS_PER_STATEMENT), (chunk) =>
      sql`INSERT INTO blob_removals ${sql.insert(chunk.map((blob_key) => ({ blob_key, queued_at: now })))}
        ON CONFLICT (blob_key) DO NOTHING`, { discard: true })
  })

/** RetentionStore, needing `SqlClient`. */
export const layer = Layer.effect(
  RetentionStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const expireRuns = Effect.fn("RetentionStore.expireRuns")(
      function* (team: TeamUid, before: number, limit: number) {
        // A run whose parent (or any ancestor) is still kept stays: its spend counts in their budgets.
        const candidates = yield* sql<{ run_id: string }>`SELECT r.run_id FROM runs r
          WHERE r.team_uid = ${team} AND r.updated_at < ${before} AND r.state IN ${sql.in(TerminalRunStates)}
            AND NOT EXISTS (
              SELECT 1 FROM run_ancestors a JOIN runs p ON p.run_id = a.ancestor_run_id WHERE a.run_id = r.run_id
            )
          ORDER BY r.updated_at, r.run_id LIMIT ${limit}`
        const removed = yield* sql.withTransaction(removeRuns(candidates.map((row) => row.run_id), before)).pipe(
          Effect.provideService(SqlClient.SqlClient, sql)
        )
        return removed.ids.length
      },
      operation("RetentionStore.expireRuns")
    )

    const removeRun = Effect.fn("RetentionStore.removeRun")(
      function* (runId: RunId) {
        const removed = yield* joinTransaction(sql)(
          Effect.flatMap(removeRuns([runId], Number.MAX_SAFE_INTEGER), (r) =>
            r.ids.length === 0 ? Effect.fail(new StaleWrite({ what: `run ${runId}` })) : Effect.succeed(r.keys))
        ).pipe(Effect.provideService(SqlClient.SqlClient, sql))
        return removed
      },
      operation("RetentionStore.removeRun")
    )

    const expireDeliveries = Effect.fn("RetentionStore.expireDeliveries")(
      function* (team: TeamUid, before: number, limit: number) {
        const hooks = (yield* sql<{ uid: string }>`SELECT uid FROM webhooks WHERE team_uid = ${team}`).map((row) => row.uid)
        return yield* sql.withTransaction(Effect.gen(function* () {
          // Per webhook through `deliveries_by_webhook`, oldest first.
          const deliveries = hooks.length === 0 ? [] : yield* sql`DELETE FROM deliveries WHERE delivery_id IN (
              SELECT delivery_id FROM deliveries WHERE webhook_uid IN ${sql.in(hooks)} AND received_at < ${before}
              ORDER BY received_at, delivery_id LIMIT ${limit}
            ) RETURNING delivery_id`
          // A payload a live run still gets as its attachment stays until the run ends.
          const payloads = yield* sql<{ delivery_id: string }>`DELETE FROM webhook_payloads WHERE delivery_id IN (
              SELECT p.delivery_id FROM webhook_payloads p
              WHERE p.team_uid = ${team} AND p.received_at < ${before} AND NOT EXISTS (
                SELECT 1 FROM run_metadata m JOIN runs r ON r.run_id = m.run_id
                WHERE m.key = 'delivery_id' AND m.value = p.delivery_id AND r.source = 'WEBHOOK' AND r.team_uid = p.team_uid
                  AND r.state NOT IN ${sql.in(TerminalRunStates)}
              )
              ORDER BY p.received_at, p.delivery_id LIMIT ${limit}
            ) RETURNING delivery_id`
          yield* queueBlobs(payloads.map((row) => eventPayloadKey(row.delivery_id))).pipe(Effect.provideService(SqlClient.SqlClient, sql))
          return Math.max(deliveries.length, payloads.length)
        }))
      },
      operation("RetentionStore.expireDeliveries")
    )

    /** The runs whose `column` names the principal, by id after `after` (through `runs_creator` / `runs_executor`). */
    const runsNaming = (column: "creator_uid" | "executor_uid") => {
      const name = `RetentionStore.runsNaming(${column})`
      return Effect.fn(name)(
        function* (principal: PrincipalUid, after: RunId | undefined, limit: number) {
          const rows = yield* sql<{ run_id: string; state: string }>`SELECT run_id, state FROM runs
            WHERE ${sql(column)} = ${principal} AND run_id > ${after ?? ""} ORDER BY run_id LIMIT ${limit}`
          return rows.map((row) => ({ run_id: row.run_id as RunId, state: row.state as RunState }))
        },
        operation(name)
      )
    }

    const blobsToRemove = Effect.fn("RetentionStore.blobsToRemove")(
      function* (limit: number) {
        const rows = yield* sql<{ blob_key: string }>`SELECT blob_key FROM blob_removals ORDER BY queued_at, blob_key LIMIT ${limit}`
        return rows.map((row) => row.blob_key)
      },
      operation("RetentionStore.blobsToRemove")
    )

    const blobsRemoved = Effect.fn("RetentionStore.blobsRemoved")(
      function* (keys: ReadonlyArray<string>) {
        if (keys.length > 0) yield* sql`DELETE FROM blob_removals WHERE blob_key IN ${sql.in(keys)}`
      },
      operation("RetentionStore.blobsRemoved")
    )

    const blobsDeferred = Effect.fn("RetentionStore.blobsDeferred")(
      function* (keys: ReadonlyArray<string>) {
        if (keys.length === 0) return
        const now = yield* Clock.currentTimeMillis
        yield* sql`UPDATE blob_removals SET queued_at = ${now} WHERE blob_key IN ${sql.in(keys)}`
      },
      operation("RetentionStore.blobsDeferred")
    )

    return RetentionStore.of({ expireRuns, removeRun, expireDeliveries, runsCreatedBy: runsNaming("creator_uid"), runsExecutedBy: runsNaming("executor_uid"), blobsToRemove, blobsRemoved, blobsDeferred })
  })
)
