/**
 * What a failed start says (Startup.ts): `serve` run in this process with the settings of each
 * case, to its end. A bad setting, the port in use, PostgreSQL unreachable or silent past the
 * connect timeout, a SQLite file that cannot be opened, a data directory that cannot be created
 * (`/proc/nope`, where Node's recursive mkdir would never return; a file in the way) or written
 * (`/proc/self`, which no user may write), a blob directory that cannot be created: each prints
 * exactly one line on stderr, naming the problem and what to do, with no stack trace, and fails
 * with `Reported` (exit 1); `AGENT_RUNS_LOG_LEVEL=debug` adds the trace. The built server's exit
 * code, its whole stderr and SIGTERM while starting are tested black-box in
 * examples/server/test/startup.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, ConfigProvider, Console, Duration, Effect, Exit, Option } from "effect"
import { Console as NodeConsole } from "node:console"
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Writable } from "node:stream"
import { Reported } from "../src/Failure.js"
import { serve } from "../src/serve/Startup.js"

/** What a start printed, and how it ended. */
interface Started {
  readonly exit: Exit.Exit<void, Reported>
  readonly stdout: string
  readonly stderr: string
}

/** A stream that appends what is written to it to `sink[key]`. */
const into = (sink: { stdout: string; stderr: string }, key: "stdout" | "stderr") =>
  new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      sink[key] += chunk.toString()
      callback()
    }
  })

/**
 * While `effect` runs (and one more turn of the event loop, for log lines written in batches),
 * what is written to this process's stdout and stderr, and to the Effect console, goes to `sink`.
 */
const capturing = <A, E>(sink: { stdout: string; stderr: string }, effect: Effect.Effect<A, E>) => {
  const console = new NodeConsole({ stdout: into(sink, "stdout"), stderr: into(sink, "stderr") })
  const streams = [["stdout", process.stdout], ["stderr", process.stderr]] as const
  return Effect.acquireUseRelease(
    Effect.sync(() =>
      streams.map(([key, stream]) => {
        const write = stream.write
        stream.write = ((chunk: Buffer | string, ...rest: Array<unknown>) => {
          sink[key] += chunk.toString()
          const callback = rest.find((arg) => typeof arg === "function") as (() => void) | undefined
          callback?.()
          return true
        }) as typeof stream.write
        return () => (stream.write = write)
      })
    ),
    () =>
      Console.consoleWith((current) =>
        effect.pipe(
          Console.withConsole({
            ...current,
            log: (...args) => Effect.sync(() => console.log(...args)),
            error: (...args) => Effect.sync(() => console.error(...args)),
            unsafe: console
          } as Console.Console)
        )
      ),
    (restores) =>
      Effect.promise(() => new Promise((resolve) => setImmediate(resolve))).pipe(
        Effect.zipRight(Effect.sync(() => restores.forEach((restore) => restore())))
      )
  )
}

/**
 * Runs `serve` with these settings (and `HOST=127.0.0.1`; nothing from the environment) to its
 * end. A start that does not fail is stopped after 30 s, so that the test fails instead of hanging.
 */
const startUp = (env: Readonly<Record<string, string>>): Effect.Effect<Started> =>
  Effect.gen(function*() {
    const sink = { stdout: "", stderr: "" }
    const settings = ConfigProvider.fromMap(new Map(Object.entries({ HOST: "127.0.0.1", ...env })))
    const exit = yield* capturing(
      sink,
      serve.pipe(
        Effect.withConfigProvider(settings),
        Effect.timeoutFail({ duration: Duration.seconds(30), onTimeout: () => new Reported({ exitCode: -1 }) }),
        Effect.exit
      )
    )
    return { exit, ...sink }
  })

/** Failed with `Reported` (exit 1) after exactly one line on stderr, without a stack trace; the line. */
const oneLineFailure = (started: Started): string => {
  const shown = `stdout:\n${started.stdout}\nstderr:\n${started.stderr}`
  expect(Exit.isFailure(started.exit) ? Cause.failureOption(started.exit.cause) : Option.none(), shown).toEqual(
    Option.some(new Reported({ exitCode: 1 }))
  )
  const lines = started.stderr.split("\n").filter((line) => line !== "")
  expect(lines, shown).toHaveLength(1)
  expect(started.stderr).not.toMatch(/^\s+at /m)
  expect(lines[0]).toMatch(/^agent-runs: could not start: /)
  return lines[0]!
}

/** A scoped directory for data directories, searchable (as root, sandboxes run as users of their own below it). */
const scratch = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "agent-runs-startup-"))
    chmodSync(dir, 0o755)
    return dir
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const dataDir = Effect.map(scratch, (dir) => mkdtempSync(join(dir, "data-")))

/** A loopback TCP server for the scope: `silent` accepts connections and never answers (a PostgreSQL that hangs). */
const listening = (options: { readonly silent?: boolean } = {}) =>
  Effect.acquireRelease(
    Effect.async<{ readonly server: Server; readonly sockets: Set<Socket> }>((resume) => {
      const sockets = new Set<Socket>()
      const server = createServer((socket) => {
        sockets.add(socket)
        if (options.silent !== true) socket.end()
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, sockets })))
    }),
    ({ server, sockets }) =>
      Effect.async<void>((resume) => {
        sockets.forEach((socket) => socket.destroy())
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ server }) => ({ port: (server.address() as { readonly port: number }).port })))

/** A port nothing listens on. */
const closedPort = Effect.scoped(Effect.map(listening(), ({ port }) => port))

describe("a failed start of the bundled server", () => {
  it.scopedLive("a bad setting: one line naming the variable and what is wrong", () =>
    Effect.gen(function*() {
      const started = yield* startUp({ AGENT_RUNS_DATA_DIR: yield* dataDir, PORT: String(yield* closedPort), AGENT_RUNS_CONCURRENCY: "-1" })
      expect(oneLineFailure(started)).toContain("AGENT_RUNS_CONCURRENCY: must be 0 or more: correct the setting or unset it")
    }))

  it.scopedLive("an OpenTelemetry endpoint that is not an http(s) URL: one line naming the variable", () =>
    Effect.gen(function*() {
      const started = yield* startUp({
        AGENT_RUNS_DATA_DIR: yield* dataDir,
        PORT: String(yield* closedPort),
        OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://collector.example"
      })
      expect(oneLineFailure(started)).toContain("OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL")
    }))

  it.scopedLive("the Kubernetes executor without a kubeconfig it can read: one line saying what to set", () =>
    Effect.gen(function*() {
      const previous = process.env["KUBECONFIG"]
      yield* Effect.acquireRelease(
        Effect.sync(() => (process.env["KUBECONFIG"] = "/nonexistent/kubeconfig")),
        () => Effect.sync(() => previous === undefined ? delete process.env["KUBECONFIG"] : (process.env["KUBECONFIG"] = previous))
      )
      const started = yield* startUp({ AGENT_RUNS_DATA_DIR: yield* dataDir, PORT: String(yield* closedPort), AGENT_RUNS_EXECUTOR: "kubernetes" })
      const line = oneLineFailure(started)
      expect(line).toContain("cannot load the Kubernetes configuration")
      expect(line).toContain("/nonexistent/kubeconfig")
      expect(line).toContain("set KUBECONFIG")
    }))

  it.scopedLive("the port in use: one line naming the port and PORT", () =>
    Effect.gen(function*() {
      const { port } = yield* listening()
      const started = yield* startUp({ AGENT_RUNS_DATA_DIR: yield* dataDir, PORT: String(port) })
      expect(oneLineFailure(started)).toBe(
        `agent-runs: could not start: port ${port} on 127.0.0.1 is already in use: stop what uses it, or set PORT to a free port`
      )
    }))

  it.scopedLive("PostgreSQL unreachable: one line naming where it was sought, without the password", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      const started = yield* startUp({
        AGENT_RUNS_DATA_DIR: yield* dataDir,
        PORT: String(yield* closedPort),
        AGENT_RUNS_DATABASE_URL: `postgres://postgres:hunter2@127.0.0.1:${port}/agent_runs`
      })
      const line = oneLineFailure(started)
      expect(line).toContain(`cannot connect to PostgreSQL at 127.0.0.1:${port}/agent_runs: connect ECONNREFUSED`)
      expect(line).toContain("check AGENT_RUNS_DATABASE_URL")
      expect(started.stdout + started.stderr).not.toContain("hunter2")
    }))

  it.scopedLive("a PostgreSQL that accepts connections but never answers: one line once AGENT_RUNS_DATABASE_CONNECT_TIMEOUT_SECONDS passes", () =>
    Effect.gen(function*() {
      const silent = yield* listening({ silent: true })
      const started = yield* startUp({
        AGENT_RUNS_DATA_DIR: yield* dataDir,
        PORT: String(yield* closedPort),
        AGENT_RUNS_DATABASE_URL: `postgres://postgres@127.0.0.1:${silent.port}/agent_runs`,
        AGENT_RUNS_DATABASE_CONNECT_TIMEOUT_SECONDS: "0.5"
      })
      const line = oneLineFailure(started)
      expect(line, line).toMatch(
        new RegExp(`^agent-runs: could not start: cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${silent.port}/agent_runs: no answer within 500ms: check AGENT_RUNS_DATABASE_URL`)
      )
    }))

  it.scopedLive("AGENT_RUNS_DATA_DIR=/proc/nope: one line (Node's recursive mkdir would never return there)", () =>
    Effect.gen(function*() {
      const started = yield* startUp({ AGENT_RUNS_DATA_DIR: "/proc/nope", PORT: String(yield* closedPort) })
      expect(oneLineFailure(started)).toBe(
        "agent-runs: could not start: AGENT_RUNS_DATA_DIR: cannot create /proc/nope (ENOENT: no such file or directory, " +
          "mkdir '/proc/nope'): set AGENT_RUNS_DATA_DIR to a directory this user can create and write"
      )
    }))

  it.scopedLive("a data directory with a file in the way, and a blob directory under /proc: one line each", () =>
    Effect.gen(function*() {
      const file = join(yield* scratch, "a-file")
      writeFileSync(file, "")
      const blocked = yield* startUp({ AGENT_RUNS_DATA_DIR: join(file, "data"), PORT: String(yield* closedPort) })
      expect(oneLineFailure(blocked)).toContain(`AGENT_RUNS_DATA_DIR: cannot create ${join(file, "data")} (ENOTDIR`)
      const blobs = yield* startUp({
        AGENT_RUNS_DATA_DIR: yield* dataDir,
        AGENT_RUNS_BLOB_DIR: "/proc/nope/blobs",
        PORT: String(yield* closedPort)
      })
      expect(oneLineFailure(blobs)).toContain("AGENT_RUNS_BLOB_DIR: cannot create /proc/nope/blobs")
    }))

  it.scopedLive("a SQLite database file that cannot be opened, or whose directory cannot be created: one line each", () =>
    Effect.gen(function*() {
      const advice = "set AGENT_RUNS_DATABASE_URL (or AGENT_RUNS_DATA_DIR) to a path this user can create and write"
      const unopenable = yield* startUp({
        AGENT_RUNS_DATA_DIR: yield* dataDir,
        PORT: String(yield* closedPort),
        AGENT_RUNS_DATABASE_URL: "sqlite:/proc/agent-runs.db"
      })
      expect(oneLineFailure(unopenable)).toBe(
        `agent-runs: could not start: cannot open the SQLite database /proc/agent-runs.db: unable to open database file: ${advice}`
      )
      const uncreatable = yield* startUp({
        AGENT_RUNS_DATA_DIR: yield* dataDir,
        PORT: String(yield* closedPort),
        AGENT_RUNS_DATABASE_URL: "sqlite:/proc/nope/agent-runs.db"
      })
      expect(oneLineFailure(uncreatable)).toMatch(
        /cannot open the SQLite database \/proc\/nope\/agent-runs\.db: .*ENOENT.*: set AGENT_RUNS_DATABASE_URL/
      )
    }))

  it.scopedLive("a data directory that exists but this user cannot write (/proc/self, root included): one line", () =>
    Effect.gen(function*() {
      const started = yield* startUp({ AGENT_RUNS_DATA_DIR: "/proc/self", PORT: String(yield* closedPort) })
      expect(oneLineFailure(started)).toBe(
        "agent-runs: could not start: AGENT_RUNS_DATA_DIR: /proc/self is not writable by this user: set AGENT_RUNS_DATA_DIR " +
          "to a directory this user can create and write"
      )
    }))

  it.scopedLive("AGENT_RUNS_LOG_LEVEL=debug adds the cause with its stack trace after the line", () =>
    Effect.gen(function*() {
      const started = yield* startUp({ AGENT_RUNS_DATA_DIR: "/proc/nope", PORT: String(yield* closedPort), AGENT_RUNS_LOG_LEVEL: "debug" })
      expect(Exit.isFailure(started.exit)).toBe(true)
      const lines = started.stderr.split("\n")
      expect(lines[0]).toMatch(/^agent-runs: could not start: AGENT_RUNS_DATA_DIR: cannot create \/proc\/nope/)
      expect(lines.slice(1).join("\n")).toMatch(/DirectoryUnusable[\s\S]*\n\s+at /)
    }))
})
