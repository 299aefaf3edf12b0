/**
 * The Executor port on local child processes: the embedded default. Each execution gets a work
 * directory below `root`; the agent runs as a child process of the service in it.
 *
 * On disk:
 * - `<root>/<run_id>/<execution_id>/` is the work directory (the sandbox id): each repository
 *   `owner/repo` is cloned into `<repo>/` from `<reposDir>/<team_uid>/<owner>/<repo>` (the run's
 *   team's: a bare or non-bare git repository), attachments are written into `attachments/<name>`.
 * - `<root>/<run_id>/<execution_id>.sandbox.json` beside it is the marker: run and execution ids,
 *   creation time, attachments and the process groups that may still run (see `internal/marker`).
 *   It is written before the work directory is made and removed after it, so `leftovers` finds
 *   every sandbox, complete or not.
 *
 * Environment: every process gets `env` of the configuration (by default only `PATH` and `HOME`
 * of the service, never its whole environment with its secrets), then the spec's `env`, then the
 * variables given to `start`. The spec's `env` is not stored on disk: a sandbox found by
 * `leftovers` starts processes with the configured environment and the given variables only.
 *
 * Processes run in process groups of their own; stopping one signals its whole group (SIGTERM,
 * then SIGKILL after the grace period). Setup commands (and clones, and the choice of the
 * sandbox's user) share one time limit, `setupTimeoutMs`; past it the running command's group is
 * killed and the setup fails. No wait for killed processes takes longer than `killTimeoutMs` (real
 * time): one that outlives it (stuck in the kernel, or forking anew faster than it is killed) is
 * named in a warning and left behind, and a release goes on removing the sandbox.
 *
 * Isolation (`isolation`, the service running as root): each sandbox gets a uid of its own from
 * the configured range (its gid the same number, no supplementary groups). Clones and attachments
 * are made by the service, then the work directory is given to that uid with mode 0700; setup
 * commands and agents run as it, with `HOME` set to the work directory. The root and each run's
 * directory are 0711 (searchable, not listable), markers 0600, so a sandbox reaches only its own
 * work directory. Releasing a sandbox kills every process of its uid, wherever it runs; one
 * without a uid (no isolation) has every process whose working directory is in it killed (Linux).
 */
import { Executor } from "@agent-runs/core"
import { Directories } from "@agent-runs/node-fs"
import type { Ids } from "@agent-runs/core"
import { Cause, DateTime, Deferred, Effect, Exit, Layer, Option, Runtime } from "effect"
import type { Scope } from "effect"
import type { FileHandle } from "node:fs/promises"
import { chmod, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, writeFile } from "node:fs/promises"
import { randomBytes } from "node:crypto"
import { dirname, join, resolve } from "node:path"
import { pullStream, runToCompletion, signalGroup, spawnProcess } from "./internal/child.js"
import type { Completion, Spawned } from "./internal/child.js"
import { formatMarker, MARKER_SUFFIX, parseMarker } from "./internal/marker.js"
import type { Marker } from "./internal/marker.js"
import { type Cloned, cloneRepository, MirrorCache, publishClone } from "@agent-runs/git"
import { attachmentNameProblem, isIdSegment, repositoryDir } from "./internal/names.js"
import { killProcess, processesIn, within } from "./internal/proc.js"
import { allocateUid, chownTree, killUser, userOf } from "./internal/users.js"
import type { UidRange, User } from "./internal/users.js"

export type { UidRange } from "./internal/users.js"

/** Sandboxes isolated from each other and from the service by running as users of their own. */
export interface Isolation {
  /** The uids sandboxes get, one each (also their gids); none of them may belong to anyone else. */
  readonly uids: UidRange
}

export interface Config {
  /** The directory under which sandboxes live (created when missing). */
  readonly root: string
  /** Where repositories are found, as `<reposDir>/<team_uid>/<owner>/<repo>`. */
  readonly reposDir: string
  /**
   * Where the teams' mirrors of their Git host's repositories are kept (a team connected to
   * GitHub); default: `mirrors` beside `root`. Private to the service.
   */
  readonly mirrorsDir?: string | undefined
  /** The most bytes the mirrors may take (MirrorCache; 20 GiB by default). */
  readonly mirrorsMaxBytes?: number | undefined
  /** The base environment of every process; default: `PATH` and `HOME` of the service. */
  readonly env?: Readonly<Record<string, string>>
  /** The time the choice of its user, clones and setup commands of one sandbox may take together; default 10 minutes. */
  readonly setupTimeoutMs?: number
  /** The grace between SIGTERM and SIGKILL when a scope closes or a sandbox is released; default 2 s. */
  readonly terminateGraceMs?: number
  /**
   * How long each wait for killed processes to be gone may take (real time): for an agent's exit
   * after the SIGKILL of its group, and on release for every process of the sandbox's user (or,
   * without isolation, for the look through `/proc` for processes in its directory); default 10 s.
   * A process that outlives it is named in a warning and left behind; a release still removes the
   * sandbox (a sandbox user whose processes survive keeps its uid, which no sandbox gets again).
   */
  readonly killTimeoutMs?: number
  /**
   * Runs each sandbox's setup commands and agent as a user of its own (the service must run as
   * root); absent, they run as the service's user and can read whatever it can.
   */
  readonly isolation?: Isolation | undefined
}

export const DEFAULT_SETUP_TIMEOUT_MS = 10 * 60_000
export const DEFAULT_TERMINATE_GRACE_MS = 2_000
export const DEFAULT_KILL_TIMEOUT_MS = 10_000

/** How much of a stderr line is logged. */
const STDERR_LINE_BYTES = 4096

/** `PATH` and `HOME` of this process, when set. */
export const defaultEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const name of ["PATH", "HOME"]) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  return env
}

const executorError = (message: string, cause?: unknown) =>
  new Executor.ExecutorError(cause === undefined ? { message } : { message, cause })

const isMissing = (error: unknown) => (error as { code?: string } | null)?.code === "ENOENT"

const io = <A>(message: string, f: () => Promise<A>) =>
  Effect.tryPromise({ try: f, catch: (cause) => executorError(`${message}: ${(cause as Error)?.message ?? cause}`, cause) })

/** Where a sandbox lives. */
interface Place {
  readonly run_id: Ids.RunId
  readonly execution_id: Ids.ExecutionId
  readonly runDir: string
  readonly workdir: string
  readonly marker: string
}

/** A command shown in a message: at most 200 characters. */
const shown = (command: string) => (command.length > 200 ? `${command.slice(0, 200)}…` : command)

const withOutput = (message: string, output: string) => (output === "" ? message : `${message}: ${output}`)

/**
 * Whether the process exits within `ms` of real time (not the Clock: processes do not follow the
 * TestClock). One callback-based wait rather than a race of fibers, which in a finalizer
 * (uninterruptible) would wait for the losing timer too.
 */
const exitsWithin = (spawned: Spawned, ms: number) =>
  Effect.async<boolean>((resume) => {
    const onExit = () => {
      clearTimeout(timer)
      resume(Effect.succeed(true))
    }
    const timer = setTimeout(() => {
      spawned.child.off("exit", onExit)
      resume(Effect.succeed(false))
    }, ms)
    spawned.child.once("exit", onExit)
    if (spawned.child.exitCode !== null || spawned.child.signalCode !== null) onExit()
    return Effect.sync(() => {
      clearTimeout(timer)
      spawned.child.off("exit", onExit)
    })
  })

/**
 * SIGTERM to the group, SIGKILL once `graceMs` have passed; done when the process has exited, or
 * with a warning when it has not `killTimeoutMs` after the SIGKILL (stuck in the kernel, say).
 */
const terminate = (spawned: Spawned, graceMs: number, killTimeoutMs: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (yield* Deferred.isDone(spawned.exited)) return
    signalGroup(spawned.pid, "SIGTERM")
    if (!(yield* exitsWithin(spawned, Math.max(0, graceMs)))) {
      signalGroup(spawned.pid, "SIGKILL")
      if (!(yield* exitsWithin(spawned, killTimeoutMs))) {
        return yield* Effect.logWarning(`process ${spawned.pid} has not exited ${killTimeoutMs} ms after SIGKILL; going on without it`)
      }
    }
    // Whatever it started in its group and left behind.
    signalGroup(spawned.pid, "SIGKILL")
  })

/** The Executor on local processes. */
export const make = (config: Config): Effect.Effect<Executor.Executor["Type"]> =>
  Effect.gen(function*() {
    const root = resolve(config.root)
    const reposDir = resolve(config.reposDir)
    const baseEnv: Readonly<Record<string, string>> = config.env ?? defaultEnv()
    const setupTimeoutMs = config.setupTimeoutMs ?? DEFAULT_SETUP_TIMEOUT_MS
    const graceMs = config.terminateGraceMs ?? DEFAULT_TERMINATE_GRACE_MS
    const killTimeoutMs = config.killTimeoutMs ?? DEFAULT_KILL_TIMEOUT_MS
    const mirrors = MirrorCache.make({ root: resolve(config.mirrorsDir ?? join(dirname(root), "mirrors")), timeoutMs: setupTimeoutMs, maxBytes: config.mirrorsMaxBytes })
    /** The processes this instance started that have not exited, by work directory. */
    const running = new Map<string, Set<Spawned>>()
    /**
     * Serializes the marker reads and writes of one run's directory, and its creation and removal
     * (a release removes an emptied run directory). One lock per run directory, held while used:
     * one lock for all would queue every sandbox's set-up and release behind the others' (a
     * release reads /proc), which with hundreds of sandboxes at once took minutes.
     */
    const runDirLocks = new Map<string, { readonly semaphore: Effect.Semaphore; users: number }>()
    const underRunDirLock = (place: Place) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.suspend(() => {
        let lock = runDirLocks.get(place.runDir)
        if (lock === undefined) {
          lock = { semaphore: Effect.unsafeMakeSemaphore(1), users: 0 }
          runDirLocks.set(place.runDir, lock)
        }
        const held = lock
        held.users++
        return held.semaphore.withPermits(1)(effect).pipe(Effect.ensuring(Effect.sync(() => {
          if (--held.users === 0) runDirLocks.delete(place.runDir)
        })))
      })
    const isolation = config.isolation
    /** The uids of this instance's sandboxes. */
    const uidsInUse = new Set<number>()
    if (isolation !== undefined) {
      if (process.getuid?.() !== 0) return yield* Effect.dieMessage("ProcessExecutor: isolation needs the service to run as root")
      // Searchable, not listable: a sandbox reaches its own directory by its path, sees no other.
      yield* Effect.promise(async () => {
        Directories.ensureDirectory(root)
        await chmod(root, 0o711)
      })
    }

    const placeOf = (run_id: Ids.RunId, execution_id: Ids.ExecutionId): Place => {
      const runDir = join(root, run_id)
      return { run_id, execution_id, runDir, workdir: join(runDir, execution_id), marker: join(runDir, `${execution_id}${MARKER_SUFFIX}`) }
    }

    const readMarker = (place: Place) =>
      Effect.promise(async () => {
        try {
          return parseMarker(await readFile(place.marker, "utf8"), { runDir: place.run_id, fileName: `${place.execution_id}${MARKER_SUFFIX}` })
        } catch {
          return Option.none<Marker>()
        }
      })

    const writeMarker = (place: Place, marker: Marker) =>
      io(`could not write the sandbox marker ${place.marker}`, async () => {
        const temporary = `${place.marker}.${randomBytes(6).toString("hex")}.tmp`
        await writeFile(temporary, formatMarker(marker), { mode: 0o600 })
        await rename(temporary, place.marker)
      })

    /**
     * Rewrites an existing marker in place, never creating it: a sandbox released meanwhile (by
     * this or another instance over the same root) stays released. The new text is padded with
     * spaces to the old size and written with one write, so a reader never sees half a marker.
     */
    const rewriteMarker = (place: Place, marker: Marker) =>
      io(`could not update the sandbox marker ${place.marker}`, async () => {
        let handle: FileHandle
        try {
          handle = await open(place.marker, "r+")
        } catch (error) {
          if (isMissing(error)) return
          throw error
        }
        try {
          const text = Buffer.from(formatMarker(marker))
          const size = (await handle.stat()).size
          const bytes = text.length >= size ? text : Buffer.concat([text, Buffer.alloc(size - text.length, " ")])
          await handle.write(bytes, 0, bytes.length, 0)
        } finally {
          await handle.close()
        }
      })

    /** Changes the recorded process groups of the marker, if the sandbox still has one. */
    const updateGroups = (place: Place, f: (groups: ReadonlyArray<number>) => ReadonlyArray<number>) =>
      underRunDirLock(place)(
        Effect.flatMap(readMarker(place), Option.match({
          onNone: () => Effect.void,
          onSome: (marker) => rewriteMarker(place, { ...marker, process_groups: f(marker.process_groups) })
        }))
      ).pipe(Effect.catchAll((error) => Effect.logWarning("could not update the sandbox marker", error.message)))

    /**
     * Kills every process of a sandbox's user, in whatever group or directory. Its uid is free
     * again once none is left; a uid whose processes survive stays taken, so no sandbox gets it.
     */
    const killSandboxUser = (uid: number) =>
      Effect.flatMap(Effect.promise(() => killUser(uid, killTimeoutMs)), (killed): Effect.Effect<void> => {
        switch (killed._tag) {
          case "AllGone":
            return Effect.sync(() => void uidsInUse.delete(uid))
          case "Survivors":
            return Effect.logWarning(
              `processes of the sandbox's user ${uid} still run ${killTimeoutMs} ms after SIGKILL (pids ${killed.pids.join(", ")}); ` +
                "removing the sandbox without them"
            )
          case "Unknown":
            return Effect.logWarning(`could not list the processes of the sandbox's user ${uid} within ${killTimeoutMs} ms; removing the sandbox`)
        }
      })

    /**
     * Kills (Linux, through /proc; nothing elsewhere) every process whose working directory is in
     * the sandbox, and the whole group of each recorded group leader among them: what setup commands
     * left running in the background, what escaped its group, what an earlier life of the service
     * started. For a sandbox without a user of its own; one with a user has them all killed by uid.
     */
    const killInDirectory = (place: Place, recordedGroups: ReadonlyArray<number>) =>
      Effect.flatMap(Effect.promise(() => within(processesIn(place.workdir), killTimeoutMs)), Option.match({
        onNone: () => Effect.logWarning(`could not look through /proc within ${killTimeoutMs} ms for processes left in the sandbox; removing it`),
        onSome: (pids) =>
          Effect.sync(() => {
            for (const pgid of recordedGroups) if (pids.includes(pgid)) signalGroup(pgid, "SIGKILL")
            pids.forEach(killProcess)
          })
      }))

    const release = (place: Place): Effect.Effect<void> =>
      Effect.gen(function*() {
        const processes = [...(running.get(place.workdir) ?? [])]
        yield* Effect.forEach(processes, (spawned) => terminate(spawned, graceMs, killTimeoutMs), { concurrency: "unbounded", discard: true })
        yield* underRunDirLock(place)(Effect.gen(function*() {
          const marker = yield* readMarker(place)
          yield* Option.match(Option.flatMap(marker, (m) => Option.fromNullable(m.uid)), {
            onSome: killSandboxUser,
            onNone: () => killInDirectory(place, Option.match(marker, { onNone: () => [], onSome: (m) => m.process_groups }))
          })
          yield* io(`could not remove the work directory ${place.workdir}`, () => rm(place.workdir, { recursive: true, force: true }))
          yield* io(`could not remove the sandbox marker ${place.marker}`, () => rm(place.marker, { force: true }))
          yield* Effect.promise(() => rmdir(place.runDir).catch(() => undefined))
        }))
      }).pipe(
        Effect.catchAll((error) => Effect.logWarning("could not release the sandbox", error.message)),
        Effect.annotateLogs({ run_id: place.run_id, execution_id: place.execution_id }),
        Effect.withSpan("ProcessExecutor.release")
      )

    /** Logs a process's stderr at debug level, line by line (long lines cut). */
    const logStderr = (spawned: Spawned, place: Place, runtime: Runtime.Runtime<never>) => {
      const log = (line: string) =>
        Runtime.runFork(runtime)(
          Effect.logDebug(line).pipe(Effect.annotateLogs({ run_id: place.run_id, execution_id: place.execution_id, pid: spawned.pid, stream: "stderr" }))
        )
      let pending = ""
      spawned.child.stderr!.setEncoding("utf8")
      spawned.child.stderr!.on("data", (text: string) => {
        const lines = (pending + text).split("\n")
        pending = lines.pop()!
        if (pending.length > STDERR_LINE_BYTES) {
          lines.push(`${pending.slice(0, STDERR_LINE_BYTES)}…`)
          pending = ""
        }
        for (const line of lines) log(line.length > STDERR_LINE_BYTES ? `${line.slice(0, STDERR_LINE_BYTES)}…` : line)
      })
      spawned.child.stderr!.on("end", () => {
        if (pending !== "") log(pending)
      })
    }

    const agentProcess = (spawned: Spawned): Executor.AgentProcess => {
      const stdin = spawned.child.stdin!
      return {
        stdout: pullStream(spawned.child.stdout!),
        send: (message) =>
          Effect.suspend(() => {
            if (spawned.child.exitCode !== null || spawned.child.signalCode !== null) {
              return Effect.fail(executorError("cannot send to the agent: it has exited"))
            }
            if (stdin.destroyed || stdin.writableEnded) return Effect.fail(executorError("cannot send to the agent: its stdin is closed"))
            let json: string | undefined
            try {
              json = JSON.stringify(message)
            } catch (cause) {
              return Effect.fail(executorError("cannot send to the agent: the message is not JSON", cause))
            }
            if (json === undefined) return Effect.fail(executorError("cannot send to the agent: the message is not JSON"))
            const line = `${json}\n`
            return Effect.async<void, Executor.ExecutorError>((resume) => {
              stdin.write(line, (error) =>
                resume(error ? Effect.fail(executorError(`cannot send to the agent: ${error.message}`, error)) : Effect.void))
            })
          }),
        interrupt: Effect.sync(() => void signalGroup(spawned.pid, "SIGINT")),
        terminate: (ms) => terminate(spawned, ms, killTimeoutMs),
        exitCode: Deferred.await(spawned.exited)
      }
    }

    /** The environment of a sandbox's processes before the spec's: `HOME` is the work directory of an isolated one. */
    const envOf = (place: Place, user: User | undefined) => (user === undefined ? baseEnv : { ...baseEnv, HOME: place.workdir })

    /**
     * Pushes a clone of the sandbox to its host (`started`: where each clone started, by
     * directory): the sandbox packs its work itself (`start`, as its user), see publishBranch.
     */
    const publishOf = (team: string, started: ReadonlyMap<string, Cloned>, start: Executor.Sandbox["start"]) => {
      const publish = publishClone({ mirrors, team, started, start, timeoutMs: setupTimeoutMs })
      return (repository: Executor.SandboxRepository, branch: string) =>
        publish(repository, branch).pipe(Effect.mapError((e) => new Executor.PublishFailed({ message: e.message })))
    }

    const sandboxAt = (
      place: Place,
      attachments: ReadonlyArray<Executor.SandboxAttachment>,
      sandboxEnv: Readonly<Record<string, string>>,
      user: User | undefined,
      clones?: { readonly team: string; readonly started: ReadonlyMap<string, Cloned> }
    ): Executor.Sandbox => {
      const start = Effect.fn("ProcessExecutor.start")(function*(
        command: ReadonlyArray<string>,
        env: Readonly<Record<string, string>>
      ): Effect.fn.Return<Executor.AgentProcess, Executor.ExecutorError, Scope.Scope> {
        const present = yield* Effect.promise(() => stat(place.workdir).then((s) => s.isDirectory(), () => false))
        if (!present) return yield* executorError(`the sandbox ${place.workdir} has been released`)
        const runtime = yield* Effect.runtime<never>()
        const spawned = yield* Effect.acquireRelease(
          Effect.tap(spawnProcess(command, { cwd: place.workdir, env: { ...envOf(place, user), ...sandboxEnv, ...env }, user }), (spawned) =>
            Effect.gen(function*() {
              const set = running.get(place.workdir) ?? new Set()
              running.set(place.workdir, set.add(spawned))
              logStderr(spawned, place, runtime)
              yield* updateGroups(place, (groups) => [...groups, spawned.pid])
              yield* Effect.forkDaemon(Effect.gen(function*() {
                yield* Deferred.await(spawned.exited)
                const set = running.get(place.workdir)
                set?.delete(spawned)
                if (set?.size === 0) running.delete(place.workdir)
                yield* updateGroups(place, (groups) => groups.filter((pgid) => pgid !== spawned.pid))
              }))
            })),
          (spawned) => terminate(spawned, graceMs, killTimeoutMs)
        )
        yield* Effect.annotateCurrentSpan({ pid: spawned.pid })
        return agentProcess(spawned)
      })
      return {
        id: place.workdir,
        run_id: place.run_id,
        execution_id: place.execution_id,
        attachments,
        start,
        release: release(place),
        ...(clones === undefined ? {} : { publish: publishOf(clones.team, clones.started, start) })
      }
    }

    const prepare = Effect.fn("ProcessExecutor.prepare")(function*(
      spec: Executor.SandboxSpec
    ): Effect.fn.Return<Executor.Sandbox, Executor.SetupFailed | Executor.ExecutorError> {
      if (!isIdSegment(spec.run_id) || !isIdSegment(spec.execution_id)) {
        return yield* executorError(`invalid run or execution id ${JSON.stringify(`${spec.run_id}/${spec.execution_id}`)}`)
      }
      const names = new Set<string>()
      for (const attachment of spec.attachments) {
        const problem = attachmentNameProblem(attachment.name)
        if (problem !== undefined) return yield* executorError(problem)
        if (names.has(attachment.name)) return yield* executorError(`two attachments are named ${JSON.stringify(attachment.name)}`)
        names.add(attachment.name)
      }
      const place = placeOf(spec.run_id, spec.execution_id)
      // An earlier attempt of the same execution is replaced (a fresh execution has nothing to
      // release: skip the look for stragglers, which reads /proc).
      const exists = (path: string) => Effect.promise(() => stat(path).then(() => true, () => false))
      if ((yield* exists(place.workdir)) || (yield* exists(place.marker))) yield* release(place)
      const attachmentsDir = join(place.workdir, "attachments")
      const attachments = spec.attachments.map((a) => ({ name: a.name, media_type: a.media_type, path: join(attachmentsDir, a.name) }))
      // The set-up's time limit counts from here: choosing the sandbox's user is part of it.
      const deadline = Date.now() + setupTimeoutMs
      const uid = isolation === undefined
        ? undefined
        : yield* io("could not choose a user for the sandbox", () => allocateUid(isolation.uids, uidsInUse, setupTimeoutMs))
      const user = uid === undefined ? undefined : userOf(uid)
      const started = new Map<string, Cloned>()
      const sandbox = sandboxAt(place, attachments, spec.env, user, { team: spec.team_uid, started })
      const setupFailed = (message: string) => new Executor.SetupFailed({ message, sandbox })

      const created_at = DateTime.formatIso(yield* DateTime.now)
      const run = (file: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>>, as?: User) =>
        runToCompletion(file, args, { cwd: place.workdir, env, timeoutMs: Math.max(1, deadline - Date.now()), user: as })
      const timedOut = (what: string, completion: Completion) =>
        setupFailed(withOutput(`${what} did not finish within the setup time limit of ${setupTimeoutMs} ms`, completion.output))

      yield* Effect.gen(function*() {
        // The run's directory and the marker together, under the lock that `release` takes to
        // remove an emptied run directory: the release of the run's previous execution cannot
        // remove the directory between the two.
        yield* underRunDirLock(place)(Effect.gen(function*() {
          yield* io(`could not create the sandbox directory ${place.runDir}`, async () => {
            await mkdir(place.runDir, { recursive: true })
            if (user !== undefined) await chmod(place.runDir, 0o711)
          })
          yield* writeMarker(place, {
            version: 1,
            run_id: spec.run_id,
            execution_id: spec.execution_id,
            created_at,
            attachments,
            process_groups: [],
            ...(uid === undefined ? {} : { uid })
          })
        }))
        yield* io(`could not create the work directory ${place.workdir}`, () => mkdir(place.workdir))

        const targets = new Set<string>()
        for (const repository of spec.repos) {
          const found = repositoryDir(reposDir, spec.team_uid, repository)
          if ("problem" in found) return yield* setupFailed(found.problem)
          const name = `${repository.owner}/${repository.repo}`
          if (targets.has(repository.repo)) return yield* setupFailed(`repository ${name}: another repository is cloned into ${repository.repo}/ already`)
          targets.add(repository.repo)
          const local = found.dir
          if (repository.remote === undefined && !(yield* Effect.promise(() => stat(local).then((s) => s.isDirectory(), () => false)))) {
            return yield* setupFailed(`repository ${name} not found`)
          }
          const cloned = yield* cloneRepository({
            mirrors,
            team: spec.team_uid,
            name,
            remote: repository.remote,
            local,
            target: join(place.workdir, repository.repo),
            timeoutMs: Math.max(1, deadline - Date.now()),
            prefer: repository.remote?.branch,
            ref: repository.ref
          }).pipe(Effect.mapError((e) => setupFailed(e.message)))
          started.set(repository.repo, cloned)
        }

        if (spec.attachments.length > 0) {
          yield* io("could not write the attachments", async () => {
            await mkdir(attachmentsDir, { recursive: true })
            for (const attachment of spec.attachments) await writeFile(join(attachmentsDir, attachment.name), attachment.bytes)
          })
        }

        // What the service made is the sandbox user's from here on, and only theirs.
        if (user !== undefined) {
          yield* io(`could not give the work directory ${place.workdir} to its user`, async () => {
            await chownTree(place.workdir, user)
            await chmod(place.workdir, 0o700)
          })
        }

        const total = spec.setup_commands.length
        for (const [index, command] of spec.setup_commands.entries()) {
          const what = `setup command ${index + 1} of ${total} \`${shown(command)}\``
          const completion = yield* run("/bin/sh", ["-c", command], { ...envOf(place, user), ...spec.env }, user)
          if (completion._tag === "TimedOut") return yield* timedOut(what, completion)
          if (completion.code !== 0) return yield* setupFailed(withOutput(`${what} exited with ${completion.code}`, completion.output))
        }
      }).pipe(
        // A failed setup keeps the sandbox for the caller; anything else that stops the preparation removes it.
        Effect.onExit((exit) =>
          Exit.isFailure(exit) && !Option.exists(Cause.failureOption(exit.cause), (e) => e._tag === "SetupFailed")
            ? sandbox.release
            : Effect.void
        )
      )
      return sandbox
    })

    const leftovers = Effect.gen(function*() {
      const runDirs = yield* io(`could not list the sandboxes in ${root}`, () =>
        readdir(root, { withFileTypes: true }).catch((error) => (isMissing(error) ? [] : Promise.reject(error))))
      const found: Array<Executor.Sandbox> = []
      for (const runDir of runDirs) {
        if (!runDir.isDirectory() || !isIdSegment(runDir.name)) continue
        const files = yield* Effect.promise(() => readdir(join(root, runDir.name)).catch(() => []))
        for (const fileName of files) {
          if (!fileName.endsWith(MARKER_SUFFIX)) continue
          const text = yield* Effect.promise(() => readFile(join(root, runDir.name, fileName), "utf8").catch(() => undefined))
          const marker = text === undefined ? Option.none() : parseMarker(text, { runDir: runDir.name, fileName })
          if (Option.isNone(marker)) {
            yield* Effect.logWarning("ignoring an unreadable sandbox marker", join(root, runDir.name, fileName))
            continue
          }
          const uid = marker.value.uid
          if (uid !== undefined) uidsInUse.add(uid)
          found.push(sandboxAt(
            placeOf(marker.value.run_id, marker.value.execution_id),
            marker.value.attachments,
            {},
            uid === undefined ? undefined : userOf(uid)
          ))
        }
      }
      return found as ReadonlyArray<Executor.Sandbox>
    }).pipe(Effect.withSpan("ProcessExecutor.leftovers"))

    return Executor.Executor.of({ prepare, leftovers })
  })

/** The Executor on local child processes, with sandboxes below `config.root`. */
export const layer = (config: Config): Layer.Layer<Executor.Executor> => Layer.effect(Executor.Executor, make(config))
