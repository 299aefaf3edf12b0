/**
 * The built server as a child process, for black-box tests and the HTTP benchmark:
 * `node examples/server/dist/main.js` on a free loopback port with the given data directory and
 * environment, waited for until `GET /readyz` answers 200, stopped (SIGTERM, then SIGKILL after a
 * grace period) when its scope closes, and killed if this process exits first; `call` sends it
 * JSON requests. No vitest and no server sources here (only the built `dist` runs), so the
 * benchmark can use it too.
 */
import { Data, Duration, Effect, Schedule } from "effect"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { freePort } from "./support.js"

export { call, type Reply, tempDataDir } from "./support.js"

/** The repository root. */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))

/** The built entry point of the bundled server. */
export const MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url))

/** The outcome of building every package (`npx tsc -b tsconfig.json` at the root). */
export interface BuildResult {
  readonly ok: boolean
  readonly output: string
}

/** Builds every package and the server, so `dist` matches the sources. */
export const buildServer = (): BuildResult => {
  const result = spawnSync("npx", ["tsc", "-b", "tsconfig.json"], { cwd: REPO_ROOT, encoding: "utf8" })
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}${result.error ? String(result.error) : ""}`
  return { ok: result.status === 0, output }
}

/** Throws with the compiler's output unless the build succeeded (a stale dist would be tested otherwise). */
export const assertBuilt = (build: BuildResult): void => {
  if (!build.ok) throw new Error(`npx tsc -b tsconfig.json failed, so dist is stale:\n${build.output}`)
}

/** The server process exited or did not become ready in time (the message includes its output). */
export class ServerProcessError extends Data.TaggedError("ServerProcessError")<{
  readonly message: string
}> {}

/** A condition not met yet: retried until it is, or until the time is up. */
class NotYet extends Data.TaggedError("NotYet")<{ readonly reason: string }> {}

export interface ServerProcessOptions {
  /** `AGENT_RUNS_DATA_DIR`. */
  readonly dataDir: string
  /** More environment variables (`AGENT_RUNS_DATABASE_URL`, `AGENT_RUNS_ADMIN_TOKEN`, ...). */
  readonly env?: Readonly<Record<string, string>>
  /** How long to wait for `/readyz` (default 30 s). */
  readonly readyTimeout?: Duration.DurationInput
}

/** How a process ended. */
export interface Exited {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** A running server process. */
export interface ServerProcess {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly port: number
  readonly dataDir: string
  readonly pid: number
  /** Everything it printed on stdout so far. */
  readonly stdout: () => string
  /** Everything it printed on stderr so far. */
  readonly stderr: () => string
  /** Waits until stdout matches `pattern` (fails after `timeout`, default 10 s, or if the process exits). */
  readonly waitForOutput: (pattern: RegExp, timeout?: Duration.DurationInput) => Effect.Effect<string, ServerProcessError>
  /** Stops it: SIGTERM, then SIGKILL after 10 s; idempotent. */
  readonly stop: Effect.Effect<Exited>
}

/** Variables of this process that must not leak into the server's configuration. */
const isInherited = (name: string) =>
  !name.startsWith("AGENT_RUNS_") && name !== "PORT" && name !== "HOST" && name !== "NODE_OPTIONS"

const GRACE = Duration.seconds(10)

const startProcess = (options: ServerProcessOptions) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const url = `http://127.0.0.1:${port}`
    const env: Record<string, string> = {}
    for (const [name, value] of Object.entries(process.env)) {
      if (value !== undefined && isInherited(name)) env[name] = value
    }
    // Stopped, a test server hands its runs over at once unless a test asks for a drain.
    Object.assign(env, { PORT: String(port), HOST: "127.0.0.1", AGENT_RUNS_DATA_DIR: options.dataDir, AGENT_RUNS_DRAIN_SECONDS: "0" }, options.env)
    const child: ChildProcess = spawn(process.execPath, [MAIN], { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (out += chunk))
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (err += chunk))
    let spawnError: Error | undefined
    const exited = new Promise<Exited>((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal }))
      child.once("error", (error) => {
        spawnError = error
        resolve({ code: null, signal: null })
      })
    })
    // Never outlive the process that started it (a crashed test run, an interrupted benchmark).
    const killOnExit = () => child.kill("SIGKILL")
    process.once("exit", killOnExit)
    const hasExited = () => spawnError !== undefined || child.exitCode !== null || child.signalCode !== null
    const describe = () => `${spawnError === undefined ? "" : `${spawnError}\n`}stdout:\n${out}\nstderr:\n${err}`

    const stop = Effect.promise(async () => {
      if (!hasExited()) {
        child.kill("SIGTERM")
        const timer = setTimeout(() => child.kill("SIGKILL"), Duration.toMillis(GRACE))
        await exited
        clearTimeout(timer)
      }
      process.removeListener("exit", killOnExit)
      return await exited
    })

    /** Tries `attempt` every 50 ms until it succeeds; fails at once if the process exits. */
    const poll = <A>(
      what: string,
      timeout: Duration.DurationInput,
      attempt: Effect.Effect<A, NotYet>
    ): Effect.Effect<A, ServerProcessError> => {
      let reason = ""
      return Effect.suspend((): Effect.Effect<A, NotYet | ServerProcessError> =>
        hasExited()
          ? Effect.fail(
            new ServerProcessError({
              message: `the server exited (${child.exitCode ?? child.signalCode}) before ${what}\n${describe()}`
            })
          )
          : attempt
      ).pipe(
        Effect.tapErrorTag("NotYet", (e) => Effect.sync(() => (reason = e.reason))),
        Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), while: (e) => e._tag === "NotYet" }),
        Effect.timeoutFail({ duration: timeout, onTimeout: () => new NotYet({ reason: "timeout" }) }),
        Effect.catchTag("NotYet", () =>
          Effect.fail(
            new ServerProcessError({ message: `timed out waiting for ${what} (last: ${reason})\n${describe()}` })
          ))
      )
    }

    const ready = Effect.tryPromise({
      try: async () => {
        const response = await fetch(`${url}/readyz`)
        await response.arrayBuffer()
        if (response.status !== 200) throw new Error(`readyz answered ${response.status}`)
      },
      catch: (cause) => new NotYet({ reason: String(cause) })
    })

    const waitForOutput = (pattern: RegExp, timeout: Duration.DurationInput = Duration.seconds(10)) => {
      const once = new RegExp(pattern.source, pattern.flags.replace("g", "")) // no lastIndex state
      return poll(
        `output matching ${pattern}`,
        timeout,
        Effect.suspend(() => {
          const match = once.exec(out)
          return match === null ? Effect.fail(new NotYet({ reason: "no match yet" })) : Effect.succeed(match[0])
        })
      )
    }

    const server: ServerProcess = {
      url,
      port,
      dataDir: options.dataDir,
      pid: child.pid ?? -1,
      stdout: () => out,
      stderr: () => err,
      waitForOutput,
      stop
    }
    return { server, ready: poll("GET /readyz to answer 200", options.readyTimeout ?? Duration.seconds(30), ready) }
  })

/** Starts the built server for the scope and waits until it is ready; the scope's end stops it. */
export const spawnServer = (options: ServerProcessOptions) =>
  Effect.gen(function*() {
    const { ready, server } = yield* Effect.acquireRelease(startProcess(options), ({ server }) => server.stop)
    yield* ready
    return server
  })
