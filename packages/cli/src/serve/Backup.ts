/**
 * `agent-runs backup DIR` and `agent-runs restore DIR` (docs/operations.md): a consistent online
 * backup of what the server of the environment's configuration keeps (serve/Config.ts), and its
 * restore into a new data directory and database.
 *
 * Decisions:
 * - Order: the database first (one consistent moment: SQLite's `VACUUM INTO`, PostgreSQL's
 *   `pg_dump`), then the blob directory, then the secret key. Blobs are written before the rows
 *   that name them and transcripts only grow, so every blob the database snapshot names was there
 *   when the copy ran; blobs newer than the snapshot are copied too and are harmless.
 * - A blob removed while the copy runs is skipped (its run was removed after the snapshot: it
 *   comes back without that blob; the retention sweep removes it again).
 * - The key: the `secret-key` file of the data directory is copied (mode 0600); a key given as
 *   `AGENT_RUNS_SECRET_KEY` is not written anywhere: the manifest says so, and it must be kept
 *   apart, with the backup's other secrets.
 * - Only the owner reads the backup (umask 077, the directory 0700), and it is never inside the
 *   data or blob directory (a backup in the blobs would copy itself).
 * - Restore refuses a database, blob directory or key file that holds anything already.
 */
import { PgBackup } from "@agent-runs/storage-pg"
import { SqliteBackup } from "@agent-runs/storage-sqlite"
import { Console, Effect, Option } from "effect"
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve, sep } from "node:path"
import { ServerConfig } from "./Config.js"

const MANIFEST = "manifest.json"
const SQLITE_FILE = "agent-runs.db"
const PG_FILE = "database.pgdump"

interface Manifest {
  readonly format: 1
  readonly created_at: string
  readonly database: "sqlite" | "postgresql"
  readonly secret_key: "file" | "environment"
  readonly blob_files: number
}

const attempt = <A>(what: string, f: () => A) =>
  Effect.try({ try: f, catch: (cause) => new Error(`${what}: ${cause instanceof Error ? cause.message : String(cause)}`) })

/** Copies a directory tree; files that vanish meanwhile are skipped. How many files it copied. */
const copyTree = (from: string, to: string): number => {
  if (!existsSync(from)) return 0
  mkdirSync(to, { recursive: true })
  let copied = 0
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name)
    const target = join(to, entry.name)
    if (entry.isDirectory()) copied += copyTree(source, target)
    else if (entry.isFile()) copied += copyIfPresent(source, target)
  }
  return copied
}

const copyIfPresent = (source: string, target: string): number => {
  try {
    copyFileSync(source, target)
    return 1
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return 0
    throw error
  }
}

const isEmptyDir = (dir: string) => !existsSync(dir) || readdirSync(dir).length === 0

/** Whether one of two paths lies inside the other (a backup inside the blobs would copy itself). */
const nested = (a: string, b: string) => {
  const [x, y] = [resolve(a) + sep, resolve(b) + sep]
  return x.startsWith(y) || y.startsWith(x)
}

/** Backs up the configured server's database, blobs and key into `to` (new or empty). */
export const backup = (to: string) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    if (!isEmptyDir(to)) return yield* Effect.fail(new Error(`${to} is not empty: back up into a new directory`))
    if (nested(to, config.blobDir) || nested(to, config.dataDir)) {
      return yield* Effect.fail(new Error(`${to}: back up outside the data and blob directories`))
    }
    // Only its owner reads what it writes: the database, the blobs and the key.
    process.umask(0o077)
    yield* attempt(to, () => {
      mkdirSync(to, { recursive: true, mode: 0o700 })
      chmodSync(to, 0o700)
    })
    const database = config.database
    if (database._tag === "Sqlite") yield* SqliteBackup.snapshot(database.filename, join(to, SQLITE_FILE))
    else yield* PgBackup.dump(database.url, join(to, PG_FILE))
    const blobFiles = yield* attempt("the blob directory", () => copyTree(config.blobDir, join(to, "blobs")))
    const keyFile = join(config.dataDir, "secret-key")
    const keyFromFile = Option.isNone(config.secretKey)
    if (keyFromFile) {
      yield* attempt(keyFile, () => {
        copyFileSync(keyFile, join(to, "secret-key"))
        chmodSync(join(to, "secret-key"), 0o600)
      })
    }
    const manifest: Manifest = {
      format: 1,
      created_at: new Date().toISOString(),
      database: database._tag === "Sqlite" ? "sqlite" : "postgresql",
      secret_key: keyFromFile ? "file" : "environment",
      blob_files: blobFiles
    }
    yield* attempt(MANIFEST, () => writeFileSync(join(to, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`))
    yield* Console.log(`backed up the ${manifest.database} database, ${blobFiles} blobs and ${
      keyFromFile ? "the secret key" : "no key (AGENT_RUNS_SECRET_KEY: keep it with the backup)"
    } to ${to}`)
  })

const readManifest = (from: string) =>
  attempt(join(from, MANIFEST), () => JSON.parse(readFileSync(join(from, MANIFEST), "utf8")) as Manifest)

/** Restores a backup into the configured (new, empty) data directory, blob directory and database. */
export const restore = (from: string) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const manifest = yield* readManifest(from)
    const database = config.database
    const kind = database._tag === "Sqlite" ? "sqlite" : "postgresql"
    if (manifest.format !== 1 || manifest.database !== kind) {
      return yield* Effect.fail(new Error(`${from} holds a ${manifest.database} backup (format ${manifest.format}); the configuration names ${kind}`))
    }
    if (!isEmptyDir(config.blobDir)) return yield* Effect.fail(new Error(`${config.blobDir} is not empty: restore into a new data directory`))
    const keyFile = join(config.dataDir, "secret-key")
    if (manifest.secret_key === "file" && Option.isNone(config.secretKey) && existsSync(keyFile)) {
      return yield* Effect.fail(new Error(`${keyFile} exists: restore into a new data directory`))
    }
    yield* attempt(config.dataDir, () => mkdirSync(config.dataDir, { recursive: true }))
    if (database._tag === "Sqlite") yield* SqliteBackup.restore(join(from, SQLITE_FILE), database.filename)
    else yield* PgBackup.restore(join(from, PG_FILE), database.url)
    const blobFiles = yield* attempt("the blob directory", () => copyTree(join(from, "blobs"), config.blobDir))
    if (manifest.secret_key === "file" && Option.isNone(config.secretKey)) {
      yield* attempt(keyFile, () => {
        copyFileSync(join(from, "secret-key"), keyFile)
        chmodSync(keyFile, 0o600)
      })
    }
    const key = manifest.secret_key === "environment"
      ? "set AGENT_RUNS_SECRET_KEY to the key the backup was made with"
      : Option.isSome(config.secretKey)
      ? "AGENT_RUNS_SECRET_KEY is set: it must be the key in the backup's secret-key file"
      : "the secret key restored"
    yield* Console.log(`restored the ${kind} database and ${blobFiles} blobs from ${from}; ${key}`)
  })
