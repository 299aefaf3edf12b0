/**
 * What an execution reports about its run: the executor's events of the run state machine
 * (`RunStateMachine.RunEvent`) without the execution id, which the host adds. The same values
 * travel from a self-hosted worker to the server (`POST /workers/{id}/runs/{runId}/events`), which
 * applies them through the same code as its own executions (RunExecutions.ts), and what the agent
 * reported meanwhile (session, usage, status) as a `Report`.
 */
import { Schema } from "effect"
import { RunErrorCode } from "./Errors.js"
import type { ExecutionId } from "./Ids.js"
import { RequestUsage } from "./Run.js"
import { RunEvent } from "./RunStateMachine.js"

/** The longest message an execution event carries. */
const Message = Schema.String.pipe(Schema.maxLength(16_384))

/** An event of an execution, as the run state machine's executor events. */
export const ExecutionEvent = Schema.Union(
  Schema.TaggedStruct("EnvironmentSetupStarted", {}),
  Schema.TaggedStruct("EnvironmentSetupSucceeded", {}),
  Schema.TaggedStruct("EnvironmentSetupFailed", {
    message: Message,
    /** How long the failed sandbox is kept for a debug window (the server's own executions only). */
    retention_ms: Schema.optionalWith(Schema.NonNegativeInt, { exact: true })
  }),
  Schema.TaggedStruct("Start", {}),
  Schema.TaggedStruct("Succeed", { message: Schema.optionalWith(Message, { exact: true }) }),
  Schema.TaggedStruct("Block", { message: Message }),
  Schema.TaggedStruct("Fail", { error_code: RunErrorCode, message: Message }),
  Schema.TaggedStruct("Error", { error_code: RunErrorCode, message: Message }),
  /** The agent was stopped because its host is shutting down: the run goes back to the queue, at the same attempt. */
  Schema.TaggedStruct("HandOver", {})
).annotations({ identifier: "ExecutionEvent" })
export type ExecutionEvent = typeof ExecutionEvent.Type

/** What the agent reported so far: its session, usage (the run's total) and status line. */
export const Report = Schema.Struct({
  session_id: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(1_000)), { exact: true }),
  session_link: Schema.optionalWith(Schema.NullOr(Schema.String.pipe(Schema.maxLength(4_000))), { exact: true }),
  request_usage: RequestUsage,
  status: Schema.optionalWith(Message, { exact: true })
}).annotations({ identifier: "ExecutionReport" })
export type Report = typeof Report.Type

/**
 * The run state machine's event for an execution's event; `handOvers` is how many times the run
 * was handed over before (its timeline's `handed_over` events), which only `HandOver` needs.
 */
export const toRunEvent = (event: ExecutionEvent, executionId: ExecutionId, handOvers = 0): RunEvent => {
  switch (event._tag) {
    case "EnvironmentSetupStarted":
      return RunEvent.EnvironmentSetupStarted({ executionId })
    case "EnvironmentSetupSucceeded":
      return RunEvent.EnvironmentSetupSucceeded({ executionId })
    case "EnvironmentSetupFailed":
      return RunEvent.EnvironmentSetupFailed({ executionId, message: event.message, retentionMillis: event.retention_ms })
    case "Start":
      return RunEvent.Start({ executionId })
    case "Succeed":
      return RunEvent.Succeed({ executionId, message: event.message })
    case "Block":
      return RunEvent.Block({ executionId, message: event.message })
    case "Fail":
      return RunEvent.Fail({ executionId, errorCode: event.error_code, message: event.message })
    case "Error":
      return RunEvent.Error({ executionId, errorCode: event.error_code, message: event.message })
    case "HandOver":
      return RunEvent.HandOver({ executionId, earlier: handOvers })
  }
}
