/**
 * Unprivileged users for sandboxes (Linux, the service running as root): each sandbox gets a uid
 * of its own from a configured range, with the same number as its gid and no supplementary groups
 * (Node's `spawn` drops them when it sets a uid). Nothing here needs an entry in `/etc/passwd`.
 */
import { Option } from "effect"
import { randomInt } from "node:crypto"
import type { Dirent } from "node:fs"
import { lchown, open, readdir } from "node:fs/promises"
import { join } from "node:path"
import { killProcess, mapPids, otherPids, type SharedPass, sharedPass, within } from "./proc.js"

/** A range of uids: `first` to `first + count - 1`. */
export interface UidRange {
  readonly first: number
  readonly count: number
}

/** The user a process runs as. */
export interface User {
  readonly uid: number
  readonly gid: number
}

/** The user of a sandbox: its uid as both uid and gid. */
export const userOf = (uid: number): User => ({ uid, gid: uid })

/** How much of `/proc/<pid>/status` is read: its State and Uid lines come in the first few hundred bytes. */
const STATUS_BYTES = 4096

/** The start of `/proc/<pid>/status` (one open, read and close; `readFile` takes twice the trips through Node's thread pool). */
const statusOf = async (pid: number): Promise<string> => {
  const handle = await open(`/proc/${pid}/status`, "r")
  try {
    const buffer = Buffer.alloc(STATUS_BYTES)
    const { bytesRead } = await handle.read(buffer, 0, STATUS_BYTES, 0)
    return buffer.toString("utf8", 0, bytesRead)
  } finally {
    await handle.close()
  }
}

/** The real uid of the live process `pid` (Linux: `/proc/<pid>/status`), undefined when gone, a zombie or unknown. */
const uidOfProcess = async (pid: number): Promise<number | undefined> => {
  try {
    const status = await statusOf(pid)
    if (/^State:\s+Z/m.test(status)) return undefined
    const match = /^Uid:\s+(\d+)/m.exec(status)
    return match === null ? undefined : Number(match[1])
  } catch {
    return undefined
  }
}

/** Processes by real uid. */
export type ProcessesByUid = ReadonlyMap<number, ReadonlyArray<number>>

/**
 * The live processes by real uid (this one left out), from passes over `/proc` shared by every
 * sandbox being set up or released (1,000 concurrent sandboxes with a pass each took minutes to start).
 */
const liveProcesses = sharedPass(async (): Promise<ProcessesByUid> => {
  const pids = await otherPids()
  const uids = await mapPids(pids, uidOfProcess)
  const byUid = new Map<number, Array<number>>()
  pids.forEach((pid, i) => {
    const uid = uids[i]
    if (uid === undefined) return
    const list = byUid.get(uid)
    if (list === undefined) byUid.set(uid, [pid])
    else list.push(pid)
  })
  return byUid
})

/** The pids of the processes running as `uid` (Linux; none elsewhere). */
export const processesOf = async (uid: number): Promise<Array<number>> => [...((await liveProcesses.fresh()).get(uid) ?? [])]

/** How `killUser` ended. */
export type Killed =
  | { readonly _tag: "AllGone" }
  /** Processes listed at the last look, SIGKILLed but not gone (stuck in the kernel, or forked anew). */
  | { readonly _tag: "Survivors"; readonly pids: ReadonlyArray<number> }
  /** No pass over `/proc` finished in time: nothing was killed, nothing is known. */
  | { readonly _tag: "Unknown" }

/** The pause between two rounds of `killUser`: time for the killed processes to die. */
const KILL_ROUND_PAUSE_MS = 20

/**
 * SIGKILLs every process running as `uid`, round after round, until none is left or `timeoutMs`
 * have passed (real time; a pass over `/proc` still under way then is not waited for): a process
 * may fork while the list is read, and a killed one is listed until it has died. A sandbox's uid is
 * its own, so this stops everything the sandbox started, in any process group or directory.
 */
export const killUser = async (uid: number, timeoutMs: number): Promise<Killed> => {
  const deadline = performance.now() + timeoutMs
  let last: ReadonlyArray<number> | undefined
  for (;;) {
    const listed = await within(processesOf(uid), deadline - performance.now())
    if (Option.isNone(listed)) return last === undefined ? { _tag: "Unknown" } : { _tag: "Survivors", pids: last }
    last = listed.value
    if (last.length === 0) return { _tag: "AllGone" }
    last.forEach(killProcess)
    const left = deadline - performance.now()
    if (left <= 0) return { _tag: "Survivors", pids: last }
    await new Promise((resolve) => setTimeout(resolve, Math.min(KILL_ROUND_PAUSE_MS, left)))
  }
}

/**
 * Chooses sandboxes' uids, with what `passes` found running. `allocate(range, inUse, timeoutMs)`
 * draws a uid of `range` that is not in `inUse` and that no process ran as at the last pass that
 * finished, and adds it to `inUse`. Drawn at random, so that two services on one host (each knowing
 * only its own sandboxes) practically never pick the same.
 *
 * The last pass, not one started after the call: a pass waits for hundreds of turns of the event
 * loop, and with 1,000 runs going a turn took a second or two, so every sandbox waited minutes for
 * its uid while the runs stayed CLAIMED (issue 34). It is enough: this service's own uids are in
 * `inUse` from their choice until none of their processes is left, and processes of a uid it does
 * not know cannot appear between two passes but from one that was there before (an earlier life's,
 * which the first pass sees) or from another service drawing from the same range (kept apart, as
 * before, by the random draw). Only the first choices of the service's life wait for a pass, for
 * `timeoutMs` at most (real time): past it the choice fails, naming why, rather than leave its run
 * waiting for good.
 */
export const uidAllocator = (passes: SharedPass<ProcessesByUid>) =>
  async (range: UidRange, inUse: Set<number>, timeoutMs: number): Promise<number> => {
    const found = await within(passes.recent(), timeoutMs)
    if (Option.isNone(found)) throw new Error(`no look through /proc for the uids in use finished within ${timeoutMs} ms`)
    for (let attempt = 0; attempt < 100; attempt++) {
      const uid = range.first + randomInt(range.count)
      if (!inUse.has(uid) && !found.value.has(uid)) {
        inUse.add(uid)
        return uid
      }
    }
    throw new Error(`no free uid in ${range.first}-${range.first + range.count - 1}`)
  }

/** `uidAllocator` over the host's `/proc`. */
export const allocateUid = uidAllocator(liveProcesses)

/** Gives `path` and everything below it to `user` (symbolic links themselves, never their targets). */
export const chownTree = async (path: string, user: User): Promise<void> => {
  await lchown(path, user.uid, user.gid)
  let entries: Array<Dirent>
  try {
    entries = await readdir(path, { withFileTypes: true })
  } catch {
    return
  }
  for (const entry of entries) {
    const child = join(path, entry.name)
    if (entry.isDirectory()) await chownTree(child, user)
    else await lchown(child, user.uid, user.gid)
  }
}
