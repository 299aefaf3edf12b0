/**
 * How long a run's agent may run (`config.max_runtime_seconds`; docs/execution.md): asked by the
 * run (or its schedule or automation, whose `agent_config` it gets), else its environment's
 * default, and never more than the server's ceiling (`AGENT_RUNS_MAX_RUNTIME_SECONDS`). An
 * execution whose agent runs past it is stopped and the run ends FAILED `max_runtime_exceeded`.
 *
 * Decisions:
 * - It counts the agent's time in each execution, from its start (the run INPROGRESS) to its end:
 *   the setup has its own limit, and a debug window after a failed setup is not the agent's time.
 *   A follow-up that continues an ended run starts a new execution with the whole limit again.
 * - A live follow-up does not extend it: the execution's time goes on.
 * - A value over the ceiling is not refused (a schedule made before the ceiling was lowered must go
 *   on starting runs): the ceiling applies.
 */
import { Schema } from "effect"

/** The largest value a configuration may ask: seven days. */
export const MAX_RUNTIME_SECONDS_LIMIT = 7 * 24 * 60 * 60

/** The server's ceiling when none is set: one day. */
export const DEFAULT_MAX_RUNTIME_SECONDS = 24 * 60 * 60

/** `max_runtime_seconds`: a whole number of seconds, 1 to seven days. */
export const MaxRuntimeSeconds = Schema.Int.pipe(Schema.between(1, MAX_RUNTIME_SECONDS_LIMIT)).annotations({
  identifier: "MaxRuntimeSeconds",
  description: "how long the run's agent may run in each execution, in seconds (1 to 604800); the server's ceiling applies"
})

/**
 * The limit of an execution, in milliseconds: what the run (or its environment) asks, within the
 * ceiling, and never more than seven days (a timer of more than about 24.8 days would never fire).
 */
export const effectiveMaxRuntimeMs = (asked: number | null, ceilingSeconds: number): number =>
  Math.max(1, Math.min(asked ?? ceilingSeconds, ceilingSeconds, MAX_RUNTIME_SECONDS_LIMIT)) * 1000

/** A ceiling as the worker protocol carries it: a whole number of seconds, 1 to seven days. */
export const wireCeiling = (ceilingSeconds: number): number =>
  Math.max(1, Math.min(Math.round(ceilingSeconds), MAX_RUNTIME_SECONDS_LIMIT))

/** The run's status message when its agent ran past its limit. */
export const maxRuntimeMessage = (limitMs: number): string =>
  `the agent ran past the run's maximum runtime of ${Math.round(limitMs / 1000)} s (config.max_runtime_seconds) and was stopped`
