/** Test databases: real SQLite files (WAL) in a temporary directory removed afterwards. */
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
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

/** Every store on a fresh database file. */
export const storageLayer = Layer.unwrapScoped(
  Effect.map(freshDatabase, ({ filename }) => SqliteStorage.layer({ filename, secretKey: testKey() }))
)
