/** Test databases: real SQLite files (WAL) in a temporary directory removed afterwards. */
import { RawStorage } from "@agent-runs/core/testing"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqliteStorage } from "../src/index.js"

/** A temporary directory for the scope; yields the database file path inside it. */
export const freshDatabase = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "agent-runs-sqlite-"))
    return { dir, filename: join(dir, "agent-runs.db") }
  }),
  ({ dir }) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** A random 32-byte secret key. */
export const testKey = () => Redacted.make(new Uint8Array(randomBytes(32)))

/**
 * The database's stored bytes: the file and its write-ahead log, read after a checkpoint. (A text
 * longer than a page can be split across overflow pages; the suite only searches short texts.)
 */
const rawStorage = (filename: string) =>
  Layer.effect(
    RawStorage,
    Effect.map(SqlClient.SqlClient, (sql) => ({
      contains: (needle: string) =>
        Effect.gen(function* () {
          yield* sql`PRAGMA wal_checkpoint(TRUNCATE)`
          const bytes = Buffer.from(needle, "utf8")
          return [filename, `${filename}-wal`].some((file) => existsSync(file) && readFileSync(file).includes(bytes))
        }).pipe(Effect.orDie)
    }))
  )

/** Every store on a fresh database file, and its raw bytes. */
export const storageLayer = Layer.unwrapScoped(
  Effect.map(freshDatabase, ({ filename }) =>
    rawStorage(filename).pipe(Layer.provideMerge(SqliteStorage.layer({ filename, secretKey: testKey() }))))
)
