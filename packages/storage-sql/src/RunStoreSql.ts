/**
 * RunStore over SqlClient, one implementation for SQLite and PostgreSQL.
 *
 * A run is one row of `runs`: columns for everything the list filters and sorts on, or that
 * claiming and leases change (state, updated_at, lease, counters), and `doc`, the JSON of the
 * rest of its `RunItem` as the core Schema encodes it. `metadata` and `ancestor_run_ids` are JSON
 * columns written once at creation (and indexed in `run_metadata`, `run_ancestors`); artifacts
 * live in `run_artifacts`, in the order they were recorded. The rows written are built in
 * RunWritesSql.ts, and the rows read are turned into runs (or their JSON) in RunRowsSql.ts.
 *
 * Writes:
 * - On SQLite every write is one transaction (even a single statement: SQLite's client would
 *   otherwise run it inside whatever transaction another fiber has open on the connection), and its
 *   first statement writes, so SQLite takes its write lock at once (as `BEGIN IMMEDIATE` would) and
 *   a second process waits on `busy_timeout` instead of failing to upgrade a read lock. On
 *   PostgreSQL the engine's frequent writes are one statement each, atomic without BEGIN and
 *   COMMIT: a guarded update and its timeline events, the claim and its `run_claimed` event (the
 *   events inserted by a data-modifying WITH numbered from the UPDATE's RETURNING), taking the
 *   follow-ups, a conversation part and its execution's row.
 * - `create` takes its exactly-once key first (`INSERT ... ON CONFLICT DO NOTHING RETURNING`, or
 *   the delivery log entry and its identity); a taken key fails DuplicateKey and rolls back.
 * - `createTicks` (the scheduler's batch) takes the keys of all its ticks in one such statement,
 *   sorted by (schedule id, time) so that replicas taking overlapping keys lock them in the same
 *   order (one waits for the other's commit, no deadlock), then writes the runs of the ticks whose
 *   key it got, all in one transaction.
 * - `update` is one `UPDATE ... WHERE run_id AND state [AND lease holder] RETURNING`: the guard
 *   and the write are one step, so a lost race is a StaleWrite, never a lost update.
 * - `recordFollowup` is the same guarded statement (setting only `updated_at` when the run does not
 *   otherwise change), its events and the inbox row, in one transaction; with `maxPending`, the
 *   inbox is counted after the guarded statement, whose row lock orders concurrent follow-ups.
 * - Timeline sequences come from the run row's `last_sequence`, bumped by the same statement
 *   that writes the run (the row lock orders concurrent appends on PostgreSQL).
 * - `claim` (RunClaimSql.ts) picks a team by fair share for the service's own executors, then the
 *   team's first run by priority and age, with its `run_claimed` event.
 * - A new run's rows (and its creation's audit entry) are one statement on PostgreSQL when their
 *   parameters fit, ending with the wake-up's `pg_notify` (sent as it commits): no transaction.
 *   Elsewhere wake-ups are signalled after the write (at the commit of a transaction it is in), so a
 *   woken dispatcher finds the run.
 */
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import type { Shaper, Viewer } from "@agent-runs/core/domain/Access"
import { Role } from "@agent-runs/core/domain/Identity"
import { utf8Bytes } from "@agent-runs/core/domain/Quotas"
import type { Artifact } from "@agent-runs/core/domain/Artifact"
import { RunId } from "@agent-runs/core/domain/Ids"
import type { ConversationId, ExecutionId, PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { encodeCursor, type RunListQuery, type RunListRow, stateCounts } from "@agent-runs/core/domain/RunQuery"
import { RunState } from "@agent-runs/core/domain/RunState"
import { fitsInParent } from "@agent-runs/core/domain/BudgetTree"
import {
  type Carve,
  FollowupInboxFull,
  FollowupTotalSpent,
  type FollowupWrite,
  type NewRun,
  type NewTimelineEvent,
  type RunGuard,
  runListRow,
  RunStore,
  type StoredFollowup,
  type StoredRun,
  type TickRuns,
  type TickWrite,
  type Updated
} from "@agent-runs/core/ports/RunStore"
import { DuplicateKey, type ExactlyOnceKey, StaleWrite, StorageError } from "@agent-runs/core/ports/Storage"
import { isKnownEventType, TimelineEvent } from "@agent-runs/core/domain/Timeline"
import { SqlClient } from "@effect/sql"
import { Reader } from "./Reader.js"
import { joinTransaction } from "./internal/JoinTransaction.js"
import type { Statement } from "@effect/sql"
import { Effect, Layer, Option, Schema, Stream } from "effect"
import { conversationsSql } from "./ConversationsSql.js"
import { runSpendSql } from "./RunSpendSql.js"
import { runOverviewSql } from "./RunOverviewSql.js"
import { type ClaimParams, runClaimSql } from "./RunClaimSql.js"
import { claimIdentities, countDelivery, insertDelivery } from "./DeliveriesSql.js"
import { iso, json, JsonColumn as Json, operation, visibleTo } from "./internal/Catalog.js"
import { countByState as countStates, selectPage } from "./RunListSql.js"
import * as Rows from "./Rows.js"
import { RUN_COLUMNS, runRows } from "./RunRowsSql.js"
import { MAX_PARAMETERS, NEW_RUN_TABLES, type NewRunRows, noRows, runWrites } from "./RunWritesSql.js"
import { Wakeups } from "./Wakeups.js"

const Int = Rows.Integer

/**
 * The predicate of the partial index `runs_team_live`, word for word: SQLite uses a partial index
 * only when the query's WHERE contains its predicate as a term (it does not prove that
 * `state = 'PENDING'` implies it), and without it counts scan every run of the team.
 */
const LIVE = "state IN ('PENDING', 'QUEUED', 'CLAIMED', 'INPROGRESS')"
/** `LIVE` of the runs aliased `p` (a subquery beside the table `runs`). */
const LIVE_P = "p.state IN ('PENDING', 'QUEUED', 'CLAIMED', 'INPROGRESS')"
const decodeEvents = TrustedCodec.decoder(Schema.Array(TimelineEvent))

const EventRow = Schema.Struct({
  sequence: Int,
  event_type: Schema.String,
  occurred_at: Rows.Millis,
  execution_id: Schema.String,
  message: Schema.NullOr(Schema.String),
  data: Schema.NullOr(Json)
})
const FollowupRow = Schema.Struct({ id: Int, message: Schema.String, received_at: Rows.Millis })
const decodeFollowups = Schema.decodeUnknown(Schema.Array(FollowupRow))
/** Whether the run was held, and one taken follow-up or none (the nulls of the LEFT JOIN). */
const decodeHeldFollowups = Schema.decodeUnknown(Schema.Array(Schema.Struct({
  held: Rows.Bool,
  id: Schema.NullOr(Int),
  message: Schema.NullOr(Schema.String),
  received_at: Schema.NullOr(Rows.Millis)
})))
const Written = Schema.Array(Schema.Struct({ last_sequence: Int, waiting: Rows.Bool }))
const Count = Schema.Array(Schema.Struct({ n: Int }))
const decodeAdmission = TrustedCodec.decoder(Schema.Array(Schema.Struct({ active: Int, waiting: Rows.Bool })))
const decodeTotals = TrustedCodec.decoder(Schema.Array(Schema.Struct({ count: Int, bytes: Int })))
const decodeShapers = TrustedCodec.decoder(Schema.Array(Schema.Struct({ principal_uid: Schema.String, role: Role })))
const decodeStateCounts = TrustedCodec.decoder(Schema.Array(Schema.Struct({ state: RunState, n: Int })))
const decodeHolders = TrustedCodec.decoder(
  Schema.Array(Schema.Struct({ schedule_id: Schema.String, scheduled_for: Int, run_id: RunId, state: RunState }))
)

/** RunStore, needing `SqlClient` and `Wakeups`. */
export const layer = Layer.effect(
  RunStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Reads outside a transaction: the last commit, without waiting for one (Reader.ts).
    const reader = yield* Reader
    const wakeups = yield* Wakeups
    const columns = sql.literal(RUN_COLUMNS)
    const { ownedJsons, runJsons, storedRuns } = runRows(reader)

    /** Signals a possibly claimable run; a lost hint only delays a claim (dispatchers also poll). */
    const wake = wakeups.notify.pipe(Effect.ignoreLogged)

    const { artifactRow, eventRows, insertAll, insertRunRows, newRunRows, oneStatement, runColumns, shaperRows } = runWrites(sql)

    /** Takes an exactly-once key, or fails with DuplicateKey (rolling the transaction back). */
    const takeKey = (key: ExactlyOnceKey, runs: ReadonlyArray<NewRun>) =>
      Effect.gen(function* () {
        switch (key._tag) {
          case "ScheduleTick": {
            const taken = yield* sql`INSERT INTO schedule_ticks ${sql.insert({
              schedule_id: key.schedule_id,
              scheduled_for: key.scheduled_for,
              run_id: runs[0]?.run.item.run_id ?? ""
            })} ON CONFLICT DO NOTHING RETURNING schedule_id`
            if (taken.length === 0) return yield* new DuplicateKey({ key })
            return
          }
          case "Delivery": {
            yield* insertDelivery(key.webhook_uid, key.delivery)
            // The delivery's identity and, when signed, the key of its signed content: both new, or a duplicate.
            const identities = key.content_key === undefined ? [key.identity] : [key.identity, key.content_key]
            const claimed = yield* claimIdentities(key.webhook_uid, identities, key.delivery.delivery_id)
            if (!claimed) return yield* new DuplicateKey({ key })
            yield* countDelivery(key.webhook_uid, key.delivery)
            return
          }
        }
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql))

    /**
     * Writes new runs; whether the write itself signalled (`signal`, in its one statement). A keyed
     * create keeps a transaction (a savepoint when nested) of its own: its caller may catch the
     * `DuplicateKey` and go on, which must leave nothing of it behind. One statement needs no
     * transaction: it commits whole or not at all.
     */
    const writeNewRuns = (runs: ReadonlyArray<NewRun>, rows: NewRunRows, key: ExactlyOnceKey | undefined, signal: string | undefined) => {
      if (key !== undefined) return Effect.as(sql.withTransaction(Effect.zipRight(takeKey(key, runs), insertRunRows(rows))), false)
      const statement = oneStatement(rows, signal)
      return statement === undefined ? Effect.as(joinTransaction(sql)(insertRunRows(rows)), false) : Effect.as(statement, signal !== undefined)
    }

    const create = Effect.fn("RunStore.create")(
      function* (runs: ReadonlyArray<NewRun>, key?: ExactlyOnceKey) {
        // Nothing to write (a keyed create with no runs still takes its key).
        if (runs.length === 0 && key === undefined) return
        const waking = runs.some(({ run }) => run.item.state === "QUEUED")
        const signalled = yield* writeNewRuns(runs, yield* newRunRows(runs), key, waking ? wakeups.notifyExpression : undefined)
        if (waking && !signalled) yield* wake
      },
      operation("RunStore.create")
    )

    // In the writing client's transaction (RunSpendSql's reads, on the connection that writes).
    const writerSpend = runSpendSql(sql)

    const createChild = Effect.fn("RunStore.createChild")(
      function* (newRun: NewRun, carve: Carve) {
        const rows = yield* newRunRows([newRun])
        const asked = newRun.run.item.agent_config.max_cost_usd ?? 0
        yield* sql.withTransaction(Effect.gen(function* () {
          const parentCost = yield* writerSpend.lockedCost(carve.parent_run_id)
          const held = yield* writerSpend.descendants(carve.parent_run_id)
          if (!fitsInParent(carve.parent_run_id, carve.parent_max_cost_usd, parentCost, held, asked)) {
            return yield* new StaleWrite({ what: `the budget of run ${carve.parent_run_id}` })
          }
          yield* insertRunRows(rows)
        }))
        if (newRun.run.item.state === "QUEUED") yield* wake
      },
      operation("RunStore.createChild")
    )

    /** The identity of a tick's key. */
    const tickId = (schedule_id: string, scheduled_for: number) => `${schedule_id} ${scheduled_for}`

    const createTicks = Effect.fn("RunStore.createTicks")(
      function* (ticks: ReadonlyArray<TickRuns>) {
        // Each key once (its first tick), in one order for every replica: two transactions taking
        // overlapping keys lock them in the same order, so one waits for the other, never both.
        const first = new Map<string, number>()
        ticks.forEach(({ key }, i) => {
          const id = tickId(key.schedule_id, key.scheduled_for)
          if (!first.has(id)) first.set(id, i)
        })
        const candidates = [...first.values()].sort((a, b) => {
          const x = ticks[a]!.key
          const y = ticks[b]!.key
          return x.schedule_id < y.schedule_id ? -1 : x.schedule_id > y.schedule_id ? 1 : x.scheduled_for - y.scheduled_for
        })
        const rows = yield* Effect.forEach(candidates, (i) => newRunRows(ticks[i]!.runs))
        const taken = new Set<string>()
        const holders = new Map<string, { readonly run_id: RunId; readonly state: RunState }>()
        yield* sql.withTransaction(
          Effect.gen(function* () {
            // Far below the limits of parameters (three a key).
            for (let c = 0; c < candidates.length; c += 1_000) {
              const keys = candidates.slice(c, c + 1_000).map((i) => ({
                schedule_id: ticks[i]!.key.schedule_id,
                scheduled_for: ticks[i]!.key.scheduled_for,
                run_id: ticks[i]!.runs[0]?.run.item.run_id ?? ""
              }))
              const inserted = yield* sql<{ schedule_id: string; scheduled_for: number | string }>`INSERT INTO schedule_ticks
                ${sql.insert(keys)} ON CONFLICT DO NOTHING RETURNING schedule_id, scheduled_for`
              for (const row of inserted) taken.add(tickId(row.schedule_id, Number(row.scheduled_for)))
            }
            const written = noRows()
            candidates.forEach((i, n) => {
              const key = ticks[i]!.key
              if (!taken.has(tickId(key.schedule_id, key.scheduled_for))) return
              for (const table of NEW_RUN_TABLES) written[table].push(...rows[n]![table])
            })
            yield* insertRunRows(written)
            // The runs holding the keys taken before (rare: a race between replicas, or a tick
            // fired again after the replica that won it stopped before recording it).
            const lost = candidates.filter((i) => !taken.has(tickId(ticks[i]!.key.schedule_id, ticks[i]!.key.scheduled_for)))
            for (let c = 0; c < lost.length; c += 500) {
              const keys = lost.slice(c, c + 500).map((i) =>
                sql`(t.schedule_id = ${ticks[i]!.key.schedule_id} AND t.scheduled_for = ${ticks[i]!.key.scheduled_for})`
              )
              const rows = yield* sql`SELECT t.schedule_id, t.scheduled_for, t.run_id, runs.state
                FROM schedule_ticks t JOIN runs ON runs.run_id = t.run_id WHERE ${sql.or(keys)}`.pipe(
                Effect.flatMap(decodeHolders)
              )
              for (const row of rows) holders.set(tickId(row.schedule_id, row.scheduled_for), { run_id: row.run_id, state: row.state })
            }
          })
        )
        const outcome = ticks.map(({ key }, i): TickWrite => {
          const id = tickId(key.schedule_id, key.scheduled_for)
          return first.get(id) === i && taken.has(id) ? { written: true } : { written: false, holder: holders.get(id) }
        })
        if (ticks.some(({ runs }, i) => outcome[i]!.written && runs.some(({ run }) => run.item.state === "QUEUED"))) yield* wake
        return outcome
      },
      operation("RunStore.createTicks")
    )

    /** The run of this id as `decode` reads its row; none when there is none. */
    const oneRun = <A, E>(runId: RunId, decode: (raw: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<A>, E>) =>
      Effect.map(
        reader`SELECT ${columns} FROM runs WHERE run_id = ${runId}`.pipe(Effect.flatMap(decode)),
        (rows) => Option.fromNullable(rows[0])
      )

    // The reads a request makes (a run, a page) have no span of their own: the caller's (`Runs.*`)
    // and the statement's (`sql.execute`) already frame them, and a span costs a read about a
    // tenth of its Effect operations (docs/decisions.md).
    const get = (runId: RunId) => operation("RunStore.get")(oneRun(runId, storedRuns))

    const getJson = (runId: RunId) => operation("RunStore.getJson")(oneRun(runId, ownedJsons))

    const states = Effect.fn("RunStore.states")(
      function* (runIds: ReadonlyArray<RunId>) {
        const found = new Map<RunId, RunState>()
        const unique = [...new Set(runIds)]
        for (let i = 0; i < unique.length; i += MAX_PARAMETERS) {
          const rows = yield* reader<{ run_id: string; state: string }>`SELECT run_id, state FROM runs
            WHERE run_id IN ${reader.in(unique.slice(i, i + MAX_PARAMETERS))}`
          for (const row of rows) found.set(row.run_id as RunId, yield* Schema.decodeUnknown(RunState)(row.state))
        }
        return found as ReadonlyMap<RunId, RunState>
      },
      operation("RunStore.states")
    )

    /**
     * One page of runs as `decode` reads their rows: the query's rows and one more, which says
     * whether a next page exists; the cursor continues after the page's last row (`listRow`).
     */
    const page = <A, E>(
      query: RunListQuery,
      viewer: Viewer,
      decode: (raw: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<A>, E>,
      listRow: (row: A) => Effect.Effect<RunListRow, StorageError>
    ) =>
      Effect.gen(function* () {
        const selected = yield* selectPage(reader, columns, query, viewer).pipe(Effect.flatMap(decode))
        const rows = selected.slice(0, query.limit)
        const last = rows[rows.length - 1]
        return selected.length > query.limit && last !== undefined
          ? { rows, page_info: { has_next_page: true, next_cursor: encodeCursor(query, yield* listRow(last)) } }
          : { rows, page_info: { has_next_page: false } }
      })

    const list = (query: RunListQuery, viewer: Viewer) =>
      operation("RunStore.list")(page(query, viewer, storedRuns, (run) => Effect.succeed(runListRow(run))))

    const listJson = (query: RunListQuery, viewer: Viewer) =>
      operation("RunStore.listJson")(page(query, viewer, runJsons, (run) => run.listRow))

    const countByState = Effect.fn("RunStore.countByState")(
      function* (query: RunListQuery, viewer: Viewer) {
        const rows = yield* countStates(reader, query, viewer).pipe(Effect.flatMap(decodeStateCounts))
        return stateCounts(rows.map((row) => [row.state, row.n] as const))
      },
      operation("RunStore.countByState")
    )

    /**
     * Sets `set` on the run if it matches the guard and appends the events; StaleWrite when the
     * guard does not match. On PostgreSQL one statement (the events inserted by a data-modifying
     * WITH that numbers them from the UPDATE's RETURNING: both or neither), atomic without a
     * transaction; on SQLite two, inside the caller's transaction.
     */
    const guardedWrite = (
      runId: RunId,
      guard: RunGuard,
      set: Statement.Fragment | Statement.RecordUpdateHelperSingle,
      events: ReadonlyArray<NewTimelineEvent>
    ) =>
      Effect.gen(function* () {
        const holder = guard.execution_id === undefined
          ? sql``
          : sql`AND lease_execution_id = ${guard.execution_id}`
        // The writer's copy: every column `update` writes still as the copy would write it.
        const expected = guard.expected === undefined ? sql`` : sql`AND ${unchangedFrom(yield* runColumns(guard.expected))}`
        // Whether a run of the team waits for admission, asked as the row is written (`Updated`).
        const updating = sql`UPDATE runs SET ${set}, last_sequence = last_sequence + ${events.length}
          WHERE run_id = ${runId} AND state = ${guard.state} ${holder} ${expected}
          RETURNING last_sequence, EXISTS (SELECT 1 FROM runs p
            WHERE p.team_uid = runs.team_uid AND p.state = 'PENDING' AND ${sql.literal(LIVE_P)}) AS waiting`
        const oneStatement = sql.onDialectOrElse({
          pg: () => events.length > 0,
          orElse: () => false
        })
        const updated = yield* (oneStatement
          ? sql`WITH u AS (${updating}), e AS (${numberedEvents(runId, events)}) SELECT last_sequence, waiting FROM u`
          : updating).pipe(Effect.flatMap(Schema.decodeUnknown(Written)))
        const [row] = updated
        if (row === undefined) return yield* new StaleWrite({ what: `run ${runId}` })
        if (!oneStatement) yield* insertAll("timeline_events", eventRows(runId, row.last_sequence - events.length + 1, events))
        return { waiting: row.waiting } satisfies Updated
      })

    /** Every column of `row` holds its value (NULL as NULL). */
    const unchangedFrom = (row: Readonly<Record<string, unknown>>) =>
      sql.and(Object.entries(row).map(([column, value]) => sql`${sql(column)} IS NOT DISTINCT FROM ${value}`))

    /**
     * PostgreSQL: an INSERT of the events numbered up to the `last_sequence` of the CTE `u` (the
     * run's UPDATE … RETURNING), the events passed as one JSON parameter.
     */
    const numberedEvents = (runId: RunId, events: ReadonlyArray<NewTimelineEvent>) => {
      const records = events.map((e, i) => ({
        i: i + 1,
        event_type: e.event_type,
        occurred_at: e.occurred_at,
        execution_id: e.execution_id,
        message: e.message ?? null,
        data: e.data === undefined ? null : json(e.data)
      }))
      return sql`INSERT INTO timeline_events (run_id, sequence, event_type, occurred_at, execution_id, message, data)
        SELECT ${runId}, u.last_sequence - ${events.length} + e.i, e.event_type, e.occurred_at, e.execution_id, e.message, e.data
        FROM u, jsonb_to_recordset(${JSON.stringify(records)}::jsonb)
          AS e(i integer, event_type text, occurred_at bigint, execution_id text, message text, data text)`
    }

    /**
     * A write of one statement: its own transaction on SQLite (see the top); on PostgreSQL a
     * statement is atomic by itself, and BEGIN and COMMIT would be two more round trips.
     */
    const oneStatementWrite = <A, E, R>(write: Effect.Effect<A, E, R>) =>
      sql.onDialectOrElse({ pg: () => write, orElse: () => sql.withTransaction(write) })

    const update = Effect.fn("RunStore.update")(
      function* (runId: RunId, guard: RunGuard, next: StoredRun, events: ReadonlyArray<NewTimelineEvent>) {
        const row = yield* runColumns(next)
        const updated = yield* oneStatementWrite(guardedWrite(runId, guard, sql.update(row), events))
        if (next.item.state === "QUEUED") yield* wake
        return updated
      },
      operation("RunStore.update")
    )

    /**
     * Counts a follow-up of `bytes` in the run's totals (inside the caller's transaction, after the
     * guarded update that locks the row); FollowupTotalSpent when it would take them past `max`.
     */
    const countFollowup = (runId: RunId, bytes: number, max: { readonly count: number; readonly bytes: number }) =>
      Effect.gen(function* () {
        const counted = yield* sql`UPDATE runs SET followup_count = followup_count + 1, followup_bytes = followup_bytes + ${bytes}
          WHERE run_id = ${runId} AND followup_count + 1 <= ${max.count} AND followup_bytes + ${bytes} <= ${max.bytes}
          RETURNING run_id`
        if (counted.length > 0) return
        const [totals] = yield* sql`SELECT followup_count AS count, followup_bytes AS bytes FROM runs WHERE run_id = ${runId}`.pipe(
          Effect.flatMap(decodeTotals)
        )
        return yield* new FollowupTotalSpent({ count: totals?.count ?? 0, bytes: totals?.bytes ?? 0 })
      })

    /** Records shapers of a run that exists, each (principal, role) once (inside the caller's transaction). */
    const insertShapers = (runId: RunId, shapers: ReadonlyArray<Shaper>) =>
      Effect.forEach(
        shaperRows(runId, shapers),
        (row) => sql`INSERT INTO run_shapers ${sql.insert(row)} ON CONFLICT DO NOTHING`,
        { discard: true }
      )

    const addShapers = Effect.fn("RunStore.addShapers")(
      function* (runId: RunId, shapers: ReadonlyArray<Shaper>) {
        if (shapers.length === 0) return
        yield* sql.withTransaction(
          Effect.gen(function* () {
            const found = yield* sql`SELECT run_id FROM runs WHERE run_id = ${runId}`
            if (found.length > 0) yield* insertShapers(runId, shapers)
          })
        )
      },
      operation("RunStore.addShapers")
    )

    const shapers = Effect.fn("RunStore.shapers")(
      function* (runIds: ReadonlyArray<RunId>) {
        const unique = [...new Set(runIds)]
        const found: Array<Shaper> = []
        const seen = new Set<string>()
        for (let i = 0; i < unique.length; i += MAX_PARAMETERS) {
          const rows = yield* reader`SELECT DISTINCT principal_uid, role FROM run_shapers
            WHERE run_id IN ${reader.in(unique.slice(i, i + MAX_PARAMETERS))}`.pipe(Effect.flatMap(decodeShapers))
          for (const row of rows) {
            const key = `${row.principal_uid} ${row.role}`
            if (seen.has(key)) continue
            seen.add(key)
            found.push({ uid: row.principal_uid as PrincipalUid, role: row.role })
          }
        }
        return found as ReadonlyArray<Shaper>
      },
      operation("RunStore.shapers")
    )

    const recordFollowup = Effect.fn("RunStore.recordFollowup")(
      function* (runId: RunId, guard: RunGuard, write: FollowupWrite) {
        const set = write.next === undefined ? sql`updated_at = ${write.at}` : sql.update(yield* runColumns(write.next))
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* guardedWrite(runId, guard, set, write.events)
            if (write.followup !== undefined && write.maxPending !== undefined) {
              // After the guarded update: its row lock orders concurrent follow-ups of the run.
              const [counted] = yield* sql`SELECT COUNT(*) AS n FROM followup_inbox WHERE run_id = ${runId}`.pipe(
                Effect.flatMap(Schema.decodeUnknown(Count))
              )
              const pending = counted?.n ?? 0
              if (pending >= write.maxPending) return yield* new FollowupInboxFull({ pending })
            }
            if (write.maxTotal !== undefined) {
              yield* countFollowup(runId, write.followup === undefined ? 0 : utf8Bytes(write.followup.message), write.maxTotal)
            }
            if (write.followup !== undefined) {
              yield* sql`INSERT INTO followup_inbox ${sql.insert({
                run_id: runId,
                message: write.followup.message,
                received_at: write.followup.received_at
              })}`
            }
            if (write.shaper !== undefined) yield* insertShapers(runId, [write.shaper])
          })
        )
        if (write.next?.item.state === "QUEUED") yield* wake
      },
      operation("RunStore.recordFollowup")
    )

    const claims = runClaimSql(sql, { eventRows, insertAll })
    const claim = Effect.fn("RunStore.claim")(
      function* (params: ClaimParams) {
        const claimed = yield* claims.claim(params)
        if (Option.isNone(claimed)) return Option.none()
        const [run] = yield* storedRuns([claimed.value])
        return Option.fromNullable(run)
      },
      operation("RunStore.claim")
    )

    const renewLease = Effect.fn("RunStore.renewLease")(
      function* (runId: RunId, execution_id: ExecutionId, expires_at: number) {
        const renewed = yield* oneStatementWrite(
          sql`UPDATE runs SET lease_expires_at = ${expires_at}
            WHERE run_id = ${runId} AND lease_execution_id = ${execution_id} AND state IN ('CLAIMED', 'INPROGRESS')
            RETURNING run_id`
        )
        if (renewed.length === 0) return yield* new StaleWrite({ what: `lease of run ${runId}` })
      },
      operation("RunStore.renewLease")
    )

    const expiredLeases = Effect.fn("RunStore.expiredLeases")(
      function* (now: number, limit: number) {
        return yield* reader`SELECT ${columns} FROM runs
          WHERE lease_expires_at <= ${now} AND state IN ('CLAIMED', 'INPROGRESS')
          ORDER BY lease_expires_at, run_id LIMIT ${limit}`.pipe(Effect.flatMap(storedRuns))
      },
      operation("RunStore.expiredLeases")
    )

    const waitingForWorkers = Effect.fn("RunStore.waitingForWorkers")(
      function* (before: number, limit: number) {
        return yield* reader`SELECT ${columns} FROM runs
          WHERE state = 'QUEUED' AND worker_host IS NOT NULL AND worker_host <> '' AND created_at <= ${before}
            AND NOT EXISTS (SELECT 1 FROM workers w
              WHERE w.team_uid = runs.team_uid AND w.worker_id = runs.worker_host AND w.last_heartbeat_at > ${before})
          ORDER BY created_at, run_id LIMIT ${limit}`.pipe(Effect.flatMap(storedRuns))
      },
      operation("RunStore.waitingForWorkers")
    )

    const admission = Effect.fn("RunStore.admission")(
      function* (team: TeamUid) {
        const [row] = yield* reader`SELECT
          (SELECT COUNT(*) FROM runs
            WHERE team_uid = ${team} AND state IN ('QUEUED', 'CLAIMED', 'INPROGRESS') AND ${sql.literal(LIVE)}) AS active,
          EXISTS (SELECT 1 FROM runs WHERE team_uid = ${team} AND state = 'PENDING' AND ${sql.literal(LIVE)}) AS waiting`.pipe(
          Effect.flatMap(decodeAdmission)
        )
        return { active: row?.active ?? 0, waiting: row?.waiting ?? false }
      },
      operation("RunStore.admission")
    )

    const waitingTeams = Effect.fn("RunStore.waitingTeams")(
      function* (limit: number) {
        const rows = yield* reader<{ team_uid: string }>`SELECT DISTINCT team_uid FROM runs
          WHERE state = 'PENDING' AND ${sql.literal(LIVE)} LIMIT ${limit}`
        return rows.map((row) => row.team_uid as TeamUid)
      },
      operation("RunStore.waitingTeams")
    )

    const pending = Effect.fn("RunStore.pending")(
      function* (team: TeamUid, limit: number) {
        return yield* reader`SELECT ${columns} FROM runs WHERE team_uid = ${team} AND state = 'PENDING' AND ${sql.literal(LIVE)}
          ORDER BY created_at, run_id LIMIT ${limit}`.pipe(Effect.flatMap(storedRuns))
      },
      operation("RunStore.pending")
    )

    const timeline = Effect.fn("RunStore.timeline")(
      function* (runId: RunId, after: number) {
        const rows = yield* reader`SELECT sequence, event_type, occurred_at, execution_id, message, data
          FROM timeline_events WHERE run_id = ${runId} AND sequence > ${after} ORDER BY sequence`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Schema.Array(EventRow)))
        )
        return yield* decodeEvents(
          rows.filter((e) => isKnownEventType(e.event_type)).map((e) => ({
            sequence: e.sequence,
            event_type: e.event_type,
            occurred_at: iso(e.occurred_at),
            execution_id: e.execution_id,
            ...(e.message === null ? {} : { message: e.message }),
            ...(e.data === null ? {} : { data: e.data })
          }))
        )
      },
      operation("RunStore.timeline")
    )

    const conversations = conversationsSql(sql, reader)
    const spend = runSpendSql(reader)
    const overview = runOverviewSql(reader)

    /** Taken follow-ups, oldest first. */
    const followupsOf = (rows: ReadonlyArray<typeof FollowupRow.Type>) =>
      [...rows]
        .sort((a, b) => a.received_at - b.received_at || a.id - b.id)
        .map((r): StoredFollowup => ({ message: r.message, received_at: r.received_at }))

    const takeAll = (runId: RunId) => sql`DELETE FROM followup_inbox WHERE run_id = ${runId} RETURNING id, message, received_at`

    const takeFollowups = Effect.fn("RunStore.takeFollowups")(
      function* (runId: RunId) {
        const rows = yield* oneStatementWrite(takeAll(runId)).pipe(Effect.flatMap(decodeFollowups))
        return followupsOf(rows)
      },
      operation("RunStore.takeFollowups")
    )

    const takeHeldFollowups = Effect.fn("RunStore.takeHeldFollowups")(
      function* (runId: RunId, executionId: ExecutionId) {
        const held = sql`SELECT run_id FROM runs
          WHERE run_id = ${runId} AND lease_execution_id = ${executionId} AND state IN ('CLAIMED', 'INPROGRESS')`
        // PostgreSQL: the row is locked (a takeover committed meanwhile is waited for and seen).
        const heldLocked = sql`${held} FOR SHARE`
        // Whether the execution holds the run, and what was taken (none unless it does): one statement on PostgreSQL.
        const taken = yield* sql.onDialectOrElse({
          pg: () =>
            sql`WITH h AS (${heldLocked}), d AS (
                DELETE FROM followup_inbox WHERE run_id = ${runId} AND EXISTS (SELECT 1 FROM h) RETURNING id, message, received_at
              ) SELECT EXISTS (SELECT 1 FROM h) AS held, d.id, d.message, d.received_at FROM (SELECT 1 AS one) o LEFT JOIN d ON true`.pipe(
              Effect.flatMap(decodeHeldFollowups),
              Effect.map((rows) => rows[0]?.held === true ? Option.some(rows.filter((r) => r.id !== null) as ReadonlyArray<typeof FollowupRow.Type>) : Option.none())
            ),
          orElse: () =>
            sql.withTransaction(Effect.flatMap(held, (h) =>
              h.length === 0 ? Effect.succeedNone : Effect.map(Effect.flatMap(takeAll(runId), decodeFollowups), Option.some)))
        })
        if (Option.isNone(taken)) return yield* new StaleWrite({ what: `follow-ups of run ${runId}: not held by ${executionId}` })
        return followupsOf(taken.value)
      },
      operation("RunStore.takeHeldFollowups")
    )

    const addArtifact = Effect.fn("RunStore.addArtifact")(
      function* (runId: RunId, artifact: Artifact) {
        yield* sql.withTransaction(
          Effect.gen(function* () {
            const counted = yield* sql`UPDATE runs SET artifact_count = artifact_count + 1 WHERE run_id = ${runId}
              RETURNING artifact_count`.pipe(
              Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ artifact_count: Int }))))
            )
            const position = counted[0]?.artifact_count
            if (position === undefined) return yield* Effect.fail(`no run ${runId}`)
            yield* insertAll("run_artifacts", [yield* artifactRow(runId, position, artifact)])
          })
        )
      },
      operation("RunStore.addArtifact")
    )

    const findByExternalReference = Effect.fn("RunStore.findByExternalReference")(
      function* (url: string, viewer?: Viewer) {
        const found = yield* viewer === undefined
          ? reader<{ run_id: RunId }>`SELECT run_id FROM run_artifacts WHERE external_url = ${url}
            ORDER BY created_at DESC, run_id DESC LIMIT 1`
          : reader<{ run_id: RunId }>`SELECT a.run_id FROM run_artifacts a JOIN runs ON runs.run_id = a.run_id
            WHERE a.external_url = ${url} AND ${visibleTo(reader, viewer, "runs")}
            ORDER BY a.created_at DESC, a.run_id DESC LIMIT 1`
        const runId = found[0]?.run_id
        return runId === undefined ? Option.none() : yield* get(runId)
      },
      operation("RunStore.findByExternalReference")
    )

    const findByConversation = Effect.fn("RunStore.findByConversation")(
      function* (conversationId: ConversationId) {
        return yield* reader`SELECT ${columns} FROM runs WHERE conversation_id = ${conversationId} ORDER BY created_at, run_id`.pipe(
          Effect.flatMap(storedRuns)
        )
      },
      operation("RunStore.findByConversation")
    )

    const signals = wakeups.signals.pipe(
      Stream.mapError((cause) => new StorageError({ operation: "RunStore.wakeups", cause }))
    )

    return RunStore.of({
      create,
      createTicks,
      get,
      states,
      list,
      listJson,
      getJson,
      countByState,
      update,
      claim,
      renewLease,
      expiredLeases,
      waitingForWorkers,
      admission,
      waitingTeams,
      pending,
      timeline,
      ...conversations,
      recordFollowup,
      addShapers,
      shapers,
      takeFollowups,
      takeHeldFollowups,
      addArtifact,
      findByExternalReference,
      findByConversation,
      descendants: spend.descendants,
      spendByDay: spend.spendByDay,
      overviewRuns: overview.overviewRuns,
      createChild,
      wakeups: signals
    })
  })
)
