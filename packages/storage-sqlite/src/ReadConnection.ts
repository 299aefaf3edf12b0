/**
 * The read-only connection of `SqliteStorage` (storage-sql's Reader.ts) as an `@effect/sql`
 * client over better-sqlite3 (the driver `@effect/sql-sqlite-node` itself uses).
 *
 * Decisions:
 * - Not `SqliteClient.make`: that client serializes every statement through a semaphore and looks
 *   each one up in an Effect `Cache`, which its one connection shared by every fiber needs (a
 *   transaction holds the connection). This connection is only read outside transactions, and
 *   better-sqlite3 runs a statement synchronously, so a statement needs neither: about 40 of an
 *   uncontended read's 100 Effect operations (docs/performance.md).
 * - A statement is prepared once per SQL text, at most `MAX_PREPARED` kept (then the cache starts
 *   again: texts differ only by the number of `IN` parameters, so there are few).
 * - A transaction asked of it still takes the connection alone (a semaphore, as `SqliteClient`'s);
 *   a bare read of another fiber meanwhile reads in that transaction's snapshot, which is a commit too.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, type SqlConnection, Statement } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import Database from "better-sqlite3"
import { Effect, Scope, Stream } from "effect"

/** What a client may ask to be done to a statement's rows. */
type TransformRows = (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined

/** The most prepared statements kept. */
const MAX_PREPARED = 500

/** A read-only client of the SQLite database `filename`, closed with the scope. */
export const make = (filename: string): Effect.Effect<SqlClient.SqlClient, SqlError, Scope.Scope> =>
  Effect.gen(function* () {
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const opened = new Database(filename, { readonly: true })
          opened.pragma("busy_timeout = 5000")
          return opened
        },
        catch: (cause) => new SqlError({ cause, message: `cannot open ${filename} to read` })
      }),
      (opened) => Effect.sync(() => opened.close())
    )
    const prepared = new Map<string, Database.Statement>()
    const prepare = (sql: string) => {
      let statement = prepared.get(sql)
      if (statement === undefined) {
        if (prepared.size >= MAX_PREPARED) prepared.clear()
        statement = db.prepare(sql)
        prepared.set(sql, statement)
      }
      return statement
    }
    /** The rows of a statement as objects (none for a statement that returns no rows). */
    const rows = (statement: () => Database.Statement, params: ReadonlyArray<unknown>) =>
      Effect.try({
        try: (): ReadonlyArray<unknown> => {
          const s = statement()
          if (s.reader) return s.all(...params)
          s.run(...params)
          return []
        },
        catch: (cause) => new SqlError({ cause, message: "Failed to execute statement" })
      })
    /** The rows of a statement as arrays of values. */
    const values = (sql: string, params: ReadonlyArray<unknown>) =>
      Effect.try({
        try: (): ReadonlyArray<ReadonlyArray<unknown>> => {
          const s = prepare(sql)
          if (!s.reader) return (s.run(...params), [])
          try {
            return s.raw(true).all(...params) as ReadonlyArray<ReadonlyArray<unknown>>
          } finally {
            s.raw(false)
          }
        },
        catch: (cause) => new SqlError({ cause, message: "Failed to execute statement" })
      })
    const transformed = (found: Effect.Effect<ReadonlyArray<unknown>, SqlError>, transformRows: TransformRows) =>
      transformRows === undefined ? found : Effect.map(found, (r) => transformRows(r as ReadonlyArray<object>))
    const connection: SqlConnection.Connection = {
      execute: (sql, params, transformRows) => transformed(rows(() => prepare(sql), params), transformRows),
      executeRaw: (sql, params) => rows(() => prepare(sql), params),
      executeValues: values,
      executeUnprepared: (sql, params, transformRows) => transformed(rows(() => db.prepare(sql), params), transformRows),
      executeStream: () => Stream.dieMessage("executeStream not implemented")
    }
    const semaphore = yield* Effect.makeSemaphore(1)
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(restore(semaphore.take(1)), Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))),
        connection
      )
    )
    return yield* SqlClient.make({
      acquirer: Effect.succeed(connection),
      transactionAcquirer,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    }).pipe(Effect.provide(Reactivity.layer))
  })
