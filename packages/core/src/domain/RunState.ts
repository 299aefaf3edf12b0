/**
 * The enumerations of a run: its state, where it came from, where it executes, and the kinds of
 * artifact it may produce (docs/reference/run-lifecycle.md, docs/reference/api.md).
 */
import { Schema } from "effect"

export const RunState = Schema.Literal(
  "QUEUED",
  "PENDING",
  "CLAIMED",
  "INPROGRESS",
  "SUCCEEDED",
  "FAILED",
  "BLOCKED",
  "ERROR",
  "CANCELLED"
)
export type RunState = typeof RunState.Type

/** The ended states: nothing moves a run out of them except a follow-up continuation. */
export const TerminalRunStates: ReadonlyArray<RunState> = ["SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"]

export const isTerminal = (state: RunState): boolean => TerminalRunStates.includes(state)

export const RunSourceType = Schema.Literal(
  "API",
  "CLI",
  "WEB_APP",
  "SCHEDULED_AGENT",
  "WEBHOOK",
  "LOCAL",
  "GITHUB_ACTION",
  "SLACK",
  "LINEAR",
  "CLOUD_MODE"
)
export type RunSourceType = typeof RunSourceType.Type

export const RunExecutionLocation = Schema.Literal("REMOTE", "LOCAL")
export type RunExecutionLocation = typeof RunExecutionLocation.Type

export const ArtifactType = Schema.Literal("PLAN", "PULL_REQUEST", "SCREENSHOT", "FILE", "EXTERNAL_REFERENCE")
export type ArtifactType = typeof ArtifactType.Type

/** The maximum number of claims of one execution before the run ends ERROR. */
export const MAX_ATTEMPTS = 3

/**
 * How many times a run is handed over at the same attempt (RunStateMachine.ts, `HandOver`); the
 * next hand-over costs an attempt, as a lost lease does, so that a run whose host is stopped again
 * and again (evictions, a worker that hands everything back) cannot go round for ever.
 */
export const MAX_FREE_HANDOVERS = 3
