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
 */
import { execFile } from "node:child_process"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import type { Duplex } from "node:stream"
import type { ExecutionId, RunId } from "@agent-runs/core/Ids"
import type { AgentProcess, Sandbox, SandboxAttachment, SandboxSpec } from "@agent-runs/core/ports/Executor"
import { Executor, ExecutorError, SetupFailed } from "@agent-runs/core/ports/Executor"
import Docker from "dockerode"
import { Clock, Deferred, Duration, Effect, Fiber, Layer, Mailbox, Option, Stream } from "effect"
import { Demultiplexer, Tail } from "./internal/Demux.js"

/** How the Docker executor is set up. */
export interface DockerExecutorConfig {
  /** Host directory of the work directories (`<root>/<run_id>/<execution_id>`). */
  readonly root: string
  /** Host directory of the `owner/repo` git repositories that sandboxes clone. */
  readonly reposDir: string
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
  /** Further bind mounts, e.g. the scripted agent read-only at /opt/agent-runs/scripted-agent. */
  readonly mounts?: ReadonlyArray<{ readonly host: string; readonly container: string; readonly readOnly: boolean }>
  /** The engine's socket (`/var/run/docker.sock` by default). */
  readonly socketPath?: string
}

export const Labels = {
  managed: "agent-runs.managed",
  runId: "agent-runs.run-id",
  executionId: "agent-runs.execution-id",
  root: "agent-runs.root",
  workdir: "agent-runs.workdir"
} as const

/** Where the work directory is inside the container. */
export const containerWorkdir = "/workspace"
/** The executor's own files in the work directory (pid files, the sandbox marker). */
const controlDir = ".agent-runs"
/** `$0` of the agent wrapper: how a leftover container's running agent is recognised. */
const agentMarker = "agent-runs-agent"
const defaultPidsLimit = 4096
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

interface Marker {
  readonly run_id: string
  readonly execution_id: string
  readonly attachments: ReadonlyArray<SandboxAttachment>
}

const segment = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/
const isSafeSegment = (name: string): boolean => segment.test(name) && name.length <= 255 && !name.includes("..")
const isSafeFileName = (name: string): boolean =>
  name.length > 0 && name.length <= 255 && name !== "." && name !== ".." && !/[/\\\0]/.test(name)

const errorCode = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : undefined
const statusCode = (cause: unknown): number | undefined =>
  typeof cause === "object" && cause !== null && "statusCode" in cause && typeof cause.statusCode === "number"
    ? cause.statusCode
    : undefined
const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** Builds the executor on one engine. */
export const make = (config: DockerExecutorConfig) =>
  Effect.sync(() => {
    const socketPath = config.socketPath ?? "/var/run/docker.sock"
    const docker = new Docker({ socketPath })
    const root = Path.resolve(config.root)
    const reposDir = Path.resolve(config.reposDir)

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
          container.exec({ Cmd: [...cmd], AttachStdout: true, AttachStderr: true, WorkingDir: containerWorkdir })
        )
        const stream = yield* call("start an exec", () => exec.start({ Detach: false }))
        const tail = new Tail(outputTailBytes)
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

    const removeWorkdir = (workdir: string) =>
      Effect.promise(async () => {
        await Fs.rm(workdir, { recursive: true, force: true })
        // The run's directory goes too once its last execution's is gone.
        await Fs.rmdir(Path.dirname(workdir)).catch(() => undefined)
      })

    /** The host file of an agent's pid, once the wrapper wrote it (none while the agent has not got that far). */
    const readPid = (workdir: string, tag: string) =>
      Effect.promise(() => Fs.readFile(Path.join(workdir, controlDir, `${tag}.pid`), "utf8").catch(() => "")).pipe(
        Effect.map((text) => /^\d+$/.test(text.trim()) ? Option.some(text.trim()) : Option.none())
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
        const signal = (name: "TERM" | "KILL") =>
          Effect.gen(function*() {
            // The wrapper writes the pid first thing; wait for it while the agent runs.
            let pid = yield* readPid(args.workdir, args.tag)
            while (Option.isNone(pid) && (yield* running)) {
              yield* Effect.sleep(Duration.millis(20))
              pid = yield* readPid(args.workdir, args.tag)
            }
            if (Option.isNone(pid)) return
            yield* runToEnd(args.container, [
              "/bin/sh",
              "-c",
              `kill -s ${name} -${pid.value} 2>/dev/null || kill -s ${name} ${pid.value} 2>/dev/null; true`
            ])
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
        const agent: AgentProcess = { stdout: args.stdout, send: args.send, terminate, exitCode }
        return agent
      })

    const makeSandbox = (args: {
      readonly containerId: string
      readonly runId: RunId
      readonly executionId: ExecutionId
      readonly workdir: string
      readonly attachments: ReadonlyArray<SandboxAttachment>
      readonly runningAgent: Option.Option<{ readonly exec: Docker.Exec; readonly tag: string }>
    }): Sandbox => {
      const container = docker.getContainer(args.containerId)

      const start = Effect.fn("DockerExecutor.start")(function*(
        command: ReadonlyArray<string>,
        env: Readonly<Record<string, string>>
      ) {
        if (command.length === 0) return yield* new ExecutorError({ message: "cannot start an empty command" })
        const tag = `agent-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`
        const wrapper = `echo $$ > ${containerWorkdir}/${controlDir}/${tag}.pid && exec "$@"`
        const exec = yield* call("create the agent's exec", () =>
          container.exec({
            Cmd: ["/bin/sh", "-c", wrapper, agentMarker, ...command],
            Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
            WorkingDir: containerWorkdir,
            AttachStdin: true,
            AttachStdout: true,
            AttachStderr: true,
            Tty: false
          })
        )
        const socket: Duplex = yield* Effect.acquireRelease(
          call("start the agent", () => exec.start({ hijack: true, stdin: true })),
          (socket) => Effect.sync(() => socket.destroy())
        )
        socket.on("error", () => undefined)
        const stdout = yield* Mailbox.make<Uint8Array, ExecutorError>({ capacity: 16 })
        const ended = yield* Deferred.make<void>()
        const demux = new Demultiplexer()
        const stderrTail = new Tail(outputTailBytes)
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

      const reattach = Option.map(args.runningAgent, (running) =>
        Effect.gen(function*() {
          const gone = yield* Deferred.make<void>()
          const reattached = yield* agentProcess({
            container,
            exec: running.exec,
            workdir: args.workdir,
            tag: running.tag,
            // The engine cannot attach to a running exec again: what the agent writes from now on
            // is lost; the stream ends when the agent exits.
            stdout: Stream.fromEffect(Deferred.await(gone)).pipe(Stream.drain),
            send: () =>
              Effect.fail(new ExecutorError({ message: "the agent's stdin is not reachable after a restart of the service" })),
            streamEnded: Deferred.await(gone)
          })
          yield* reattached.exitCode.pipe(Effect.ensuring(Deferred.succeed(gone, undefined)), Effect.ignore, Effect.forkScoped)
          yield* Effect.addFinalizer(() => reattached.terminate(scopeGraceMs))
          return reattached
        })
      )

      const release = Effect.gen(function*() {
        yield* removeContainer(args.containerId).pipe(
          Effect.tapError((error) => Effect.logWarning(`could not remove container ${args.containerId}: ${error.message}`)),
          Effect.ignore
        )
        yield* removeWorkdir(args.workdir)
      }).pipe(Effect.withSpan("DockerExecutor.release"))

      return {
        id: args.containerId,
        run_id: args.runId,
        execution_id: args.executionId,
        attachments: args.attachments,
        start,
        reattach,
        release
      }
    }

    const gitClone = (source: string, target: string) =>
      Effect.async<{ readonly ok: boolean; readonly output: string }>((resume) => {
        execFile(
          "git",
          ["clone", "--quiet", "--", source, target],
          { env: { ...process.env, GIT_TERMINAL_PROMPT: "0" }, maxBuffer: 16 * 1024 * 1024 },
          (error, stdout, stderr) => resume(Effect.succeed({ ok: error === null, output: `${stdout}${stderr}`.trim() }))
        )
      })

    const prepare = Effect.fn("DockerExecutor.prepare")(function*(spec: SandboxSpec) {
      if (!isSafeSegment(spec.run_id) || !isSafeSegment(spec.execution_id)) {
        return yield* new ExecutorError({ message: `run and execution ids must be plain names: ${spec.run_id}/${spec.execution_id}` })
      }
      const workdir = Path.join(root, spec.run_id, spec.execution_id)
      const image = spec.docker_image ?? config.image
      yield* Effect.promise(() => Fs.rm(workdir, { recursive: true, force: true }))
      yield* Effect.tryPromise({
        try: () => Fs.mkdir(Path.join(workdir, controlDir), { recursive: true }),
        catch: (cause) => new ExecutorError({ message: `cannot create the work directory ${workdir}: ${messageOf(cause)}`, cause })
      }).pipe(
        // The release of the run's previous execution may remove the run's directory while it is
        // still empty, between the steps of the recursive mkdir: once more then.
        Effect.retry({ times: 2 })
      )
      const created = yield* Effect.tryPromise({
        try: () =>
          docker.createContainer({
            Image: image,
            Cmd: initCommand,
            WorkingDir: containerWorkdir,
            Env: Object.entries(spec.env).map(([name, value]) => `${name}=${value}`),
            Labels: {
              [Labels.managed]: "true",
              [Labels.runId]: spec.run_id,
              [Labels.executionId]: spec.execution_id,
              [Labels.root]: root,
              [Labels.workdir]: workdir
            },
            HostConfig: {
              Binds: [
                `${workdir}:${containerWorkdir}`,
                ...(config.mounts ?? []).map((mount) =>
                  `${Path.resolve(mount.host)}:${mount.container}${mount.readOnly ? ":ro" : ""}`
                )
              ],
              NetworkMode: config.network ?? "none",
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
      const sandbox = makeSandbox({
        containerId: created.id,
        runId: spec.run_id,
        executionId: spec.execution_id,
        workdir,
        attachments,
        runningAgent: Option.none()
      })
      const setupFailed = (message: string) => new SetupFailed({ message, sandbox })

      const steps = Effect.gen(function*() {
        const marker: Marker = { run_id: spec.run_id, execution_id: spec.execution_id, attachments }
        yield* Effect.promise(() => Fs.writeFile(Path.join(workdir, controlDir, "sandbox.json"), JSON.stringify(marker)))
        yield* call("start the sandbox container", () => created.start())

        for (const { owner, repo } of spec.repos) {
          if (!isSafeSegment(owner) || !isSafeSegment(repo)) {
            return yield* setupFailed(`repository ${owner}/${repo} is not a valid repository name`)
          }
          const source = Path.join(reposDir, owner, repo)
          const exists = yield* Effect.promise(() => Fs.stat(source).then((stat) => stat.isDirectory(), () => false))
          if (!exists) return yield* setupFailed(`repository ${owner}/${repo} not found`)
          const cloned = yield* gitClone(source, Path.join(workdir, repo))
          if (!cloned.ok) return yield* setupFailed(`cloning repository ${owner}/${repo} failed: ${cloned.output}`)
        }

        const attachmentsDir = Path.join(workdir, "attachments")
        yield* Effect.promise(() => Fs.mkdir(attachmentsDir, { recursive: true }))
        for (const attachment of spec.attachments) {
          if (!isSafeFileName(attachment.name)) {
            return yield* setupFailed(`attachment name ${JSON.stringify(attachment.name)} is not a plain file name`)
          }
          yield* Effect.promise(() => Fs.writeFile(Path.join(attachmentsDir, attachment.name), attachment.bytes))
        }

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

    const readMarker = (workdir: string) =>
      Effect.promise(() =>
        Fs.readFile(Path.join(workdir, controlDir, "sandbox.json"), "utf8").then(
          (text) => JSON.parse(text) as Marker,
          () => undefined
        )
      )

    /** The agent exec still running in a leftover container, if any. */
    const runningAgentOf = (info: Docker.ContainerInspectInfo) =>
      Effect.gen(function*() {
        if (!info.State.Running) return Option.none()
        for (const id of info.ExecIDs ?? []) {
          const exec = docker.getExec(id)
          const inspected = yield* callOrGone("inspect an exec", () => exec.inspect())
          if (Option.isNone(inspected) || !inspected.value.Running) continue
          const args = inspected.value.ProcessConfig.arguments
          const tag = args[0] === "-c" && args[2] === agentMarker ? /\/([^/]+)\.pid /.exec(args[1] ?? "")?.[1] : undefined
          if (tag !== undefined) return Option.some({ exec, tag })
        }
        return Option.none()
      })

    const leftovers = Effect.gen(function*() {
      const containers = yield* call("list containers", () =>
        docker.listContainers({ all: true, filters: { label: [`${Labels.managed}=true`, `${Labels.root}=${root}`] } })
      )
      const sandboxes: Array<Sandbox> = []
      for (const summary of containers) {
        const info = yield* callOrGone("inspect a container", () => docker.getContainer(summary.Id).inspect())
        if (Option.isNone(info)) continue
        const labels = info.value.Config.Labels ?? {}
        const workdir = labels[Labels.workdir] ?? Path.join(root, labels[Labels.runId] ?? "", labels[Labels.executionId] ?? "")
        const marker = yield* readMarker(workdir)
        sandboxes.push(makeSandbox({
          containerId: summary.Id,
          runId: (labels[Labels.runId] ?? "") as RunId,
          executionId: (labels[Labels.executionId] ?? "") as ExecutionId,
          workdir,
          attachments: marker?.attachments ?? [],
          runningAgent: yield* runningAgentOf(info.value)
        }))
      }
      return sandboxes
    }).pipe(Effect.withSpan("DockerExecutor.leftovers"))

    return Executor.of({ prepare, leftovers })
  })

/** The executor as a layer. Reaching the engine is checked on use, not here. */
export const layer = (config: DockerExecutorConfig): Layer.Layer<Executor> => Layer.effect(Executor, make(config))
