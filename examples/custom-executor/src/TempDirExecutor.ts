/**
 * An executor of your own: the `Executor` port of `@agent-runs/core` (`ports/Executor.ts`, whose
 * header is the contract) in one file, done another way than `@agent-runs/executor-process`.
 *
 * - Each sandbox is a fresh `mkdtemp` directory `<root>/sandbox-XXXXXX` (the sandbox id). A marker
 *   `.sandbox.json` in it names the run, the execution and the attachments; `leftovers` lists the
 *   directories that have one, so a restarted service finds the sandboxes of its earlier life.
 * - Repositories are cloned with `git clone` from `<reposDir>/<team_uid>/<owner>/<repo>` into
 *   `<repo>/`; attachments are written into `attachments/<name>`; setup commands run one by one
 *   with `/bin/sh -c`, and the first that fails is a `SetupFailed` naming it, its exit code and the
 *   end of its output.
 * - Every process is spawned with `node:child_process` in a process group of its own
 *   (`detached`), so that stopping it (SIGTERM, then SIGKILL after the grace period) stops what it
 *   started too.
 *
 * Limits, on purpose (the process executor does better on each):
 * - No isolation: agents run as the service's user, see its files and the other sandboxes. Use it
 *   for agents you trust, or as the starting point of an executor that isolates (a VM, a remote
 *   machine, a container service).
 * - Without `reposDir`, a run that names repositories fails its setup (`SetupFailed`: "this
 *   executor has no repositories").
 * - Setup commands have no time limit of their own; what one leaves running in the background is
 *   killed when it exits (its process group).
 * - An agent's stderr is discarded.
 * - A sandbox found by `leftovers` starts processes without the run's `env` (it is not written to
 *   disk), and processes left running by an earlier life of the service are not stopped.
 * - The marker lives in the work directory: the agent can read (or remove) it.
 */
import { Executor } from "@agent-runs/core"
import type { Ids } from "@agent-runs/core"
import { Effect, Layer, Option, Stream } from "effect"
import type { Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from "node:fs/promises"
import { constants } from "node:os"
import { join } from "node:path"

export interface TempDirExecutorOptions {
  /** Where sandboxes are made (created when missing). */
  readonly root: string
  /** The teams' repositories, as `<reposDir>/<team_uid>/<owner>/<repo>`; none: runs cannot name repositories. */
  readonly reposDir?: string | undefined
  /** The environment every process starts from (`PATH` and `HOME` of the service, never all of its variables). */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** How long an agent has between SIGTERM and SIGKILL when its scope closes or its sandbox is released (2 s). */
  readonly terminateGraceMs?: number | undefined
}

const MARKER = ".sandbox.json"
/** How much of a failed setup command's output the error keeps (its end). */
const OUTPUT_TAIL = 2000
/** Owners, repository names and team ids become path segments. */
const SEGMENT = /^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,99}$/

interface Marker {
  readonly run_id: Ids.RunId
  readonly execution_id: Ids.ExecutionId
  readonly attachments: ReadonlyArray<Executor.SandboxAttachment>
}

/** A child process and its exit code, `128 + n` when a signal n killed it. */
interface Child {
  readonly process: ChildProcess
  readonly exited: Promise<number>
}

const failure = (message: string, cause?: unknown) => new Executor.ExecutorError({ message, cause })

const io = <A>(what: string, f: () => Promise<A>) =>
  Effect.tryPromise({ try: f, catch: (cause) => failure(`${what}: ${(cause as Error).message}`, cause) })

const exists = (path: string) => Effect.promise(() => stat(path).then(() => true, () => false))

const isSegment = (name: string) => SEGMENT.test(name) && name !== "." && name !== ".."

const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null) =>
  code ?? 128 + (signal === null ? 0 : constants.signals[signal])

/** Signals the process group of `child` (its pid); nothing when it is gone. */
const signal = (child: ChildProcess, name: NodeJS.Signals) => {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, name)
  } catch {
    // the group is gone
  }
}

/** Spawns `argv` in a process group of its own; fails when it cannot start (no such command). */
const spawnChild = (argv: ReadonlyArray<string>, cwd: string, env: Readonly<Record<string, string>>) =>
  Effect.async<Child, Executor.ExecutorError>((resume) => {
    if (argv[0] === undefined || argv[0] === "") return resume(Effect.fail(failure("cannot start an empty command")))
    const child = spawn(argv[0], argv.slice(1), { cwd, env, detached: true, stdio: ["pipe", "pipe", "ignore"] })
    const exited = new Promise<number>((resolve) => child.once("exit", (code, name) => resolve(exitCodeOf(code, name))))
    child.stdin!.on("error", () => undefined) // writing to an agent that has exited fails in `send`, not here
    // Without a 'readable' listener, Node discards what a child that has exited wrote and nobody read yet.
    child.stdout!.on("readable", () => undefined)
    child.once("spawn", () => resume(Effect.succeed({ process: child, exited })))
    child.once("error", (error) => resume(Effect.fail(failure(`could not start ${argv[0]}: ${error.message}`, error))))
  })

/** Whether the child exits within `ms` (real time). */
const exitsWithin = (child: Child, ms: number) =>
  Effect.promise(() =>
    Promise.race([child.exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(resolve, ms, false).unref())]))

/** SIGTERM, then SIGKILL once `graceMs` have passed; done when it has exited (and its group is gone). */
const terminate = (child: Child, graceMs: number) =>
  Effect.gen(function*() {
    if (child.process.exitCode === null && child.process.signalCode === null) {
      signal(child.process, "SIGTERM")
      if (!(yield* exitsWithin(child, graceMs))) signal(child.process, "SIGKILL")
    }
    yield* Effect.promise(() => child.exited)
    signal(child.process, "SIGKILL")
  })

/** Runs a command to its end with stdin closed: its exit code and the end of stdout and stderr together. */
const runToEnd = (argv: ReadonlyArray<string>, cwd: string, env: Readonly<Record<string, string>>) =>
  Effect.async<{ readonly code: number; readonly output: string }, Executor.ExecutorError>((resume) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    let code: number | undefined
    let done = false
    const keep = (chunk: Buffer) => (output = (output + chunk.toString("utf8")).slice(-OUTPUT_TAIL))
    child.stdout!.on("data", keep)
    child.stderr!.on("data", keep)
    const finish = () => {
      if (done || code === undefined) return
      done = true
      resume(Effect.succeed({ code, output: output.trim() }))
    }
    child.once("error", (error) => {
      done = true
      resume(Effect.fail(failure(`could not run ${argv[0]}: ${error.message}`, error)))
    })
    child.once("exit", (exitCode, name) => {
      code = exitCodeOf(exitCode, name)
      signal(child, "SIGKILL") // what it left running in the background
      setTimeout(finish, 500).unref() // in case something that left the group keeps the pipes open
    })
    child.once("close", finish)
    return Effect.sync(() => signal(child, "SIGKILL"))
  })

/** The agent process of the port over a child. */
const agentProcess = (child: Child): Executor.AgentProcess => ({
  stdout: Stream.fromAsyncIterable<Uint8Array, Executor.ExecutorError>(
    child.process.stdout!,
    (cause) => failure("could not read the agent's stdout", cause)
  ),
  send: (message) =>
    Effect.suspend(() => {
      const stdin = child.process.stdin!
      if (child.process.exitCode !== null || child.process.signalCode !== null || !stdin.writable) {
        return Effect.fail(failure("cannot send to the agent: it has exited"))
      }
      let json: string | undefined
      try {
        json = JSON.stringify(message)
      } catch (cause) {
        return Effect.fail(failure("cannot send to the agent: the message is not JSON", cause))
      }
      if (json === undefined) return Effect.fail(failure("cannot send to the agent: the message is not JSON"))
      return Effect.async<void, Executor.ExecutorError>((resume) => {
        stdin.write(`${json}\n`, (error) => resume(error ? Effect.fail(failure(`cannot send to the agent: ${error.message}`, error)) : Effect.void))
      })
    }),
  interrupt: Effect.sync(() => signal(child.process, "SIGINT")),
  terminate: (graceMs) => terminate(child, graceMs),
  exitCode: Effect.promise(() => child.exited)
})

/** The executor; its sandboxes live below `options.root`. */
export const make = (options: TempDirExecutorOptions) =>
  Effect.gen(function*() {
    // The real path: what agents see as their working directory starts with it.
    const root = yield* io(`could not create ${options.root}`, async () => {
      await mkdir(options.root, { recursive: true })
      return realpath(options.root)
    })
    const baseEnv: Readonly<Record<string, string>> = options.env ??
      Object.fromEntries(["PATH", "HOME"].flatMap((name) => (process.env[name] === undefined ? [] : [[name, process.env[name]]])))
    const graceMs = options.terminateGraceMs ?? 2_000
    /** The processes this executor started that still run, by work directory. */
    const running = new Map<string, Set<Child>>()

    const release = (workdir: string) =>
      Effect.gen(function*() {
        yield* Effect.forEach(running.get(workdir) ?? [], (child) => terminate(child, graceMs), { concurrency: "unbounded", discard: true })
        // The marker first: a directory half removed is no longer a leftover.
        yield* io(`could not remove ${workdir}`, async () => {
          await rm(join(workdir, MARKER), { force: true })
          await rm(workdir, { recursive: true, force: true })
        })
      }).pipe(Effect.catchAll((error) => Effect.logWarning("could not release the sandbox", error.message)))

    const sandboxAt = (workdir: string, marker: Marker, env: Readonly<Record<string, string>>): Executor.Sandbox => ({
      id: workdir,
      run_id: marker.run_id,
      execution_id: marker.execution_id,
      attachments: marker.attachments,
      start: (command, extra): Effect.Effect<Executor.AgentProcess, Executor.ExecutorError, Scope.Scope> =>
        Effect.gen(function*() {
          if (!(yield* exists(workdir))) return yield* failure(`the sandbox ${workdir} has been released`)
          const child = yield* Effect.acquireRelease(
            spawnChild(command, workdir, { ...baseEnv, ...env, ...extra }),
            (child) => terminate(child, graceMs)
          )
          const children = running.get(workdir) ?? new Set()
          running.set(workdir, children.add(child))
          void child.exited.then(() => {
            children.delete(child)
            if (children.size === 0 && running.get(workdir) === children) running.delete(workdir)
          })
          return agentProcess(child)
        }),
      release: release(workdir)
    })

    const prepare = (spec: Executor.SandboxSpec): Effect.Effect<Executor.Sandbox, Executor.SetupFailed | Executor.ExecutorError> =>
      Effect.gen(function*() {
        const names = new Set(spec.attachments.map((a) => a.name))
        const badName = spec.attachments.find((a) => !/^[^/\\\0]+$/.test(a.name) || a.name === "." || a.name === "..")
        if (badName !== undefined) return yield* failure(`attachment name ${JSON.stringify(badName.name)} is not a file name`)
        if (names.size !== spec.attachments.length) return yield* failure("two attachments have the same name")

        const workdir = yield* io("could not create the sandbox", () => mkdtemp(join(root, "sandbox-")))
        const attachmentsDir = join(workdir, "attachments")
        const marker: Marker = {
          run_id: spec.run_id,
          execution_id: spec.execution_id,
          attachments: spec.attachments.map(({ media_type, name }) => ({ name, media_type, path: join(attachmentsDir, name) }))
        }
        const sandbox = sandboxAt(workdir, marker, spec.env)
        const setupFailed = (message: string) => new Executor.SetupFailed({ message, sandbox })

        yield* Effect.gen(function*() {
          yield* io("could not write the sandbox marker", () => writeFile(join(workdir, MARKER), JSON.stringify(marker)))
          for (const { owner, repo } of spec.repos) {
            const name = `${owner}/${repo}`
            if (options.reposDir === undefined) return yield* setupFailed(`repository ${name}: this executor has no repositories`)
            if (![spec.team_uid, owner, repo].every(isSegment)) return yield* setupFailed(`repository ${name} is not a valid owner/repo`)
            const source = join(options.reposDir, spec.team_uid, owner, repo)
            if (!(yield* exists(source))) return yield* setupFailed(`repository ${name} not found`)
            // --no-hardlinks: a clone that shares the source's object files lets the agent rewrite them.
            const clone = yield* runToEnd(
              ["git", "-c", `safe.directory=${source}`, "clone", "--quiet", "--no-hardlinks", "--", source, repo],
              workdir,
              { ...baseEnv, GIT_TERMINAL_PROMPT: "0" }
            )
            if (clone.code !== 0) return yield* setupFailed(`could not clone repository ${name} (git exited with ${clone.code}): ${clone.output}`)
          }
          if (spec.attachments.length > 0) {
            yield* io("could not write the attachments", async () => {
              await mkdir(attachmentsDir)
              for (const attachment of spec.attachments) await writeFile(join(attachmentsDir, attachment.name), attachment.bytes)
            })
          }
          for (const [index, command] of spec.setup_commands.entries()) {
            const { code, output } = yield* runToEnd(["/bin/sh", "-c", command], workdir, { ...baseEnv, ...spec.env })
            if (code !== 0) {
              const what = `setup command ${index + 1} of ${spec.setup_commands.length} \`${command.slice(0, 200)}\``
              return yield* setupFailed(`${what} exited with ${code}${output === "" ? "" : `: ${output}`}`)
            }
          }
        }).pipe(
          // A failed setup keeps the sandbox (for a debug session); any other failure removes it.
          Effect.tapError((error) => (error._tag === "SetupFailed" ? Effect.void : sandbox.release)),
          Effect.onInterrupt(() => sandbox.release)
        )
        return sandbox
      })

    const leftovers = Effect.gen(function*() {
      const entries = yield* io(`could not list ${root}`, () => readdir(root))
      const found: Array<Executor.Sandbox> = []
      for (const entry of entries.filter((name) => name.startsWith("sandbox-"))) {
        const workdir = join(root, entry)
        const text = yield* Effect.promise(() => readFile(join(workdir, MARKER), "utf8").catch(() => undefined))
        if (text === undefined) continue
        const marker = yield* Effect.try(() => JSON.parse(text) as Marker).pipe(Effect.option)
        if (Option.isSome(marker)) found.push(sandboxAt(workdir, marker.value, {}))
        else yield* Effect.logWarning("ignoring an unreadable sandbox marker", join(workdir, MARKER))
      }
      return found
    })

    return Executor.Executor.of({ prepare, leftovers })
  })

/** The executor as the layer `mount({ executor })` takes. */
export const layer = (options: TempDirExecutorOptions): Layer.Layer<Executor.Executor, Executor.ExecutorError> =>
  Layer.effect(Executor.Executor, make(options))
