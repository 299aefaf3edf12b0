/**
 * Passes over Linux's `/proc` (elsewhere there is none: no process is found), shared by the two
 * ways a release finds what a sandbox left running: by user (`users.ts`) and by working directory.
 *
 * A pass reads one link or small file per process of the host. Read one after the other they took
 * seconds on a loaded machine (2 CPUs, hundreds of processes: every read waits its turn in Node's
 * thread pool and then on the event loop), so a pass reads `PASS_PARALLELISM` at once; and the
 * callers that ask while a pass runs share the next one, so that hundreds of sandboxes released at
 * once cost a pass each rather than the square of their number. Still, a pass takes a few hundred
 * turns of the event loop (three reads per process, 32 at once), and a server busy with hundreds of
 * runs takes a second a turn: what does not need a pass that started after it asked (choosing a
 * sandbox's uid) takes the last one that finished instead (`SharedPass.recent`).
 */
import { Option } from "effect"
import { readdir, readlink } from "node:fs/promises"

/** How many `/proc` entries one pass reads at once. */
const PASS_PARALLELISM = 32

/** The pids listed in `/proc`, but 1 and this process. */
export const otherPids = async (): Promise<Array<number>> => {
  const entries = await readdir("/proc").catch(() => [] as Array<string>)
  return entries.map(Number).filter((pid) => Number.isInteger(pid) && pid > 1 && pid !== process.pid)
}

/** `f` of each of `pids`, in their order, at most `PASS_PARALLELISM` at once. */
export const mapPids = async <A>(pids: ReadonlyArray<number>, f: (pid: number) => Promise<A>): Promise<Array<A>> => {
  const results = new Array<A>(pids.length)
  let next = 0
  const worker = async () => {
    while (next < pids.length) {
      const index = next++
      results[index] = await f(pids[index]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(PASS_PARALLELISM, pids.length) }, worker))
  return results
}

/** Passes of one scan over `/proc`, shared by their callers (see `sharedPass`). */
export interface SharedPass<A> {
  /**
   * The result of a pass that started after this call (so it sees every process started before);
   * the callers that ask while a pass runs share the next one.
   */
  readonly fresh: () => Promise<A>
  /**
   * The result of the last pass that finished, at once: no waiting for a pass, which takes
   * hundreds of turns of a busy event loop (minutes, with 1,000 agents running: issue 34). A pass
   * is started (or joined) for the callers after this one; the first callers wait for it.
   */
  readonly recent: () => Promise<A>
}

/** `scan` shared by its callers: `fresh` for what must see every process started before it asked, `recent` for what may use the last pass. */
export const sharedPass = <A>(scan: () => Promise<A>): SharedPass<A> => {
  /** The pass under way, and the one that callers arriving during it wait for. */
  let running: Promise<A> | undefined
  let queued: Promise<A> | undefined
  /** What the last pass that finished found. */
  let last: { readonly found: A } | undefined
  const start = (): Promise<A> => {
    const pass: Promise<A> = scan().then((found) => {
      last = { found }
      return found
    }).finally(() => {
      if (running === pass) running = undefined
    })
    running = pass
    return pass
  }
  const fresh = (): Promise<A> => {
    if (running === undefined) return start()
    if (queued === undefined) {
      queued = running.catch(() => undefined).then(() => {
        queued = undefined
        return start()
      })
    }
    return queued
  }
  const recent = (): Promise<A> => {
    const next = fresh()
    if (last === undefined) return next
    // No one waits for it here: its failure is the next callers'.
    next.catch(() => undefined)
    return Promise.resolve(last.found)
  }
  return { fresh, recent }
}

/**
 * What `promise` gives if it settles within `ms` of real time (not the Clock: processes do not
 * follow the TestClock), else none; nothing waits for it after that.
 */
export const within = <A>(promise: Promise<A>, ms: number): Promise<Option.Option<A>> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(Option.none()), Math.max(0, ms))
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(Option.some(value))
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      }
    )
  })

/** Sends SIGKILL to the process `pid`; false when it is gone already. */
export const killProcess = (pid: number): boolean => {
  try {
    process.kill(pid, "SIGKILL")
    return true
  } catch {
    return false
  }
}

/** The working directory of the process `pid` (its path if it was removed), undefined when it cannot be told. */
const cwdOf = (pid: number): Promise<string | undefined> =>
  readlink(`/proc/${pid}/cwd`).then((cwd) => cwd.replace(/ \(deleted\)$/, ""), () => undefined)

/** One pass: the working directory of every process that has one (zombies have none). */
const workingDirectories = sharedPass(async (): Promise<ReadonlyMap<number, string>> => {
  const pids = await otherPids()
  const cwds = await mapPids(pids, cwdOf)
  const found = new Map<number, string>()
  pids.forEach((pid, i) => {
    const cwd = cwds[i]
    if (cwd !== undefined) found.set(pid, cwd)
  })
  return found
})

/** The pids of the processes whose working directory is `dir` or below it (Linux; none elsewhere). */
export const processesIn = async (dir: string): Promise<Array<number>> => {
  const found: Array<number> = []
  for (const [pid, cwd] of await workingDirectories.fresh()) {
    if (cwd === dir || cwd.startsWith(`${dir}/`)) found.push(pid)
  }
  return found
}
