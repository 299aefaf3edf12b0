/** The database file's directory is created when missing; one that cannot be created is a clear failure. */
import { SqlClient } from "@effect/sql"
import { Effect, Exit } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expect, it } from "vitest"
import { SqliteStorage } from "../src/index.js"

const secretKey = new Uint8Array(randomBytes(32))
const ping = Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1`)

it("creates the directory of the database file", async () => {
  const dir = mkdtempSync(join(tmpdir(), "agent-runs-sqlite-dir-"))
  try {
    const filename = join(dir, "nested", "deeper", "agent-runs.db")
    await Effect.runPromise(ping.pipe(Effect.provide(SqliteStorage.layer({ filename, secretKey }))))
    expect(existsSync(filename)).toBe(true)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

it("says which file's directory it could not create", async () => {
  const exit = await Effect.runPromiseExit(
    ping.pipe(Effect.provide(SqliteStorage.layer({ filename: "/proc/nope/agent-runs.db", secretKey })))
  )
  expect(Exit.isFailure(exit)).toBe(true)
  expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain("cannot create the directory of /proc/nope/agent-runs.db")
})
