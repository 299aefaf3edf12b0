/**
 * Unprivileged users for sandboxes (Linux, the service running as root): each sandbox gets a uid
 * of its own from a configured range, with the same number as its gid and no supplementary groups
 * (Node's `spawn` drops them when it sets a uid). Nothing here needs an entry in `/etc/passwd`.
 */
import { randomInt } from "node:crypto"
import type { Dirent } from "node:fs"
import { lchown, readdir, readFile } from "node:fs/promises"
import { join } from "node:path"

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

/** The real uid of the live process `pid` (Linux: `/proc/<pid>/status`), undefined when gone, a zombie or unknown. */
const uidOfProcess = async (pid: number): Promise<number | undefined> => {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8")
    if (/^State:\s+Z/m.test(status)) return undefined
    const match = /^Uid:\s+(\d+)/m.exec(status)
    return match === null ? undefined : Number(match[1])
  } catch {
    return undefined
  }
}

/** How many `/proc/<pid>/status` files one pass reads at once. */
const SCAN_PARALLELISM = 32

/** One pass over `/proc`: the pids of the live processes (this one left out) by real uid. */
const scanProcesses = async (): Promise<ReadonlyMap<number, ReadonlyArray<number>>> => {
  const entries = await readdir("/proc").catch(() => [] as Array<string>)
  const pids = entries.map(Number).filter((pid) => Number.isInteger(pid) && pid > 1 && pid !== process.pid)
  const byUid = new Map<number, Array<number>>()
  let next = 0
  const worker = async () => {
    while (next < pids.length) {
      const pid = pids[next++]!
      const uid = await uidOfProcess(pid)
      if (uid === undefined) continue
      const list = byUid.get(uid)
      if (list === undefined) byUid.set(uid, [pid])
      else list.push(pid)
    }
  }
  await Promise.all(Array.from({ length: SCAN_PARALLELISM }, worker))
  return byUid
}

/** The pass under way, and the one that callers arriving during it wait for. */
let running: Promise<ReadonlyMap<number, ReadonlyArray<number>>> | undefined
let queued: Promise<ReadonlyMap<number, ReadonlyArray<number>>> | undefined

/**
 * The live processes by uid, read by a pass over `/proc` that started after this call: callers
 * that arrive while a pass runs share the next one. Every sandbox being set up or released asks,
 * and a pass reads one file per process of the host, so with hundreds of sandboxes a pass each
 * would cost the square of their number (1,000 concurrent sandboxes took minutes to start).
 */
const liveProcesses = (): Promise<ReadonlyMap<number, ReadonlyArray<number>>> => {
  if (running === undefined) {
    const pass = scanProcesses().finally(() => {
      if (running === pass) running = undefined
    })
    running = pass
    return pass
  }
  if (queued === undefined) {
    const pass: Promise<ReadonlyMap<number, ReadonlyArray<number>>> = running.catch(() => undefined).then(() => {
      queued = undefined
      running = pass
      return scanProcesses().finally(() => {
        if (running === pass) running = undefined
      })
    })
    queued = pass
  }
  return queued
}

/** The pids of the processes running as `uid` (Linux; none elsewhere). */
export const processesOf = async (uid: number): Promise<Array<number>> => [...((await liveProcesses()).get(uid) ?? [])]

/**
 * SIGKILLs every process running as `uid` and waits (up to about 2 s) until none is left: a
 * process may fork while the list is read, and a killed one is listed until it has died. A
 * sandbox's uid is its own, so this stops everything the sandbox started, in any process group or
 * directory.
 */
export const killUser = async (uid: number): Promise<void> => {
  for (let round = 0; round < 100; round++) {
    const pids = await processesOf(uid)
    if (pids.length === 0) return
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        // gone already
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
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
