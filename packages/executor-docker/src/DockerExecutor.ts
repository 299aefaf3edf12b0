/**
 * The `Executor` port on the Docker Engine (dockerode).
 *
 * A sandbox is a host work directory `<root>/<run_id>/<execution_id>` bind-mounted at `/workspace`
 * in a long-running container (labels `agent-runs.managed`, `agent-runs.run-id`,
 * `agent-runs.execution-id`, `agent-runs.root`, `agent-runs.workdir`; network mode none or host;
 * memory, CPU and pids limits). Repositories are cloned and attachments written on the host side;
 * setup commands and agents run in the container with `docker exec`. An agent is started through
 * a one-line shell wrapper that records its pid in `/workspace/.agent-runs/<tag>.pid`; every exec
 * is a session leader, so `terminate` signals the agent's whole process group.
 *
 * Confinement (docs/security.md): every process of the container (its init, setup commands,
 * agents) runs as an unprivileged `user` (65534:65534 by default, never uid or gid 0) with
 * `no-new-privileges`, no capabilities, a read-only root file system, a tmpfs `/tmp` (`HOME`) and
 * the work directory, owned by that user, on a host mount that is `nosuid,nodev` (made so here and
 * checked from inside the container).
 */
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import type { Duplex } from "node:stream"
import { type Cloned, isSafeSegment, MirrorCache, publishClone, stageWorkspace } from "@agent-runs/git"
import type { ExecutionId, RunId } from "@agent-runs/core/domain/Ids"
import { OutputTail } from "@agent-runs/core/internal/OutputTail"
import type {
  Adoptable,
  AgentProcess,
  LastingAgent,
  Sandbox,
  SandboxAttachment,
  SandboxRepository,
  SandboxSpec
} from "@agent-runs/core/ports/Executor"
import { Executor, ExecutorError, PublishFailed, SetupFailed } from "@agent-runs/core/ports/Executor"
import type Docker from "dockerode"
import { Clock, Deferred, Duration, Effect, Exit, Fiber, Layer, Mailbox, Option, Stream } from "effect"
import { Demultiplexer } from "./internal/Demux.js"
import { chownTree, readSmallFile } from "./internal/HostFiles.js"
import { ensureNosuidNodev, unmountAll } from "./internal/HostMounts.js"
import * as LastingFiles from "./internal/LastingFiles.js"

/** How the Docker executor is set up. */
export interface DockerExecutorConfig {
  /** Host directory of the work directories (`<root>/<run_id>/<execution_id>`). */
  readonly root: string
  /** Host directory of the git repositories that sandboxes clone: `<reposDir>/<team_uid>/<owner>/<repo>`, the run's team's. */
  readonly reposDir: string
  /**
   * Host directory of the teams' mirrors of their Git host's repositories (a team connected to
   * GitHub); default: `mirrors` beside `root`. Private to the executor.
   */
  readonly mirrorsDir?: string | undefined
  /** The most bytes the mirrors may take (MirrorCache; 20 GiB by default). */
  readonly mirrorsMaxBytes?: number | undefined
  /** The image of a sandbox whose environment names none (`docker_image` null). */
  readonly image: string
  /** The containers' network: `none` (default) or the host's. Never a bridge. */
  readonly network?: "none" | "host"
  /** Memory limit of a sandbox in bytes (none by default). */
  readonly memoryBytes?: number
  /** CPU limit in billionths of a CPU (none by default). */
  readonly nanoCpus?: number
  /** Most processes a sandbox may hold (4096 by default). */
  readonly pidsLimit?: number
  /**
   * The unprivileged user every process of a sandbox runs as (65534:65534, `nobody`, by default).
   * Neither may be 0. The work directory is given to it (`chown`), so the executor runs as root,
   * or as this very uid:gid.
   */
  readonly user?: { readonly uid: number; readonly gid: number }
  /** Size of the sandbox's `/tmp`, a memory-backed tmpfs that is also `HOME` (1 GiB by default). */
  readonly tmpBytes?: number
  /** Further bind mounts, e.g. the scripted agent read-only at /opt/agent-runs/scripted-agent. */
  readonly mounts?: ReadonlyArray<{ readonly host: string; readonly container: string; readonly readOnly: boolean }>
  /** The engine's socket (`/var/run/docker.sock` by default). */
  readonly socketPath?: string
}

export const Labels = {
  managed: "agent-runs.managed",
  runId: "agent-runs.run-id",
  teamUid: "agent-runs.team-uid",
  executionId: "agent-runs.execution-id",
  root: "agent-runs.root",
  workdir: "agent-runs.workdir"
} as const

/** Where the work directory is inside the container. */
export const containerWorkdir = "/workspace"
/** The executor's own files in the work directory (pid files, the sandbox marker). */
const controlDir = ".agent-runs"
/** `$0` of the agent wrapper: names an agent in the container's process list. */
const agentMarker = "agent-runs-agent"
const defaultPidsLimit = 4096
/** The longest one repository's clone may take (as the process executor's setup time limit). */
const cloneTimeoutMs = 10 * 60_000
/** `nobody`: owns nothing on the host. */
export const defaultUser = { uid: 65534, gid: 65534 } as const
const defaultTmpBytes = 1024 ** 3
/** `HOME` of a sandbox whose env sets none: the root file system is read-only. */
const defaultHome = "/tmp"
/** Grace of an agent still running when the scope of `start` closes. */
const scopeGraceMs = 2_000
const outputTailBytes = 4_000

/**
 * The executor waits on real processes: its sleeps and grace periods use the wall clock even
 * where the caller's fiber has a test clock (a test's TestClock would never let them end).
 */
const wallClock = Clock.make()
const inRealTime = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => Effect.withClock(effect, wallClock)

const initCommand = ["/bin/sh", "-c", "trap \"exit 0\" TERM; while :; do sleep 3600 & wait; done"]
/** Prints the options of the mount at the work directory, as the container sees it (shell builtins only). */
const workdirMountCommand = [
  "/bin/sh",
  "-c",
  `while read -r _id _parent _dev _root point options _rest; do [ "$point" = ${containerWorkdir} ] && echo "$options"; done < /proc/self/mountinfo; true`
]
/** A new agent's tag: the names of its pid file and, for a lasting one, of its files (LastingFiles.ts). */
const newTag = () => `agent-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`
/** The agent wrapper's script: records its pid, then becomes the agent (`$@`) with `redirections`. */
const wrapperOf = (tag: string, redirections: string) => `echo $$ > ${containerWorkdir}/${controlDir}/${tag}.pid && exec "$@"${redirections}`
/** How long leaving an agent waits for what was written to its stdin to reach the FIFO. */
const stdinFlushMs = 2_000
/** Whether this process runs as root (lasting agents need it: their directory is the executor's alone). */
const runsAsRoot = process.getuid?.() === 0
/** How long `terminate` waits for an agent's pid file before it signals every process of the sandbox. */
const pidFileWaitMs = 5_000

/** A uid or gid the containers may run as: a plain number, not root's. */
export const isUnprivilegedId = (id: number): boolean => Number.isInteger(id) && id > 0 && id < 2 ** 32 - 1

interface Marker {
  readonly run_id: string
  readonly execution_id: string
  readonly attachments: ReadonlyArray<SandboxAttachment>
}

const errorCode = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : undefined
const statusCode = (cause: unknown): number | undefined =>
  typeof cause === "object" && cause !== null && "statusCode" in cause && typeof cause.statusCode === "number"
    ? cause.statusCode
    : undefined
const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/**
 * dockerode, loaded when a Docker executor is built rather than when this module is: with it come
 * about 140 modules (gRPC and protobuf for BuildKit sessions, ssh2 for `ssh://` engines) that a
 * server running no container never needs.
 */
const loadDockerode = Effect.promise(() => import("dockerode")).pipe(Effect.map((module) => module.default))

/** Builds the executor on one engine. */
export const make = (config: DockerExecutorConfig) =>
  Effect.flatMap(loadDockerode, (Dockerode) => Effect.sync(() => {
    const socketPath = config.socketPath ?? "/var/run/docker.sock"
    const docker = new Dockerode({ socketPath })
    const root = Path.resolve(config.root)
    const reposDir = Path.resolve(config.reposDir)
    const mirrors = MirrorCache.make({ root: Path.resolve(config.mirrorsDir ?? Path.join(Path.dirname(root), "mirrors")), timeoutMs: cloneTimeoutMs, maxBytes: config.mirrorsMaxBytes })
    const user = config.user ?? defaultUser
    const userSpec = `${user.uid}:${user.gid}`

    const engineError = (what: string, cause: unknown): ExecutorError => {
      const code = errorCode(cause)
      if (code === "ENOENT" || code === "ECONNREFUSED" || code === "EACCES" || code === "ECONNRESET") {
        return new ExecutorError({ message: `Docker engine unreachable at ${socketPath} (${code}) while trying to ${what}`, cause })
      }
      return new ExecutorError({ message: `Docker engine could not ${what}: ${messageOf(cause)}`, cause })
    }
    const call = <A>(what: string, f: () => Promise<A>): Effect.Effect<A, ExecutorError> =>
      Effect.tryPromise({ try: f, catch: (cause) => engineError(what, cause) })
    /** Like `call`, but "not found" (404) is none: removed containers, forgotten execs. */
    const callOrGone = <A>(what: string, f: () => Promise<A>): Effect.Effect<Option.Option<A>, ExecutorError> =>
      Effect.tryPromise({ try: f, catch: (cause) => cause }).pipe(
        Effect.map(Option.some),
        Effect.catchAll((cause) => statusCode(cause) === 404 ? Effect.succeed(Option.none()) : Effect.fail(engineError(what, cause)))
      )

    /** Waits until an exec has exited: its exit code (the engine reports 128 + n for signal n). */
    const execExitCode = (exec: Docker.Exec, streamEnded: Effect.Effect<void>) =>
      Effect.gen(function*() {
        // An exec that has not started yet also reads "not running", with no exit code: only an
        // exit code means it ended (an exec that never reports one gives up after ~10 s: -1).
        for (let unknown = 0; ; ) {
          const info = yield* call("inspect an exec", () => exec.inspect())
          if (!info.Running && typeof info.ExitCode === "number") return info.ExitCode
          if (!info.Running && ++unknown > 1_000) return -1
          // Once the stream ended the exit follows within milliseconds; before that, a slow poll
          // still notices an exit whose stream stays open (a background child holding stdout).
          yield* Effect.raceFirst(streamEnded, Effect.sleep(Duration.seconds(1)))
          yield* Effect.sleep(Duration.millis(10))
        }
      }).pipe(inRealTime)

    /** Runs a command in the container to its end: exit code and the end of its output. */
    const runToEnd = (container: Docker.Container, cmd: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const exec = yield* call("create an exec", () =>
          container.exec({ Cmd: [...cmd], User: userSpec, AttachStdout: true, AttachStderr: true, WorkingDir: containerWorkdir })
        )
        const stream = yield* call("start an exec", () => exec.start({ Detach: false }))
        const tail = new OutputTail(outputTailBytes)
        yield* Effect.async<void, ExecutorError>((resume) => {
          const demux = new Demultiplexer()
          stream.on("data", (chunk: Buffer) => {
            for (const piece of demux.push(chunk)) tail.push(piece.bytes)
          })
          stream.once("end", () => resume(Effect.void))
          stream.once("close", () => resume(Effect.void))
          stream.once("error", (cause) => resume(Effect.fail(engineError("read an exec's output", cause))))
        })
        const exitCode = yield* execExitCode(exec, Effect.void)
        return { exitCode, output: tail.toString() }
      })

    const removeContainer = (id: string) =>
      callOrGone("remove a container", () => docker.getContainer(id).remove({ force: true, v: true })).pipe(Effect.asVoid)

    /** Removes a work directory: its nosuid mount first, then the files (the run's directory once empty). */
    const removeWorkdir = (workdir: string) =>
      unmountAll(workdir).pipe(
        Effect.zipRight(Effect.promise(async () => {
          await Fs.rm(workdir, { recursive: true, force: true })
          await Fs.rm(LastingFiles.ioDirOf(workdir), { recursive: true, force: true })
          // The run's directory goes too once its last execution's is gone.
          await Fs.rmdir(Path.dirname(workdir)).catch(() => undefined)
        }))
      )

    /**
     * The host file of an agent's pid, once the wrapper wrote it (none while the agent has not got
     * that far). The container may have replaced it by anything: read without trusting it.
     */
    const readPid = (workdir: string, tag: string) =>
      readSmallFile(Path.join(workdir, controlDir, `${tag}.pid`), 32).pipe(
        Effect.map((text) => text !== undefined && /^\d+$/.test(text.trim()) ? Option.some(text.trim()) : Option.none())
      )

    /**
     * An agent process from an exec: `exitCode` inspects the exec, `terminate` signals the
     * agent's process group inside the container. `io` is absent after a restart (reattach).
     */
    const agentProcess = (args: {
      readonly container: Docker.Container
      readonly exec: Docker.Exec
      readonly workdir: string
      readonly tag: string
      readonly stdout: Stream.Stream<Uint8Array, ExecutorError>
      readonly send: (message: unknown) => Effect.Effect<void, ExecutorError>
      readonly streamEnded: Effect.Effect<void>
    }) =>
      Effect.gen(function*() {
        // One watcher per process (a memoized effect would remember an interrupted wait).
        const watcher = yield* Effect.forkScoped(execExitCode(args.exec, args.streamEnded))
        const exitCode = Fiber.join(watcher)
        const running = call("inspect an exec", () => args.exec.inspect()).pipe(
          Effect.map((info) => info.Running),
          Effect.orElseSucceed(() => false)
        )
        const signal = (name: "INT" | "TERM" | "KILL") =>
          Effect.gen(function*() {
            // The wrapper writes the pid first thing; wait for it while the agent runs.
            const deadline = (yield* Clock.currentTimeMillis) + pidFileWaitMs
            let pid = yield* readPid(args.workdir, args.tag)
            while (Option.isNone(pid) && (yield* Clock.currentTimeMillis) < deadline && (yield* running)) {
              yield* Effect.sleep(Duration.millis(20))
              pid = yield* readPid(args.workdir, args.tag)
            }
            if (Option.isSome(pid)) {
              return yield* runToEnd(args.container, [
                "/bin/sh",
                "-c",
                `kill -s ${name} -${pid.value} 2>/dev/null || kill -s ${name} ${pid.value} 2>/dev/null; true`
              ])
            }
            // A running agent whose pid file is gone (the agent removed it): every process of the
            // sandbox's user but the container's init gets the signal.
            if (yield* running) yield* runToEnd(args.container, ["/bin/sh", "-c", `kill -s ${name} -1 2>/dev/null; true`])
          })
        const terminate = (graceMs: number) =>
          Effect.gen(function*() {
            if (!(yield* running)) return
            yield* signal("TERM")
            const exited = yield* exitCode.pipe(Effect.timeout(Duration.millis(graceMs)), Effect.option)
            if (Option.isSome(exited)) return
            yield* signal("KILL")
            yield* exitCode
          }).pipe(Effect.ignore, inRealTime)
        const interrupt = Effect.gen(function*() {
          if (yield* running) yield* signal("INT")
        }).pipe(Effect.ignore, inRealTime)
        const agent: AgentProcess = { stdout: args.stdout, send: args.send, interrupt, terminate, exitCode }
        return agent
      })

    const makeSandbox = (args: {
      readonly containerId: string
      readonly runId: RunId
      readonly executionId: ExecutionId
      readonly workdir: string
      readonly attachments: ReadonlyArray<SandboxAttachment>
      /** The team and the branch each clone started from (a sandbox prepared here, not a leftover). */
      readonly clones?: { readonly team: string; readonly started: ReadonlyMap<string, Cloned> }
    }) => {
      const container = docker.getContainer(args.containerId)

      /** An agent's exec: the wrapper records its pid, then runs the command with its stdio as attached or redirected. */
      const agentExec = (
        command: ReadonlyArray<string>,
        env: Readonly<Record<string, string>>,
        wrapper: string,
        attach: { readonly AttachStdin: boolean; readonly AttachStdout: boolean }
      ) =>
        call("create the agent's exec", () =>
          container.exec({
            Cmd: ["/bin/sh", "-c", wrapper, agentMarker, ...command],
            User: userSpec,
            Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
            WorkingDir: containerWorkdir,
            ...attach,
            AttachStderr: true,
            Tty: false
          }))

      const start = Effect.fn("DockerExecutor.start")(function*(
        command: ReadonlyArray<string>,
        env: Readonly<Record<string, string>>
      ) {
        if (command.length === 0) return yield* new ExecutorError({ message: "cannot start an empty command" })
        const tag = newTag()
        const exec = yield* agentExec(command, env, wrapperOf(tag, ""), { AttachStdin: true, AttachStdout: true })
        const socket: Duplex = yield* Effect.acquireRelease(
          call("start the agent", () => exec.start({ hijack: true, stdin: true })),
          (socket) => Effect.sync(() => socket.destroy())
        )
        socket.on("error", () => undefined)
        const stdout = yield* Mailbox.make<Uint8Array, ExecutorError>({ capacity: 16 })
        const ended = yield* Deferred.make<void>()
        const demux = new Demultiplexer()
        const stderrTail = new OutputTail(outputTailBytes)
        yield* Stream.fromAsyncIterable(socket as AsyncIterable<Buffer>, (cause) => engineError("read the agent's output", cause)).pipe(
          Stream.runForEach((chunk) =>
            Effect.forEach(demux.push(chunk), (piece) => {
              if (piece.stream === 1) return stdout.offer(Uint8Array.from(piece.bytes))
              stderrTail.push(piece.bytes)
              return Effect.void
            }, { discard: true })
          ),
          Effect.exit,
          Effect.flatMap((exit) => stdout.done(exit)),
          Effect.ensuring(Deferred.succeed(ended, undefined)),
          Effect.forkScoped
        )
        const send = (message: unknown) =>
          Effect.async<void, ExecutorError>((resume) => {
            socket.write(`${JSON.stringify(message)}\n`, (cause) =>
              resume(cause ? Effect.fail(engineError("write to the agent's stdin", cause)) : Effect.void)
            )
          })
        const agent = yield* agentProcess({
          container,
          exec,
          workdir: args.workdir,
          tag,
          stdout: Mailbox.toStream(stdout),
          send,
          streamEnded: Deferred.await(ended)
        })
        yield* Effect.addFinalizer(() => agent.terminate(scopeGraceMs))
        return agent
      })

      const ioDir = LastingFiles.ioDirOf(args.workdir)
      const lastingError = (what: string) => (reason: string) => new ExecutorError({ message: `${what} in ${ioDir}: ${reason}` })

      /**
       * A lasting agent over its files (LastingFiles.ts), its stdout from byte `from`: stopped when
       * the scope closes unless it was detached. `streamEnded`: when the exec's attach ended, if
       * this process started it (its exit is then seen at once; else within a second).
       */
      const lastingAgent = (exec: Docker.Exec, tag: string, from: number, streamEnded: Effect.Effect<void>) =>
        Effect.gen(function*() {
          const stdin = yield* LastingFiles.openStdin(ioDir, tag).pipe(Effect.mapError(lastingError("cannot open the agent's stdin")))
          const exited = yield* Deferred.make<void>()
          const gone = Effect.zipRight(Deferred.await(exited), Effect.fail(new ExecutorError({ message: "the agent has exited" })))
          const send = (message: unknown) =>
            Effect.raceFirst(
              Effect.async<void, ExecutorError>((resume) => {
                stdin.write(`${JSON.stringify(message)}\n`, (cause) =>
                  resume(cause ? Effect.fail(engineError("write to the agent's stdin", cause)) : Effect.void))
              }),
              gone
            )
          const stdout = LastingFiles.tail(ioDir, tag, from, Deferred.await(exited)).pipe(
            Stream.mapError(lastingError("cannot read the agent's output"))
          )
          const agent = yield* agentProcess({ container, exec, workdir: args.workdir, tag, stdout, send, streamEnded })
          yield* agent.exitCode.pipe(Effect.ignore, Effect.ensuring(Deferred.succeed(exited, undefined)), Effect.forkScoped)
          let detached = false
          // Only once what was written to its stdin is all there: a line cut short would reach it half.
          const detach = LastingFiles.flushed(stdin, stdinFlushMs).pipe(
            Effect.filterOrFail((all) => all, () => "a message to its stdin is still being written"),
            Effect.zipRight(LastingFiles.markDetached(ioDir, tag, exec.id)),
            Effect.mapError(lastingError("cannot leave the agent for the next process")),
            Effect.zipRight(Effect.sync(() => void (detached = true)))
          )
          yield* Effect.addFinalizer(() => Effect.suspend(() => detached ? Effect.void : agent.terminate(scopeGraceMs)))
          const lasting: LastingAgent = { ...agent, detach }
          return lasting
        })

      const startLasting = Effect.fn("DockerExecutor.startLasting")(function*(
        command: ReadonlyArray<string>,
        env: Readonly<Record<string, string>>
      ) {
        if (command.length === 0) return yield* new ExecutorError({ message: "cannot start an empty command" })
        const tag = newTag()
        yield* LastingFiles.create(ioDir, tag, user.uid, user.gid).pipe(Effect.mapError(lastingError("cannot make the agent's files")))
        const redirections = ` 0<>${LastingFiles.containerIoDir}/${tag}.in 1>>${LastingFiles.containerIoDir}/${tag}.out`
        const exec = yield* agentExec(command, env, wrapperOf(tag, redirections), { AttachStdin: false, AttachStdout: false })
        // stderr stays attached: its end says at once that the agent exited; what it says is not kept.
        const stream = yield* Effect.acquireRelease(
          call("start the agent", () => exec.start({ Detach: false })),
          (stream) => Effect.sync(() => stream.destroy())
        )
        const ended = yield* Deferred.make<void>()
        stream.on("error", () => undefined)
        stream.on("close", () => Deferred.unsafeDone(ended, Exit.void))
        stream.on("end", () => Deferred.unsafeDone(ended, Exit.void))
        stream.resume()
        return yield* lastingAgent(exec, tag, 0, Deferred.await(ended))
      })

      /** The lasting agent `tag` (exec `execId`) that an earlier process left here, its stdout from `offset`. */
      const adopt = (tag: string, execId: string) => (offset: number) =>
        Effect.gen(function*() {
          const exec = docker.getExec(execId)
          const info = yield* call("inspect the agent's exec", () => exec.inspect())
          if (info.ContainerID !== args.containerId) {
            return yield* new ExecutorError({ message: `exec ${execId} is not of container ${args.containerId}` })
          }
          yield* LastingFiles.unmarkDetached(ioDir, tag)
          return yield* lastingAgent(exec, tag, offset, Effect.never)
        }).pipe(Effect.withSpan("DockerExecutor.adopt"))

      const release = Effect.gen(function*() {
        yield* removeContainer(args.containerId).pipe(
          Effect.tapError((error) => Effect.logWarning(`could not remove container ${args.containerId}: ${error.message}`)),
          Effect.ignore
        )
        yield* removeWorkdir(args.workdir)
      }).pipe(Effect.withSpan("DockerExecutor.release"))

      const clones = args.clones
      const pushes = clones === undefined ? undefined : publishClone({ mirrors, ...clones, start, timeoutMs: cloneTimeoutMs })
      const publish = pushes === undefined ? undefined : (repository: SandboxRepository, branch: string) =>
        pushes(repository, branch).pipe(Effect.mapError((e) => new PublishFailed({ message: e.message })))

      const sandbox: Sandbox = {
        id: args.containerId,
        run_id: args.runId,
        execution_id: args.executionId,
        attachments: args.attachments,
        start,
        // Only as root: the agents' directory is then the executor's alone (as the sandbox's own
        // uid, the agent could change what the executor writes there).
        ...(runsAsRoot ? { startLasting } : {}),
        release,
        ...(publish === undefined ? {} : { publish })
      }
      return { sandbox, adopt, args }
    }

    const prepare = Effect.fn("DockerExecutor.prepare")(function*(spec: SandboxSpec) {
      if (!isSafeSegment(spec.run_id) || !isSafeSegment(spec.execution_id)) {
        return yield* new ExecutorError({ message: `run and execution ids must be plain names: ${spec.run_id}/${spec.execution_id}` })
      }
      if (!isUnprivilegedId(user.uid) || !isUnprivilegedId(user.gid)) {
        return yield* new ExecutorError({ message: `the sandboxes' user must be an unprivileged uid:gid (not 0), not ${userSpec}` })
      }
      const workdir = Path.join(root, spec.run_id, spec.execution_id)
      const image = spec.docker_image ?? config.image
      yield* removeWorkdir(workdir)
      yield* Effect.tryPromise({
        // 0700 for what is made here (the root, the run's directory, the work directory): other
        // users of the host have no business in a sandbox's files.
        try: () => Fs.mkdir(Path.join(workdir, controlDir), { recursive: true, mode: 0o700 }),
        catch: (cause) => new ExecutorError({ message: `cannot create the work directory ${workdir}: ${messageOf(cause)}`, cause })
      }).pipe(
        // The release of the run's previous execution may remove the run's directory while it is
        // still empty, between the steps of the recursive mkdir: once more then.
        Effect.retry({ times: 2 })
      )
      // The lasting agents' files: the executor's directory, which the sandbox's user may pass
      // through but not change (LastingFiles.ts).
      yield* Effect.tryPromise({
        // (chmod too: the process's umask may be 077, and the sandbox's user must pass through.)
        try: () => Fs.mkdir(LastingFiles.ioDirOf(workdir)).then(() => Fs.chmod(LastingFiles.ioDirOf(workdir), 0o711)),
        catch: (cause) => new ExecutorError({ message: `cannot create the agents' directory of ${workdir}: ${messageOf(cause)}`, cause })
      }).pipe(Effect.tapError(() => removeWorkdir(workdir)))
      yield* ensureNosuidNodev(workdir).pipe(
        Effect.mapError((reason) =>
          new ExecutorError({
            message: `the work directory ${workdir} must be on a nosuid,nodev mount and could not be made one (${reason}); ` +
              `run the executor as root, or mount the sandbox root ${root} with nosuid,nodev`
          })
        ),
        Effect.tapError(() => removeWorkdir(workdir))
      )
      const created = yield* Effect.tryPromise({
        try: () =>
          docker.createContainer({
            Image: image,
            Cmd: initCommand,
            WorkingDir: containerWorkdir,
            User: userSpec,
            Env: Object.entries({ HOME: defaultHome, ...spec.env }).map(([name, value]) => `${name}=${value}`),
            Labels: {
              [Labels.managed]: "true",
              [Labels.runId]: spec.run_id,
              [Labels.teamUid]: spec.team_uid,
              [Labels.executionId]: spec.execution_id,
              [Labels.root]: root,
              [Labels.workdir]: workdir
            },
            HostConfig: {
              Binds: [
                `${workdir}:${containerWorkdir}`,
                `${LastingFiles.ioDirOf(workdir)}:${LastingFiles.containerIoDir}`,
                ...(config.mounts ?? []).map((mount) =>
                  `${Path.resolve(mount.host)}:${mount.container}${mount.readOnly ? ":ro" : ""}`
                )
              ],
              NetworkMode: config.network ?? "none",
              Privileged: false,
              CapDrop: ["ALL"],
              SecurityOpt: ["no-new-privileges"],
              ReadonlyRootfs: true,
              Tmpfs: { "/tmp": `rw,exec,nosuid,nodev,size=${config.tmpBytes ?? defaultTmpBytes},mode=1777` },
              PidsLimit: config.pidsLimit ?? defaultPidsLimit,
              ...(config.memoryBytes === undefined ? {} : { Memory: config.memoryBytes }),
              ...(config.nanoCpus === undefined ? {} : { NanoCpus: config.nanoCpus })
            }
          }),
        catch: (cause) =>
          statusCode(cause) === 404
            ? new ExecutorError({
              message: `image "${image}" not found on the Docker engine (there is no registry: build or import it first)`,
              cause
            })
            : engineError(`create a container from "${image}"`, cause)
      }).pipe(Effect.tapError(() => removeWorkdir(workdir)))

      const attachments: ReadonlyArray<SandboxAttachment> = spec.attachments.map((attachment) => ({
        name: attachment.name,
        media_type: attachment.media_type,
        path: `${containerWorkdir}/attachments/${attachment.name}`
      }))
      const started = new Map<string, Cloned>()
      const { sandbox } = makeSandbox({
        containerId: created.id,
        runId: spec.run_id,
        executionId: spec.execution_id,
        workdir,
        attachments,
        clones: { team: spec.team_uid, started }
      })
      const setupFailed = (message: string) => new SetupFailed({ message, sandbox })

      const steps = Effect.gen(function*() {
        const marker: Marker = { run_id: spec.run_id, execution_id: spec.execution_id, attachments }
        yield* Effect.promise(() => Fs.writeFile(Path.join(workdir, controlDir, "sandbox.json"), JSON.stringify(marker)))
        yield* call("start the sandbox container", () => created.start())
        // What the kernel gave the container is what counts (an engine in another mount namespace
        // would not see the host's nosuid mount): refuse a sandbox whose /workspace is not
        // nosuid,nodev.
        const seen = yield* runToEnd(created, workdirMountCommand)
        const options = seen.output.trim().split("\n").at(-1)?.split(",") ?? []
        if (!options.includes("nosuid") || !options.includes("nodev")) {
          return yield* new ExecutorError({
            message: `the container sees ${containerWorkdir} mounted "${options.join(",")}", not nosuid,nodev: ` +
              `the Docker engine must see the executor's mounts (a local engine in the same mount namespace)`
          })
        }

        // Host side: the clones and the attachments; what went wrong, if anything.
        const staged = yield* stageWorkspace({ mirrors, reposDir, spec, dir: workdir, timeoutMs: cloneTimeoutMs })
        for (const [repo, cloned] of staged.started) started.set(repo, cloned)
        // Where each clone started, for the process that may adopt the sandbox's agent to publish from it.
        yield* LastingFiles.writeClones(LastingFiles.ioDirOf(workdir), staged.started).pipe(
          Effect.mapError((reason) => new ExecutorError({ message: `cannot write the clones' starts of ${workdir}: ${reason}` }))
        )
        const failure = staged.failure
        // Everything the host put there (the clones, the attachments, the marker) goes to the
        // sandbox's user before anything of the sandbox's own runs (a debug agent too, after a
        // failed step).
        yield* chownTree(workdir, user.uid, user.gid).pipe(
          Effect.mapError((reason) =>
            new ExecutorError({
              message: `cannot give the work directory ${workdir} to ${userSpec} (${reason}): ` +
                `run the executor as root, or set its user to the executor's own uid:gid`
            })
          )
        )
        if (failure !== undefined) return yield* setupFailed(failure)

        for (const command of spec.setup_commands) {
          const result = yield* runToEnd(created, ["/bin/sh", "-c", command])
          if (result.exitCode !== 0) {
            return yield* setupFailed(
              `setup command \`${command}\` exited with code ${result.exitCode}${
                result.output === "" ? "" : `; end of its output:\n${result.output}`
              }`
            )
          }
        }
        return sandbox
      })
      // An engine failure after the container exists leaves nothing behind; a failed setup step
      // keeps the sandbox for a debug session.
      return yield* steps.pipe(
        Effect.tapErrorTag("ExecutorError", () => sandbox.release)
      )
    })

    /** The sandbox's marker; the container may have changed it, so it is read without trusting it. */
    const readMarker = (workdir: string) =>
      readSmallFile(Path.join(workdir, controlDir, "sandbox.json"), 1024 * 1024).pipe(
        Effect.map((text): ReadonlyArray<SandboxAttachment> => {
          try {
            const marker = text === undefined ? undefined : JSON.parse(text) as { readonly attachments?: unknown } | null
            const attachments: ReadonlyArray<unknown> = Array.isArray(marker?.attachments) ? marker.attachments : []
            return attachments.filter((a): a is SandboxAttachment =>
              typeof a === "object" && a !== null && "name" in a && typeof a.name === "string" && "media_type" in a &&
              typeof a.media_type === "string" && "path" in a && typeof a.path === "string"
            )
          } catch {
            return []
          }
        })
      )

    /** This root's containers as sandboxes, each with the tags of the agents left in it for this process (LastingFiles.ts). */
    const ofThisRoot = Effect.gen(function*() {
      const containers = yield* call("list containers", () =>
        docker.listContainers({ all: true, filters: { label: [`${Labels.managed}=true`, `${Labels.root}=${root}`] } })
      )
      const found: Array<{
        readonly parts: ReturnType<typeof makeSandbox> & { readonly team: string | undefined }
        /** The agent left in it for the next process, when its mark is whole. */
        readonly left: { readonly tag: string; readonly execId: string } | undefined
        readonly ioDir: string
      }> = []
      for (const summary of containers) {
        const info = yield* callOrGone("inspect a container", () => docker.getContainer(summary.Id).inspect())
        if (Option.isNone(info)) continue
        const labels = info.value.Config.Labels ?? {}
        const workdir = labels[Labels.workdir] ?? Path.join(root, labels[Labels.runId] ?? "", labels[Labels.executionId] ?? "")
        const parts = makeSandbox({
          containerId: summary.Id,
          runId: (labels[Labels.runId] ?? "") as RunId,
          executionId: (labels[Labels.executionId] ?? "") as ExecutionId,
          workdir,
          attachments: yield* readMarker(workdir)
        })
        const ioDir = LastingFiles.ioDirOf(workdir)
        // One lasting agent per sandbox; a mark that is not whole makes it a leftover like any.
        const tag = (yield* LastingFiles.detachedTags(ioDir))[0]
        const execId = tag === undefined ? undefined : yield* LastingFiles.detachedExec(ioDir, tag)
        const left = tag === undefined || execId === undefined ? undefined : { tag, execId }
        found.push({ parts: { ...parts, team: labels[Labels.teamUid] }, ioDir, left })
      }
      return found
    })

    const leftovers = ofThisRoot.pipe(
      Effect.map((found) => found.filter((f) => f.left === undefined).map((f) => f.parts.sandbox)),
      Effect.withSpan("DockerExecutor.leftovers")
    )

    const adoptable = Effect.gen(function*() {
      const adoptable: Array<Adoptable> = []
      for (const { ioDir, left, parts } of yield* ofThisRoot) {
        if (left === undefined) continue
        // Made again with what publishing needs: the team (a label, as the container was made) and where its clones started.
        const { adopt, sandbox } = makeSandbox({
          ...parts.args,
          ...(parts.team === undefined ? {} : { clones: { team: parts.team, started: yield* LastingFiles.readClones(ioDir) } })
        })
        adoptable.push({ sandbox, adopt: adopt(left.tag, left.execId) })
      }
      return adoptable
    }).pipe(Effect.withSpan("DockerExecutor.adoptable"))

    return Executor.of({ prepare, leftovers, adoptable })
  }))

/** The executor as a layer. Reaching the engine is checked on use, not here. */
export const layer = (config: DockerExecutorConfig): Layer.Layer<Executor> => Layer.effect(Executor, make(config))
