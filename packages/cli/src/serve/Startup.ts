/**
 * How the bundled server (`agent-runs serve`, `npm start`) starts, and how it says it cannot: a
 * start-up failure (a bad setting, the port in use, PostgreSQL unreachable, a data directory it
 * cannot create or write) prints ONE line on stderr, `agent-runs: could not start: <what is
 * wrong>: <what to do>`, and the process exits 1; the cause with its stack trace follows only with
 * `AGENT_RUNS_LOG_LEVEL=debug`. SIGINT/SIGTERM stop it at any time: while it is still starting,
 * work that cannot be interrupted (a connection attempt to a database that does not answer) is not
 * waited for longer than `STOP_WHILE_STARTING_MS`.
 */
import { HttpServerError } from "@effect/platform"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, ConfigError, Console, Effect, Layer, Option, Redacted } from "effect"
import { Reported } from "../Failure.js"
import { LogLevelConfig, ServerConfig } from "./Config.js"
import { LoggingLive } from "./Logging.js"
import { ServerLive } from "./Server.js"
import { TelemetryLive } from "./Telemetry.js"
import { TelemetryConfig } from "./TelemetryConfig.js"

/** How long a stop requested while starting may take before the process exits anyway. */
export const STOP_WHILE_STARTING_MS = 3000

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, " ").trim()

/** The innermost message of an error's `cause` chain ("PgClient: Failed to connect" → "connect ECONNREFUSED …"). */
const rootMessage = (error: unknown): string => {
  let message = String(error)
  for (let current = error, depth = 0; current instanceof Error && depth < 10; current = current.cause, depth++) {
    if (current.message !== "") message = current.message
  }
  return message
}

/** The first `code` (`EADDRINUSE`, `ECONNREFUSED`, …) on an error's `cause` chain. */
const codeOf = (error: unknown): string | undefined => {
  for (let current = error, depth = 0; typeof current === "object" && current !== null && depth < 10; depth++) {
    const code = (current as { readonly code?: unknown }).code
    if (typeof code === "string") return code
    current = (current as { readonly cause?: unknown }).cause
  }
  return undefined
}

/** The leaves of a configuration error: `NAME: problem`. */
const configProblems = (error: ConfigError.ConfigError): Array<string> => {
  switch (error._op) {
    case "And":
    case "Or":
      return [...configProblems(error.left), ...configProblems(error.right)]
    case "MissingData":
    case "InvalidData":
    case "SourceUnavailable":
    case "Unsupported":
      return [`${error.path.length > 0 ? `${error.path.join("_")}: ` : ""}${error.message}`]
  }
}

/** Where a `postgres://` URL points, without its password. */
const postgresTarget = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.hostname}:${parsed.port === "" ? "5432" : parsed.port}${parsed.pathname === "/" ? "" : parsed.pathname}`
  } catch {
    return "AGENT_RUNS_DATABASE_URL"
  }
}

/** A SQLite database that cannot be opened, and what to change. */
const sqliteLine = (filename: string, reason: string) =>
  `cannot open the SQLite database ${filename}: ${oneLine(reason)}: set AGENT_RUNS_DATABASE_URL (or AGENT_RUNS_DATA_DIR) to a path this user can create and write`

/** What a failure at start-up says: what is wrong, then what to do. */
export const describeFailure = (error: unknown, config: ServerConfig | undefined): string => {
  if (ConfigError.isConfigError(error)) {
    const problems = configProblems(error)
    return `${problems.join("; ")}: correct the setting or unset it (docs/reference/configuration.md)`
  }
  if (error instanceof HttpServerError.ServeError) {
    const where = config === undefined ? "the address" : `${config.host}:${config.port}`
    switch (codeOf(error.cause)) {
      case "EADDRINUSE":
        return `port ${config?.port} on ${config?.host} is already in use: stop what uses it, or set PORT to a free port`
      case "EACCES":
        return `not allowed to listen on ${where}: set PORT to a port above 1023`
      case "EADDRNOTAVAIL":
        return `HOST ${config?.host} is not an address of this machine: set HOST to one of its addresses (127.0.0.1, or 0.0.0.0 for all)`
      default:
        return `cannot listen on ${where}: ${rootMessage(error.cause)}: check PORT and HOST`
    }
  }
  if (error instanceof SqlError && config !== undefined) {
    const reason = rootMessage(error.cause ?? error)
    if (config.database._tag === "Postgres") {
      const target = postgresTarget(Redacted.value(config.database.url))
      return /connect|timed out/i.test(error.message)
        ? `cannot connect to PostgreSQL at ${target}: ${reason}: check AGENT_RUNS_DATABASE_URL and that PostgreSQL is running and accepts connections from here`
        : `PostgreSQL at ${target} failed at start: ${reason}: check that the database exists and AGENT_RUNS_DATABASE_URL's user may create tables in it`
    }
    return sqliteLine(config.database.filename, reason)
  }
  if (config?.database._tag === "Sqlite" && (codeOf(error)?.startsWith("SQLITE_") === true || /^cannot create the directory of /.test(rootMessage(error)))) {
    return sqliteLine(config.database.filename, rootMessage(error))
  }
  return oneLine(rootMessage(error)).replace(/^Agent Runs could not start: /, "")
}

/** The one line a failed start prints (without `agent-runs: `), from the failure or the defect of `cause`. */
const lineOf = (cause: Cause.Cause<unknown>, config: ServerConfig | undefined): string =>
  Option.match(Cause.failureOption(cause), {
    onSome: (error) => oneLine(describeFailure(error, config)),
    onNone: () =>
      Option.match(Cause.dieOption(cause), {
        // The SQLite driver throws when it cannot open the file: a defect, said like a failure.
        onSome: (defect) =>
          codeOf(defect)?.startsWith("SQLITE_") === true
            ? oneLine(describeFailure(defect, config))
            : `unexpected failure: ${oneLine(rootMessage(defect))} (AGENT_RUNS_LOG_LEVEL=debug shows where)`,
        onNone: () => oneLine(Cause.pretty(cause))
      })
  })

/**
 * Arms a watchdog on SIGINT/SIGTERM for as long as `starting()` says so: the runtime interrupts
 * start-up, and if that has not ended the process `STOP_WHILE_STARTING_MS` later (some work, such
 * as a database client's first connection, cannot be interrupted), the process exits anyway.
 */
const stopWhileStarting = (starting: () => boolean) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const onSignal = () => {
        if (!starting()) return
        setTimeout(() => process.exit(0), STOP_WHILE_STARTING_MS).unref()
      }
      process.once("SIGINT", onSignal)
      process.once("SIGTERM", onSignal)
      return onSignal
    }),
    (onSignal) =>
      Effect.sync(() => {
        process.removeListener("SIGINT", onSignal)
        process.removeListener("SIGTERM", onSignal)
      })
  )

/**
 * The bundled server with the configuration of the environment, until interrupted. A failure has
 * printed its line (and, at log level `debug`, its cause) when this fails with `Reported` (exit 1).
 */
export const serve: Effect.Effect<void, Reported> = Effect.gen(function*() {
  // Read alone first, so that a bad other setting still shows its trace at `debug`.
  const debug = (yield* Effect.orElseSucceed(LogLevelConfig, () => "info" as const)) === "debug"
  let config: ServerConfig | undefined
  let started = false
  return yield* Effect.gen(function*() {
    config = yield* ServerConfig
    const telemetry = yield* TelemetryConfig
    yield* stopWhileStarting(() => !started)
    const layer = ServerLive(config, { onStarted: Effect.sync(() => (started = true)) })
    return yield* Layer.launch(layer).pipe(Effect.provide(Layer.merge(LoggingLive(config), TelemetryLive(telemetry))))
  }).pipe(
    Effect.scoped,
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.gen(function*() {
          yield* Console.error(`agent-runs: ${started ? "stopped" : "could not start"}: ${lineOf(cause, config)}`)
          if (debug) yield* Console.error(Cause.pretty(cause, { renderErrorCause: true }))
          return yield* new Reported({ exitCode: 1 })
        })
    )
  )
})
