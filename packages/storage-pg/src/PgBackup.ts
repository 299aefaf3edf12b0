/**
 * Backing up and restoring a PostgreSQL database (docs/operations.md) with PostgreSQL's own tools:
 * `pg_dump` takes a consistent snapshot of a live database (one repeatable-read transaction; the
 * server keeps writing), in its custom format; `pg_restore` loads it into an empty database in one
 * transaction. Both must be on the PATH, of the server's major version or newer.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { spawn } from "node:child_process"

/** Runs one of PostgreSQL's tools to its end; fails with its last line on stderr. */
const run = (tool: string, args: ReadonlyArray<string>) =>
  Effect.async<void, Error>((resume) => {
    const child = spawn(tool, args, { stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-4000)))
    child.once("error", (error) => resume(Effect.fail(new Error(`${tool}: ${error.message} (is it installed and on the PATH?)`))))
    child.once("close", (code) => {
      const last = stderr.trim().split("\n").pop() ?? ""
      resume(code === 0 ? Effect.void : Effect.fail(new Error(`${tool} exited with ${code}: ${last}`)))
    })
    return Effect.sync(() => child.kill("SIGTERM"))
  })

/** Writes a consistent dump of the live database at `url` to the file `to`. */
export const dump = (url: Redacted.Redacted, to: string) =>
  run("pg_dump", ["--format=custom", "--no-owner", "--no-privileges", `--file=${to}`, `--dbname=${Redacted.value(url)}`])

/** Loads a dump into the database at `url`, which must hold no Agent Runs schema yet. */
export const restore = (from: string, url: Redacted.Redacted) =>
  Effect.gen(function*() {
    const present = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ present: string | null }>`SELECT to_regclass('agent_runs_migrations')::text AS present`).pipe(
        Effect.provide(PgClient.layer({ url, maxConnections: 1 })),
        Effect.mapError((e) => new Error(`the database: ${e.message}`))
      )
    if (present[0]?.present !== null && present[0]?.present !== undefined) {
      return yield* Effect.fail(new Error("the database holds Agent Runs tables already: restore into a new, empty database"))
    }
    yield* run("pg_restore", ["--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error", `--dbname=${Redacted.value(url)}`, from])
  })
