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
import { killProcess, mapPids, otherPids, sharedPass, within } from "./proc.js"

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

/**
 * The live processes by real uid (this one left out), read by a pass over `/proc` that started
 * after this call: every sandbox being set up or released asks, and they share passes (1,000
 * concurrent sandboxes with a pass each took minutes to start).
 */
const liveProcesses = sharedPass(async (): Promise<ReadonlyMap<number, ReadonlyArray<number>>> => {
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
export const processesOf = async (uid: number): Promise<Array<number>> => [...((await liveProcesses()).get(uid) ?? [])]

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
 * A uid of `range` that is not in `taken` and that no process runs as: drawn at random, so that
 * two services on one host (each knowing only its own sandboxes) practically never pick the same.
 */
export const allocateUid = async (range: UidRange, taken: ReadonlySet<number>): Promise<number> => {
  const live = await liveProcesses()
  for (let attempt = 0; attempt < 100; attempt++) {
    const uid = range.first + randomInt(range.count)
    if (!taken.has(uid) && !live.has(uid)) return uid
  }
  throw new Error(`no free uid in ${range.first}-${range.first + range.count - 1}`)
}

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
