/**
 * How a host (the bundled server, the self-hosted worker) sets up the process executor's
 * isolation: `AGENT_RUNS_PROCESS_ISOLATION` = `auto` (the default: a user per sandbox when the host
 * runs as root, none otherwise), `uid` (a user per sandbox, or the host does not start) or `none`.
 *
 * With isolation, the host's data directory becomes searchable but not listable (0711) and
 * everything in it but the sandboxes and `agents/` (copies of agent programs sandbox users run,
 * see `sharedProgram`) readable by its owner only; the process's umask becomes 077 so that what it writes later (database, blobs) is private
 * too. It checks that a sandbox's user can reach the sandboxes' root at all. Without isolation it
 * warns, once, that agents can read everything the host can.
 */
import { Directories } from "@agent-runs/node-fs"
import { Data, Effect } from "effect"
import { chmodSync, existsSync, readdirSync, statSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import type { Isolation, UidRange } from "./ProcessExecutor.js"

export type Mode = "auto" | "uid" | "none"

/** The uids sandboxes get by default: 1,000,000,000 to 1,999,999,999 (no login user has one). */
export const DEFAULT_UIDS: UidRange = { first: 1_000_000_000, count: 1_000_000_000 }

/** The largest uid a sandbox may get (Node's `spawn` takes 32-bit signed uids). */
const MAX_UID = 2_147_483_647

/** Parses `FIRST-LAST` (inclusive), e.g. `1000000000-1999999999`; undefined when malformed or below 1000. */
export const parseUidRange = (text: string): UidRange | undefined => {
  const match = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text)
  if (match === null) return undefined
  const first = Number(match[1])
  const last = Number(match[2])
  if (first < 1000 || last < first || last > MAX_UID) return undefined
  return { first, count: last - first + 1 }
}

/** The host cannot isolate agents as configured: it does not start. */
export class IsolationUnavailable extends Data.TaggedError("IsolationUnavailable")<{ readonly message: string }> {}

/** The first directory on the way to `path` (itself included) that other users cannot search, if any. */
export const unsearchableAncestor = (path: string): string | undefined => {
  const chain: Array<string> = []
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    chain.unshift(dir)
    if (dirname(dir) === dir) break
  }
  for (const dir of chain) {
    if (!existsSync(dir)) return undefined
    if ((statSync(dir).mode & 0o001) === 0) return dir
  }
  return undefined
}

/** Whether other users can run the program `file` (executable, and every directory on the way searchable). */
export const runnableByOthers = (file: string): boolean =>
  existsSync(file) && unsearchableAncestor(dirname(file)) === undefined && (statSync(file).mode & 0o001) !== 0

/** Makes `dataDir` searchable only, and every entry of it but `open` private to its owner. */
const protect = (dataDir: string, open: ReadonlyArray<string>) => {
  Directories.ensureDirectory(dataDir)
  chmodSync(dataDir, 0o711)
  for (const entry of readdirSync(dataDir, { withFileTypes: true })) {
    if (open.includes(entry.name) || entry.isSymbolicLink()) continue
    const path = join(dataDir, entry.name)
    chmodSync(path, statSync(path).mode & 0o700)
  }
}

export interface Options {
  readonly mode: Mode
  readonly uids: UidRange
  /** The host's data directory (its secrets, database, blobs …). */
  readonly dataDir: string
  /** The sandboxes' root, a directory of `dataDir`. */
  readonly root: string
  /** More directories the host keeps its data in, outside `dataDir` (made private to its owner). */
  readonly private?: ReadonlyArray<string>
}

/** The folder of the data directory with agent programs that sandbox users may read. */
export const AGENTS_DIR = "agents"

/**
 * A program sandbox users can run, for a host with isolation: `install(dir)` copies it into
 * `<dataDir>/agents/<name>` and returns its command, which runs it with this Node.
 */
export const sharedProgram = (dataDir: string, name: string, install: (dir: string) => string) =>
  Effect.gen(function*() {
    if (!runnableByOthers(process.execPath)) {
      return yield* new IsolationUnavailable({
        message: `AGENT_RUNS_PROCESS_ISOLATION: sandbox users cannot run ${process.execPath} (it, or a directory on the ` +
          `way, is private); install Node in a shared place, or set AGENT_RUNS_PROCESS_ISOLATION=none`
      })
    }
    return yield* Effect.try({
      try: () => {
        const agents = join(dataDir, AGENTS_DIR)
        Directories.ensureDirectory(agents)
        chmodSync(agents, 0o755)
        return install(join(agents, name))
      },
      catch: (cause) => new IsolationUnavailable({ message: `could not install ${name} for sandbox users: ${(cause as Error).message}` })
    })
  })

/** The warning a host without isolation prints once at start. */
export const NO_ISOLATION_WARNING =
  "the process executor isolates nothing here: agents and setup commands run as this service's user and can read " +
  "its data directory (admin token, secret key, database). Run the service as root (a user per sandbox), or use " +
  "AGENT_RUNS_EXECUTOR=docker for prompts you do not trust (docs/security.md)."

/**
 * Decides the isolation for `options` and prepares the data directory for it; none (after the
 * warning) when the mode is `none`, or `auto` and the host is not root.
 */
export const setUp = (options: Options): Effect.Effect<Isolation | undefined, IsolationUnavailable> =>
  Effect.gen(function*() {
    const root = process.getuid?.() === 0
    if (options.mode === "none" || (options.mode === "auto" && !root)) {
      yield* Effect.logWarning(NO_ISOLATION_WARNING)
      return undefined
    }
    if (!root) {
      return yield* new IsolationUnavailable({
        message: "AGENT_RUNS_PROCESS_ISOLATION=uid: the service must run as root to start agents as users of their own " +
          "(or set AGENT_RUNS_PROCESS_ISOLATION=none, and agents can read this service's secrets)"
      })
    }
    const sandboxes = resolve(options.root)
    const dataDir = resolve(options.dataDir)
    if (dirname(sandboxes) !== dataDir) {
      return yield* new IsolationUnavailable({ message: `the sandboxes' root ${sandboxes} must be a directory of ${dataDir}` })
    }
    const blocked = unsearchableAncestor(dirname(dataDir))
    if (blocked !== undefined) {
      return yield* new IsolationUnavailable({
        message: `AGENT_RUNS_PROCESS_ISOLATION: agents run as users of their own and cannot reach ${sandboxes} ` +
          `(${blocked} is not searchable by other users); put the data directory (AGENT_RUNS_DATA_DIR) below a ` +
          `searchable directory such as /var/lib, or set AGENT_RUNS_PROCESS_ISOLATION=none`
      })
    }
    yield* Effect.try({
      try: () => {
        process.umask(0o077)
        protect(dataDir, [sandboxes.slice(dataDir.length + 1), AGENTS_DIR])
        for (const dir of options.private ?? []) {
          if (existsSync(dir)) chmodSync(dir, statSync(dir).mode & 0o700)
        }
      },
      catch: (cause) => new IsolationUnavailable({ message: `could not protect ${dataDir}: ${(cause as Error).message}` })
    })
    return { uids: options.uids }
  })
