/**
 * The disk a mirror cache may take (MirrorCache.ts): at most `maxBytes` for all its mirrors, the
 * least recently used removed first when a refresh takes the total over.
 *
 * Decisions:
 * - A mirror in use (held by a clone, a skills read, a push or its own fetch, counted by
 *   `acquire`/`release`) is never removed; the total may then stay over the bound until it is
 *   released. A use that begins while its mirror is being removed waits for the removal, then
 *   downloads it again. Removals run one shrink at a time.
 * - Sizes are measured after each refresh of a mirror (the bytes of its files); the mirrors on the
 *   disk when the process starts are measured at the first use, their last use taken as their
 *   files' modification time.
 * - A repository larger than the whole bound fails its use, naming both sizes, and its mirror is
 *   removed when released: one repository cannot push every other team's mirror out.
 */
import { Effect } from "effect"
import { readdir, rm, stat } from "node:fs/promises"
import { join } from "node:path"
import { GitError } from "./GitError.js"

/** The bound when none is given: 20 GiB. */
export const DEFAULT_MIRRORS_MAX_BYTES = 20 * 1024 ** 3

/** The bytes of the files under `dir` (0 when it is gone). */
const bytesOf = async (dir: string): Promise<number> => {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])
  let total = 0
  for (const entry of entries) {
    if (entry.isFile()) total += await stat(join(entry.parentPath, entry.name)).then((s) => s.size, () => 0)
  }
  return total
}

const mb = (bytes: number) => `${Math.ceil(bytes / 1024 ** 2).toLocaleString("en")} MB`

export interface MirrorQuota {
  /** Marks `dir` in use (first reading what is on the disk, once). */
  readonly acquire: (dir: string) => Effect.Effect<void>
  /** Marks a use of `dir` ended, then removes what is over the bound. */
  readonly release: (dir: string) => Effect.Effect<void>
  /** Measures `dir` after a refresh and removes what is over the bound; fails when `dir` alone is over it. */
  readonly record: (dir: string, name: string) => Effect.Effect<void, GitError>
}

/** The quota of the mirrors under `root` (`<root>/<team>/<name>.git`). */
export const makeQuota = (root: string, maxBytes: number): MirrorQuota => {
  const sizes = new Map<string, number>()
  const usedAt = new Map<string, number>()
  const users = new Map<string, number>()
  /** Mirrors being removed: a use waits for the removal to end, then downloads the mirror again. */
  const removing = new Map<string, Promise<void>>()
  let scanning: Promise<void> | undefined
  /** One shrink at a time. */
  let shrinking: Promise<void> = Promise.resolve()

  const scan = async () => {
    for (const team of await readdir(root).catch(() => [])) {
      for (const name of await readdir(join(root, team)).catch(() => [])) {
        const dir = join(root, team, name)
        if (!name.endsWith(".git") || sizes.has(dir)) continue
        sizes.set(dir, await bytesOf(dir))
        usedAt.set(dir, await stat(dir).then((s) => s.mtimeMs, () => 0))
      }
    }
  }

  const total = () => [...sizes.values()].reduce((sum, size) => sum + size, 0)
  const idle = (dir: string) => (users.get(dir) ?? 0) === 0

  /** Removes idle mirrors (one over the whole bound first, then the least recently used) until the total fits. */
  const shrinkNow = async () => {
    const rank = (dir: string) => ((sizes.get(dir) ?? 0) > maxBytes ? -1 : usedAt.get(dir) ?? 0)
    for (const dir of [...sizes.keys()].sort((a, b) => rank(a) - rank(b))) {
      if (total() <= maxBytes) return
      // Checked again here: a use may have begun while an earlier removal ran.
      if (!idle(dir)) continue
      sizes.delete(dir)
      usedAt.delete(dir)
      const removal = rm(dir, { recursive: true, force: true }).catch(() => undefined)
      removing.set(dir, removal)
      await removal
      removing.delete(dir)
    }
  }
  const shrink = Effect.promise(() => (shrinking = shrinking.then(shrinkNow)))

  return {
    acquire: (dir) =>
      Effect.promise(async () => {
        await (scanning ??= scan())
        while (removing.has(dir)) await removing.get(dir)
        // No await from the check above to here: a shrink cannot start removing it in between.
        users.set(dir, (users.get(dir) ?? 0) + 1)
        usedAt.set(dir, Date.now())
      }),
    release: (dir) =>
      Effect.suspend(() => {
        const left = (users.get(dir) ?? 1) - 1
        if (left > 0) users.set(dir, left)
        else users.delete(dir)
        return shrink
      }),
    record: (dir, name) =>
      Effect.gen(function*() {
        const size = yield* Effect.promise(() => bytesOf(dir))
        sizes.set(dir, size)
        if (size > maxBytes) {
          return yield* new GitError({
            message: `${name} takes ${mb(size)}, more than the mirrors may hold together (${mb(maxBytes)}: AGENT_RUNS_MIRRORS_MAX_BYTES)`,
            status: undefined,
            result: undefined
          })
        }
        yield* shrink
      })
  }
}
