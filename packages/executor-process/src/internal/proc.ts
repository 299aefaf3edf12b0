/**
 * Passes over Linux's `/proc` (elsewhere there is none: no process is found), shared by the two
 * ways a release finds what a sandbox left running: by user (`users.ts`) and by working directory.
 *
 * A pass reads one link or small file per process of the host. Read one after the other they took
 * seconds on a loaded machine (2 CPUs, hundreds of processes: every read waits its turn in Node's
 * thread pool and then on the event loop), so a pass reads `PASS_PARALLELISM` at once; and the
 * callers that ask while a pass runs share the next one, so that hundreds of sandboxes released at
 * once cost a pass each rather than the square of their number.
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

/**
 * `scan` shared by its callers: each gets the result of a pass that started after it asked (so it
 * sees every process started before), and the callers that ask while a pass runs share the next.
 */
export const sharedPass = <A>(scan: () => Promise<A>): () => Promise<A> => {
  /** The pass under way, and the one that callers arriving during it wait for. */
  let running: Promise<A> | undefined
  let queued: Promise<A> | undefined
  const start = (): Promise<A> => {
    const pass: Promise<A> = scan().finally(() => {
      if (running === pass) running = undefined
    })
    running = pass
    return pass
  }
  return () => {
    if (running === undefined) return start()
    if (queued === undefined) {
      queued = running.catch(() => undefined).then(() => {
        queued = undefined
        return start()
      })
    }
    return queued
  }
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
  for (const [pid, cwd] of await workingDirectories()) {
    if (cwd === dir || cwd.startsWith(`${dir}/`)) found.push(pid)
  }
  return found
}
