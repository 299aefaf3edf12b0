/**
 * The files a lasting agent talks through (DockerExecutor's `startLasting`), so that it outlives
 * the process of the service that started it: its stdin is a FIFO `<tag>.in` and its stdout a file
 * `<tag>.out`, in a directory beside the work directory (`<workdir>.io` on the host, mounted at
 * `/run/agent-runs` in the container). The directory is the executor's: the sandbox's user may
 * write to its two files (they are its stdin and stdout) but not make, remove or replace any:
 * lasting agents are only for an executor running as root (as the sandbox's own uid the directory
 * would be the agent's too). The files are opened without following links and checked to be what
 * they should be, all the same.
 *
 * - The host holds the FIFO open for reading and writing (the agent does too), so neither side
 *   ever sees it closed: the agent's stdin stays open while no process of the service is there.
 * - stdout is read from any byte offset, as it grows: woken by the file's changes (inotify), with
 *   a slow poll behind, until the agent has exited and the file's end is reached.
 * - `<tag>.detached` says that a stopping process left the agent for the next (its exec's id).
 */
import { execFile } from "node:child_process"
import { close, constants, fstat, open, read, watch } from "node:fs"
import * as Fs from "node:fs/promises"
import { Socket } from "node:net"
import * as Path from "node:path"
import { promisify } from "node:util"
import { type Cloned, readClones as readRecord, writeClones as writeRecord } from "@agent-runs/git"
import { Duration, Effect, Option, Queue, Stream } from "effect"
import { readSmallFile } from "./HostFiles.js"

/** Where the agents' files are inside the container. */
export const containerIoDir = "/run/agent-runs"

/** The host directory of a sandbox's agents' files. */
export const ioDirOf = (workdir: string): string => `${workdir}.io`

/** The names an agent's files take: its tag (DockerExecutor's `agent-…`) and a suffix. */
const TAG = /^agent-[0-9a-z]+-[0-9a-z]+$/
export const isTag = (tag: string): boolean => TAG.test(tag)

const READ_BYTES = 64 * 1024
/** How often a file is read again when no change was seen (inotify may be out of watches). */
const POLL = Duration.millis(250)

const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** Makes an agent's FIFO and output file, given to the sandbox's user (private to it). */
export const create = (ioDir: string, tag: string, uid: number, gid: number) =>
  Effect.gen(function*() {
    const input = Path.join(ioDir, `${tag}.in`)
    const output = Path.join(ioDir, `${tag}.out`)
    yield* Effect.async<void, string>((resume) => {
      execFile("mkfifo", ["-m", "600", "--", input], (error, _stdout, stderr) =>
        resume(error === null ? Effect.void : Effect.fail(stderr.trim() || error.message)))
    })
    yield* Effect.tryPromise({
      try: async () => {
        const handle = await Fs.open(output, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
        await handle.close()
        await Fs.lchown(input, uid, gid)
        await Fs.lchown(output, uid, gid)
      },
      catch: messageOf
    })
  })

/** Whether an open file is of the kind expected; closed and refused when not. */
const checked = async (path: string, fd: number, kind: "fifo" | "file") => {
  const stat = await promisify(fstat)(fd).catch(async (cause) => {
    await promisify(close)(fd)
    throw cause
  })
  if (kind === "fifo" ? stat.isFIFO() : stat.isFile()) return fd
  await promisify(close)(fd)
  throw new Error(`${path} is not the agent's ${kind === "fifo" ? "FIFO" : "file"}`)
}

/**
 * Opens one of an agent's files: no link followed, never blocking, and of the kind expected. A
 * plain descriptor, owned by whoever takes it (a `FileHandle` would close it when collected).
 */
const openChecked = (path: string, flags: number, kind: "fifo" | "file") =>
  Effect.tryPromise({
    try: async () => checked(path, await promisify(open)(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK), kind),
    catch: messageOf
  })

/** Waits until what was written to the agent's stdin is all in the FIFO, for `timeoutMs` at most: whether it is. */
export const flushed = (stdin: Socket, timeoutMs: number) =>
  Effect.async<boolean>((resume) => {
    if (stdin.writableLength === 0) return resume(Effect.succeed(true))
    const timer = setTimeout(() => resume(Effect.succeed(stdin.writableLength === 0)), timeoutMs)
    stdin.once("drain", () => {
      clearTimeout(timer)
      resume(Effect.succeed(stdin.writableLength === 0))
    })
  })

/** The agent's stdin, open for writing while the scope lives (a socket over the FIFO: writes never block the event loop). */
export const openStdin = (ioDir: string, tag: string) =>
  Effect.acquireRelease(
    Effect.map(openChecked(Path.join(ioDir, `${tag}.in`), constants.O_RDWR, "fifo"), (fd) => {
      const socket = new Socket({ fd, readable: false, writable: true })
      socket.on("error", () => undefined)
      return socket
    }),
    (socket) => Effect.sync(() => socket.destroy())
  )

/** Completes once the file changed since the last time it did (or never, without inotify). */
const changesOf = (path: string) =>
  Effect.gen(function*() {
    const changes = yield* Queue.sliding<void>(1)
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        try {
          const watcher = watch(path, { persistent: false }, () => Queue.unsafeOffer(changes, undefined))
          watcher.on("error", () => undefined)
          return watcher
        } catch {
          return undefined
        }
      }),
      (watcher) => Effect.sync(() => watcher?.close())
    )
    return Queue.take(changes)
  })

/** What the file holds at `position` (up to `into`'s size), copied out: a tiny read keeps no large buffer alive. */
const readAt = (fd: number, into: Buffer, position: number) =>
  Effect.tryPromise({
    try: async () => {
      const { bytesRead } = await promisify(read)(fd, into, 0, into.length, position)
      return Uint8Array.prototype.slice.call(into, 0, bytesRead)
    },
    catch: messageOf
  })

/**
 * What the agent writes to stdout from byte `from` on, as it comes; ends once `exited` completed
 * and the file's end is reached.
 */
export const tail = (ioDir: string, tag: string, from: number, exited: Effect.Effect<void>): Stream.Stream<Uint8Array, string> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const path = Path.join(ioDir, `${tag}.out`)
    const fd = yield* Effect.acquireRelease(
      openChecked(path, constants.O_RDONLY, "file"),
      (fd) => Effect.promise(() => promisify(close)(fd).catch(() => undefined))
    )
    const changed = yield* changesOf(path)
    const into = Buffer.allocUnsafe(READ_BYTES)
    let at = from
    let ended = false
    const next: Effect.Effect<Option.Option<Uint8Array>, string> = Effect.gen(function*() {
      for (;;) {
        // Seen exited before this read: what this read finds is the last of it.
        const last = ended
        const chunk = yield* readAt(fd, into, at)
        if (chunk.length > 0) {
          at += chunk.length
          return Option.some(chunk)
        }
        if (last) return Option.none()
        ended = yield* Effect.raceFirst(
          Effect.as(exited, true),
          Effect.as(Effect.raceFirst(changed, Effect.sleep(POLL)), false)
        )
      }
    })
    return Stream.repeatEffectOption(Effect.flatMap(Effect.mapError(next, Option.some), (chunk) =>
      Option.isSome(chunk) ? Effect.succeed(chunk.value) : Effect.fail(Option.none())))
  }))

/** Keeps where each clone of the sandbox started (its repository's name → `Cloned`). */
export const writeClones = (ioDir: string, started: ReadonlyMap<string, Cloned>) =>
  Effect.tryPromise({ try: () => Fs.writeFile(Path.join(ioDir, "clones.json"), writeRecord(started), { mode: 0o600 }), catch: messageOf })

/** Where each clone of the sandbox started, as `writeClones` kept it (none that is not so). */
export const readClones = (ioDir: string) =>
  Effect.map(readSmallFile(Path.join(ioDir, "clones.json"), 1024 * 1024), readRecord)

/**
 * Marks the agent as left for the next process: the file holds its exec's id. Written whole or not
 * at all (a new file renamed into place), so that a stop cut short leaves no half of it.
 */
export const markDetached = (ioDir: string, tag: string, execId: string) =>
  Effect.tryPromise({
    try: async () => {
      const temporary = Path.join(ioDir, `${tag}.detaching`)
      await Fs.rm(temporary, { force: true })
      const handle = await Fs.open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
      try {
        await handle.writeFile(execId)
        await handle.sync()
      } finally {
        await handle.close()
      }
      await Fs.rename(temporary, Path.join(ioDir, `${tag}.detached`))
    },
    catch: messageOf
  })

/** The exec id an agent's mark holds, when it is one (64 hex digits). */
export const detachedExec = (ioDir: string, tag: string) =>
  Effect.map(readSmallFile(Path.join(ioDir, `${tag}.detached`), 128), (text) => {
    const id = text?.trim()
    return id !== undefined && /^[0-9a-f]{64}$/.test(id) ? id : undefined
  })

/** Takes the mark back (the agent is adopted): whether it was there. */
export const unmarkDetached = (ioDir: string, tag: string) =>
  Effect.promise(() => Fs.rm(Path.join(ioDir, `${tag}.detached`)).then(() => true, () => false))

/** The tags of the agents left in a sandbox for the next process (none without the directory). */
export const detachedTags = (ioDir: string) =>
  Effect.promise(async () => {
    const names = await Fs.readdir(ioDir).catch(() => [] as Array<string>)
    return names.filter((name) => name.endsWith(".detached")).map((name) => name.slice(0, -".detached".length)).filter(isTag)
  })
