/**
 * `OTEL_TRACES_SAMPLER` for the OTLP tracer (TelemetryConfig.ts): a span is recorded and exported
 * by the inner tracer when sampled; otherwise it is a span that records nothing, so that its
 * children (parent-based) are left out too. A new trace is sampled with the configured ratio.
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
    readonly kind: Tracer.SpanKind
  ) {
    this.traceId = parent._tag === "Some" ? parent.value.traceId : hex(32)
    this.status = { _tag: "Started", startTime }
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
  }
  attribute(): void {}
  event(): void {}
  addLinks(): void {}
}

/** Whether a span with this parent is sampled. */
const sampled = (sampler: Sampler, parent: Option.Option<Tracer.AnySpan>): boolean =>
  sampler.parentBased && parent._tag === "Some" ? parent.value.sampled : Math.random() < sampler.ratio

/** `inner` exporting only the spans `sampler` keeps. */
export const sampledTracer = (inner: Tracer.Tracer, sampler: Sampler): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) =>
      sampled(sampler, parent)
        ? inner.span(name, parent, context, links, startTime, kind, options)
        : new UnsampledSpan(name, parent, context, links, startTime, kind),
    context: (f, fiber) => inner.context(f, fiber)
  })
