/**
 * Creating directories. Node 20's `mkdirSync(path, { recursive: true })` (and the promise
 * version) never returns for some paths, such as any under `/proc`: a host given
 * `AGENT_RUNS_DATA_DIR=/proc/nope` would hang at start. `ensureDirectory` creates one level at a
 * time instead, so such a path fails at once with the reason (`ENOENT`, `EACCES`, `ENOTDIR`, …).
 */
import { mkdirSync, statSync } from "node:fs"
import { dirname, resolve } from "node:path"

export interface EnsureOptions {
  /** The mode of the directories it creates (before the umask; Node's default 0o777). */
  readonly mode?: number
}

/** Creates `dir` and its missing parents, one level at a time; throws Node's error when one cannot be created. */
export const ensureDirectory = (dir: string, options: EnsureOptions = {}): void => {
  const path = resolve(dir)
  const stat = statSync(path, { throwIfNoEntry: false })
  if (stat !== undefined) {
    if (stat.isDirectory()) return
    throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${path}'`), { code: "ENOTDIR", path })
  }
  const parent = dirname(path)
  if (parent !== path) ensureDirectory(parent, options)
  try {
    mkdirSync(path, options.mode === undefined ? undefined : { mode: options.mode })
  } catch (error) {
    // Created meanwhile (another process starting beside this one): fine.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST" || !statSync(path).isDirectory()) throw error
  }
}
