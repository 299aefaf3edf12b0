/**
 * Fresh PostgreSQL databases for a benchmark, and the watchdog that drops them (and removes the
 * bench's directories) when the script overruns its limit or is interrupted. The server is the
 * tests' (127.0.0.1:5432; AGENT_RUNS_TEST_PG overrides it). Shared by bench/queue and bench/engine.
 */
import { SERVER } from "@agent-runs/storage-pg/testing"
import { randomBytes } from "node:crypto"
import { rmSync } from "node:fs"
import pg from "pg"

export { SERVER }

/** Databases to drop and directories to remove before the script exits. */
const databases = new Set<string>()
export const directories = new Set<string>()

const admin = async <A>(f: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: `${SERVER}/test` })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

/** A new empty database, named after `prefix` (e.g. `agent_runs_bench_queue`), dropped by `dropDatabase` or the watchdog. */
export const freshDatabase = async (prefix: string): Promise<string> => {
  const name = `${prefix}_${Date.now()}_${randomBytes(4).toString("hex")}`
  await admin((c) => c.query(`CREATE DATABASE ${name}`))
  databases.add(name)
  return name
}

export const dropDatabase = async (name: string): Promise<void> => {
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  databases.delete(name)
}

/**
 * Drops every database made here and removes the directories, then exits with `code` (after 20 s
 * at the latest).
 */
export const stopNow = (bench: string, why: string, code: number): void => {
  console.error(`bench:${bench}: ${why}; cleaning up`)
  for (const dir of directories) rmSync(dir, { recursive: true, force: true })
  setTimeout(() => process.exit(code), 20_000).unref()
  void Promise.all([...databases].map((name) => dropDatabase(name).catch(() => undefined))).then(() => process.exit(code))
}

/** Stops the script after `timeoutMs`, and on SIGINT and SIGTERM, cleaning up first. */
export const watchdog = (bench: string, timeoutMs: number): void => {
  setTimeout(() => stopNow(bench, `did not finish within ${timeoutMs / 1000} s`, 2), timeoutMs).unref()
  process.once("SIGINT", () => stopNow(bench, "interrupted", 130))
  process.once("SIGTERM", () => stopNow(bench, "terminated", 143))
}
