import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Option, Tracer } from "effect"
import { keepsTrace, sampledTracer } from "../src/serve/SampledTracer.js"
import { parsePairs, TelemetryConfig } from "../src/serve/TelemetryConfig.js"

const read = (env: Record<string, string>) =>
  Effect.withConfigProvider(TelemetryConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("TelemetryConfig (the standard OTEL_* variables)", () => {
  it.effect("exports nothing without an endpoint, with an empty one, or when disabled", () =>
    Effect.gen(function*() {
      expect(yield* read({})).toEqual(Option.none())
      expect(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toEqual(Option.none())
      expect(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "TRUE" })).toEqual(Option.none())
      // Export off: nothing else is checked (a cluster-wide gRPC setting does not stop the start).
      expect(yield* read({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_TRACES_SAMPLER: "" })).toEqual(Option.none())
      expect(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://x", OTEL_SDK_DISABLED: "true" })).toEqual(Option.none())
    }))

  it.effect("reads the endpoint, protocol, headers, service name, exporters and sampler", () =>
    Effect.gen(function*() {
      const config = yield* read({
        OTEL_EXPORTER_OTLP_ENDPOINT: "https://collector.example/otlp/",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_HEADERS: "api-key=a%20b,x-tenant = acme",
        OTEL_SERVICE_NAME: "runs",
        OTEL_LOGS_EXPORTER: "none",
        OTEL_METRICS_EXPORTER: "console,otlp",
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: "0.25"
      })
      expect(config).toEqual(Option.some({
        endpoint: "https://collector.example/otlp/",
        protocol: "http/json",
        headers: { "api-key": "a b", "x-tenant": "acme" },
        serviceName: "runs",
        traces: true,
        metrics: true,
        logs: false,
        sampler: { parentBased: true, ratio: 0.25 },
        warnings: []
      }))
      const defaults = Option.getOrThrow(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }))
      expect(defaults).toMatchObject({ protocol: "http/protobuf", serviceName: "agent-runs", sampler: { parentBased: true, ratio: 1 } })
      const named = Option.getOrThrow(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attrs,team=a" }))
      expect(named.serviceName).toBe("from-attrs")
    }))

  it.effect("refuses an endpoint that is not http(s) or holds credentials; other unusable values are warnings", () =>
    Effect.gen(function*() {
      expect((yield* Effect.either(read({ OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://x" })))._tag).toBe("Left")
      expect((yield* Effect.either(read({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://u:p@collector.example" })))._tag).toBe("Left")
      const lenient = Option.getOrThrow(yield* read({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://x",
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
        OTEL_TRACES_SAMPLER: "sometimes",
        OTEL_TRACES_SAMPLER_ARG: "2"
      }))
      expect(lenient).toMatchObject({ protocol: "http/protobuf", sampler: { parentBased: true, ratio: 1 } })
      expect(lenient.warnings).toHaveLength(2)
      const ratio = Option.getOrThrow(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" }))
      expect(ratio.sampler).toEqual({ parentBased: false, ratio: 1 })
      expect(ratio.warnings).toEqual(["OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1; 1 is used"])
    }))

  it("parses key=value pairs, percent-decoded, skipping malformed ones", () => {
    expect(parsePairs("a=1,b=%2Fx,broken,=nokey, c = 3 ")).toEqual({ a: "1", b: "/x", c: "3" })
  })
})

describe("sampledTracer", () => {
  const recorded: Array<string> = []
  const inner = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      recorded.push(name)
      return {
        _tag: "Span", name, parent, context, links, kind, sampled: true, spanId: "0".repeat(16), traceId: "1".repeat(32),
        status: { _tag: "Started", startTime }, attributes: new Map(),
        end: () => {}, attribute: () => {}, event: () => {}, addLinks: () => {}
      }
    },
    context: (f) => f()
  })
  const span = (tracer: Tracer.Tracer, name: string, parent: Option.Option<Tracer.AnySpan>) =>
    tracer.span(name, parent, undefined as never, [], 0n, "internal")
  const unsampledParent = Option.some(Tracer.externalSpan({ traceId: "2".repeat(32), spanId: "3".repeat(16), sampled: false }))

  it("keeps or drops new traces by the ratio, and follows the parent when parent-based", () => {
    const off = sampledTracer(inner, { parentBased: false, ratio: 0 })
    const dropped = span(off, "root-off", Option.none())
    expect(dropped.sampled).toBe(false)
    expect(dropped.traceId).toMatch(/^[0-9a-f]{32}$/)
    const parentBased = sampledTracer(inner, { parentBased: true, ratio: 1 })
    const child = span(parentBased, "child-of-unsampled", unsampledParent)
    expect(child.sampled).toBe(false)
    expect(child.traceId).toBe("2".repeat(32))
    expect(span(parentBased, "root-on", Option.none()).sampled).toBe(true)
    expect(recorded).toEqual(["root-on"])
  })

  it("decides a ratio by the trace id: every span of a trace alike, about the ratio of traces kept", () => {
    const ids = Array.from({ length: 2000 }, (_, i) => (BigInt(i) * 0x9e3779b97f4a7c15n).toString(16).padStart(32, "0").slice(-32))
    const kept = ids.filter((id) => keepsTrace(id, 0.25)).length
    expect(kept / ids.length).toBeGreaterThan(0.2)
    expect(kept / ids.length).toBeLessThan(0.3)
    const ratio = sampledTracer(inner, { parentBased: false, ratio: 0.25 })
    for (const id of ids.slice(0, 50)) {
      const parent = Option.some(Tracer.externalSpan({ traceId: id, spanId: "3".repeat(16), sampled: true }))
      expect(span(ratio, "child", parent).sampled).toBe(keepsTrace(id, 0.25))
    }
  })
})
