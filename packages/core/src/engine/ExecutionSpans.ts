/**
 * What an execution tells the tracer (docs/observability.md): its span, a child of the span that
 * created its run, so that a run's executions are in the run's trace whichever replica or worker
 * runs them; its agent's span in the GenAI semantic conventions where they fit; and the
 * `TRACEPARENT` its agent's process gets.
 */
import { Option, Tracer } from "effect"
import type { ExecutionState } from "../domain/Harness.js"
import type { ExecutionPlan } from "./ExecutionPlan.js"

/**
 * The span of an execution (docs/observability.md): a child of the span that created its run, so a
 * run's executions are in its trace, whichever replica or worker runs them.
 */
export const executionSpan = (plan: ExecutionPlan): Tracer.SpanOptions => ({
  kind: "consumer",
  attributes: { "agent_runs.run_id": plan.run_id, "agent_runs.execution_id": plan.execution_id, "agent_runs.team_uid": plan.team_uid },
  ...(plan.trace === null
    ? { root: true }
    : { parent: Tracer.externalSpan({ traceId: plan.trace.trace_id, spanId: plan.trace.span_id, sampled: true }) })
})

/** What the agent's span says of it, in the GenAI semantic conventions where they fit. */
export const agentAttributes = (plan: ExecutionPlan): Record<string, unknown> => ({
  "gen_ai.operation.name": "invoke_agent",
  "gen_ai.agent.name": plan.agent.type,
  ...(plan.start.model_id === null ? {} : { "gen_ai.request.model": plan.start.model_id })
})

/** The usage the agent reported, on its span. */
export const usageAttributes = (state: ExecutionState): Record<string, unknown> =>
  state.usage === undefined
    ? {}
    : {
      "gen_ai.usage.input_tokens": state.usage.input_tokens,
      "gen_ai.usage.output_tokens": state.usage.output_tokens,
      "agent_runs.usage.inference_cost": state.usage.inference_cost
    }

/** `TRACEPARENT` (W3C Trace Context) for the agent's process: its spans join the run's trace. */
export const traceparentOf = (span: Option.Option<Tracer.Span>): Record<string, string> =>
  Option.isNone(span) ? {} : { TRACEPARENT: `00-${span.value.traceId}-${span.value.spanId}-${span.value.sampled ? "01" : "00"}` }
