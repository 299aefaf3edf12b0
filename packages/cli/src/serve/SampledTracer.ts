/**
 * `OTEL_TRACES_SAMPLER` for the OTLP tracer (TelemetryConfig.ts): a span is recorded and exported
 * by the inner tracer when sampled; otherwise it is a span that records nothing, so that its
 * children are left out too. Parent-based: a span with a parent follows the parent's decision.
 * Otherwise the decision is the trace id's (TraceIdRatioBased: its low 56 bits against the ratio),
 * so every span of a trace, on every replica, decides alike.
 */
import type { Context, Exit, Option } from "effect"
import { Tracer } from "effect"
import type { Sampler } from "./TelemetryConfig.js"

const hex = (length: number): string => {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(length / 2))
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")
}

/** A span that is not exported: it keeps its trace and ids for its children, and nothing else. */
class UnsampledSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = false
  readonly spanId = hex(16)
  readonly traceId: string
  readonly attributes: ReadonlyMap<string, unknown> = new Map()
  status: Tracer.SpanStatus
  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    readonly links: ReadonlyArray<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind,
    traceId: string
  ) {
    this.traceId = traceId
    this.status = { _tag: "Started", startTime }
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
  }
  attribute(): void {}
  event(): void {}
  addLinks(): void {}
}

/** TraceIdRatioBased: whether the trace id's low 56 bits fall under the ratio. */
export const keepsTrace = (traceId: string, ratio: number): boolean =>
  ratio >= 1 || (ratio > 0 && parseInt(traceId.slice(-14), 16) < ratio * 2 ** 56)

/** `inner` exporting only the spans `sampler` keeps. */
export const sampledTracer = (inner: Tracer.Tracer, sampler: Sampler): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const dropped = (traceId: string) => new UnsampledSpan(name, parent, context, links, startTime, kind, traceId)
      if (parent._tag === "Some") {
        const keep = sampler.parentBased ? parent.value.sampled : keepsTrace(parent.value.traceId, sampler.ratio)
        return keep ? inner.span(name, parent, context, links, startTime, kind, options) : dropped(parent.value.traceId)
      }
      if (sampler.ratio <= 0) return dropped(hex(32))
      // A new trace: its id decides (the span made and not kept is never ended, so never exported).
      const made = inner.span(name, parent, context, links, startTime, kind, options)
      return keepsTrace(made.traceId, sampler.ratio) ? made : dropped(made.traceId)
    },
    context: (f, fiber) => inner.context(f, fiber)
  })
