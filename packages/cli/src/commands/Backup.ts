/**
 * `agent-runs backup DIR` and `agent-runs restore DIR` (docs/operations.md): the server of the
 * environment's configuration (`AGENT_RUNS_DATA_DIR`, `AGENT_RUNS_DATABASE_URL`, …), backed up
 * while it runs, or restored before it starts. The work is in serve/Backup.ts, loaded only here.
 */
import { Args, Command } from "@effect/cli"
import { Effect } from "effect"
import type * as BackupModule from "../serve/Backup.js"

const dir = Args.directory({ name: "dir", exists: "either" })

/** Runs `f` of serve/Backup.ts (a failure is one line: Failure.ts). */
const withBackup = <E>(f: (module: typeof BackupModule) => Effect.Effect<void, E>) =>
  Effect.flatMap(Effect.promise(() => import("../serve/Backup.js")), f)

export const backupCommand = Command.make("backup", { dir }, ({ dir }) => withBackup((m) => m.backup(dir))).pipe(
  Command.withDescription(
    "Back up the server of this configuration while it runs: a consistent copy of its database, then its blobs and its " +
      "secret key, into DIR (new or empty)."
  )
)

export const restoreCommand = Command.make("restore", { dir }, ({ dir }) => withBackup((m) => m.restore(dir))).pipe(
  Command.withDescription(
    "Restore a backup made by `agent-runs backup` into this configuration's new, empty data directory and database, " +
      "before the server starts."
  )
)
