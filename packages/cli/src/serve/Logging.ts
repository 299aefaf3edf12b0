/**
 * The server's log format (`AGENT_RUNS_LOG_FORMAT`): `pretty`, the runtime's readable lines, or
 * `json`, one JSON object per line (`message`, `logLevel`, `timestamp`, `cause`, and the
 * structured fields such as `run_id` under `annotations`), for log collectors; and its level
 * (`AGENT_RUNS_LOG_LEVEL`, `info`): the least severe level logged. Lines are written in batches
 * (BufferedOutput.ts).
 */
import { Effect, FiberRef, HashSet, Layer, Logger, LogLevel } from "effect"
import { BatchedConsoleLive } from "./BufferedOutput.js"
import type { ServerConfig } from "./Config.js"

/** One JSON object per line on stdout. */
const jsonLines = Logger.withConsoleLog(Logger.jsonLogger)

const levels = { debug: LogLevel.Debug, info: LogLevel.Info, warning: LogLevel.Warning, error: LogLevel.Error }

const formatLayer = (config: ServerConfig) =>
  config.logFormat === "json"
    ? Layer.scopedDiscard(
      // `NodeRuntime.runMain` installs the pretty logger in place of the default one: either goes.
      Effect.locallyScopedWith(FiberRef.currentLoggers, (loggers) =>
        loggers.pipe(HashSet.remove(Logger.defaultLogger), HashSet.remove(Logger.prettyLoggerDefault), HashSet.add(jsonLines)))
    )
    : Layer.empty

/** The logger layer for the configured format (nothing to change for `pretty`) and level, written in batches. */
export const LoggingLive = (config: ServerConfig) =>
  Layer.mergeAll(formatLayer(config), Logger.minimumLogLevel(levels[config.logLevel ?? "info"]), BatchedConsoleLive)
