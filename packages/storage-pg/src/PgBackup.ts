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

/**
 * The URL without its password, and the password for `PGPASSWORD`: a command line is readable by
 * every local user (`ps`), the environment of a process only by its owner.
 */
const connection = (url: Redacted.Redacted) => {
  const parsed = new URL(Redacted.value(url))
  const password = decodeURIComponent(parsed.password)
  parsed.password = ""
  return { dbname: parsed.toString(), env: password === "" ? {} : { PGPASSWORD: password } }
}

/** What a tool said went wrong: its first `error:` line and what follows, as one line. */
const failure = (stderr: string): string => {
  const lines = stderr.trim().split("\n")
  const first = lines.findIndex((line) => /error:/i.test(line))
  return lines.slice(first < 0 ? -1 : first).join(" ").replace(/\s+/g, " ").trim()
}

/** Runs one of PostgreSQL's tools to its end; fails with what it said went wrong. */
const run = (tool: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>>) =>
  Effect.async<void, Error>((resume) => {
    const child = spawn(tool, args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } })
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-4000)))
    child.once("error", (error) => resume(Effect.fail(new Error(`${tool}: ${error.message} (is it installed and on the PATH?)`))))
    child.once("close", (code) => {
      resume(code === 0 ? Effect.void : Effect.fail(new Error(`${tool} exited with ${code}: ${failure(stderr)}`)))
    })
    return Effect.sync(() => child.kill("SIGTERM"))
  })

/** Writes a consistent dump of the live database at `url` to the file `to`. */
export const dump = (url: Redacted.Redacted, to: string) => {
  const { dbname, env } = connection(url)
  return run("pg_dump", ["--format=custom", "--no-owner", "--no-privileges", `--file=${to}`, `--dbname=${dbname}`], env)
}

/** Loads a dump into the database at `url`, whose schema must hold no table yet. */
export const restore = (from: string, url: Redacted.Redacted) =>
  Effect.gen(function*() {
    const tables = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ n: number }>`SELECT COUNT(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema()`).pipe(
        Effect.provide(PgClient.layer({ url, maxConnections: 1 })),
        Effect.mapError((e) => new Error(`the database: ${e.message}`))
      )
    if ((tables[0]?.n ?? 0) > 0) {
      return yield* Effect.fail(new Error("the database holds tables already: restore into a new, empty database"))
    }
    const { dbname, env } = connection(url)
    yield* run("pg_restore", ["--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error", `--dbname=${dbname}`, from], env)
  })
