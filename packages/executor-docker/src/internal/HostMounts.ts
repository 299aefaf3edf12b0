/**
 * The work directory's mount on the host: `nosuid,nodev`.
 *
 * Docker's API has no way to ask for a `nosuid` or `nodev` bind mount (its bind options are the
 * propagation and recursion only), but the kernel gives a bind mount the per-mount flags of the
 * mount it is taken from: a host directory that is itself a `nosuid,nodev` mount shows up in the
 * container as `nosuid,nodev` too. So the executor bind-mounts each work directory onto itself and
 * remounts it `nosuid,nodev` on the host (`mount --bind`, `mount -o remount,bind,nosuid,nodev`)
 * before the container is created, unless the directory already lies on such a mount (a sandbox
 * root an operator mounted `nosuid,nodev`), and unmounts it when the sandbox is released.
 *
 * What the kernel reports is read from `/proc/self/mountinfo` (the host's view) and, inside the
 * container, from its own `/proc/self/mountinfo`; `parseMountInfo` reads that format.
 */
import { execFile } from "node:child_process"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { Effect } from "effect"

/** One line of `/proc/<pid>/mountinfo`: where a mount is and its per-mount options. */
export interface MountEntry {
  readonly mountPoint: string
  readonly options: ReadonlyArray<string>
}

/** `\040` and the other octal escapes the kernel writes for spaces, tabs, newlines and backslashes. */
const unescape = (field: string): string => field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)))

/** The entries of a mountinfo text, in its order (a later entry on the same mount point is on top). */
export const parseMountInfo = (text: string): Array<MountEntry> =>
  text.split("\n").flatMap((line) => {
    const fields = line.split(" ")
    const mountPoint = fields[4]
    const options = fields[5]
    return mountPoint === undefined || options === undefined
      ? []
      : [{ mountPoint: unescape(mountPoint), options: options.split(",") }]
  })

const isWithin = (path: string, mountPoint: string): boolean =>
  mountPoint === "/" || path === mountPoint || path.startsWith(`${mountPoint}/`)

/** The mount `path` (absolute, symlinks resolved) lies on: the top one of the longest mount point. */
export const mountOf = (entries: ReadonlyArray<MountEntry>, path: string): MountEntry | undefined => {
  let best: MountEntry | undefined
  for (const entry of entries) {
    if (isWithin(path, entry.mountPoint) && (best === undefined || entry.mountPoint.length >= best.mountPoint.length)) {
      best = entry
    }
  }
  return best
}

/** Whether a mount's options hold both `nosuid` and `nodev`. */
export const isNosuidNodev = (entry: MountEntry | undefined): boolean =>
  entry !== undefined && entry.options.includes("nosuid") && entry.options.includes("nodev")

/** The host's mounts, or none where the host has no `/proc/self/mountinfo` (not Linux). */
const hostMounts = Effect.promise(() => Fs.readFile("/proc/self/mountinfo", "utf8").then(parseMountInfo, () => undefined))

const run = (command: string, args: ReadonlyArray<string>) =>
  Effect.async<{ readonly ok: boolean; readonly output: string }>((resume) => {
    execFile(command, [...args], (error, stdout, stderr) =>
      resume(Effect.succeed({ ok: error === null, output: `${stdout}${stderr}`.trim() || (error?.message ?? "") })))
  })

/**
 * Makes `dir` (an existing directory) lie on a `nosuid,nodev` mount in the host's view: nothing to
 * do when it already does, else a bind mount of itself remounted `nosuid,nodev`. Fails with what
 * went wrong when that is not possible (not root, no `mount`). Returns whether it mounted.
 * Where the host has no mountinfo (not Linux) nothing is done: the check inside the container
 * decides then.
 */
export const ensureNosuidNodev = (dir: string) =>
  Effect.gen(function*() {
    const real = yield* Effect.promise(() => Fs.realpath(dir))
    const before = yield* hostMounts
    if (before === undefined || isNosuidNodev(mountOf(before, real))) return { mounted: false as const }
    const bind = yield* run("mount", ["--bind", "--", real, real])
    if (!bind.ok) return yield* Effect.fail(`mount --bind ${real} ${real} failed: ${bind.output}`)
    const remount = yield* run("mount", ["-o", "remount,bind,nosuid,nodev", "--", real])
    const after = yield* hostMounts
    if (!remount.ok || !isNosuidNodev(mountOf(after ?? [], real))) {
      yield* unmountAll(real)
      return yield* Effect.fail(`mount -o remount,bind,nosuid,nodev ${real} failed: ${remount.output || "the flags did not hold"}`)
    }
    return { mounted: true as const }
  })

/** Unmounts every mount whose mount point is exactly `dir` (none left from an earlier life either). */
export const unmountAll = (dir: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    const real = Path.resolve(yield* Effect.promise(() => Fs.realpath(dir).catch(() => dir)))
    // A few rounds at most: stacked mounts of the same directory come off one at a time.
    for (let round = 0; round < 8; round++) {
      const mounts = yield* hostMounts
      if (mounts === undefined || !mounts.some((entry) => entry.mountPoint === real)) return
      const plain = yield* run("umount", ["--", real])
      // Busy (a process still in it): detach it now, the kernel frees it once it is no longer used.
      if (!plain.ok) yield* run("umount", ["-l", "--", real])
    }
  })
