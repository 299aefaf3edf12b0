/**
 * What the executor does on the host in a work directory the container can write to: hand it to
 * the container's user, and read the executor's own small files from it without trusting them.
 */
import { execFile } from "node:child_process"
import { constants } from "node:fs"
import * as Fs from "node:fs/promises"
import { Effect } from "effect"

/**
 * Gives `dir` and everything in it to `uid:gid` (`chown -R -h`: symbolic links themselves, never
 * what they point to). Fails with the tool's message (not root: "Operation not permitted").
 */
export const chownTree = (dir: string, uid: number, gid: number) =>
  Effect.async<void, string>((resume) => {
    execFile("chown", ["-R", "-h", `${uid}:${gid}`, "--", dir], (error, _stdout, stderr) =>
      resume(error === null ? Effect.void : Effect.fail(stderr.trim() || error.message)))
  })

/**
 * The content of a small regular file, or undefined. The container owns the directory, so the
 * name may be anything by now: a symbolic link to a host file (not followed), a FIFO that would
 * block a reader (opened non-blocking, then refused), a device or a huge file (at most `maxBytes`
 * are read, a longer file is refused).
 */
export const readSmallFile = (path: string, maxBytes: number): Effect.Effect<string | undefined> =>
  Effect.promise(async () => {
    const handle = await Fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => undefined)
    if (handle === undefined) return undefined
    try {
      const stat = await handle.stat()
      if (!stat.isFile() || stat.size > maxBytes) return undefined
      const buffer = Buffer.alloc(maxBytes + 1)
      const { bytesRead } = await handle.read(buffer, 0, maxBytes + 1, 0)
      return bytesRead > maxBytes ? undefined : buffer.subarray(0, bytesRead).toString("utf8")
    } catch {
      return undefined
    } finally {
      await handle.close().catch(() => undefined)
    }
  })
