/**
 * OpenTelemetry export for the bundled server (docs/observability.md): when `TelemetryConfig`
 * says so, the service's spans (with the sampler), its metrics (the same Effect metrics `/metrics`
 * shows) and its logs go to an OTLP/HTTP collector, through `@effect/opentelemetry`. The exporter
 * is loaded only then; without an endpoint this is an empty layer.
 */
import { FetchHttpClient } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { sampledTracer } from "./SampledTracer.js"
import type { TelemetryConfig } from "./TelemetryConfig.js"

const load = (config: TelemetryConfig) =>
  Effect.promise(async () => {
    const [OtlpTracer, OtlpMetrics, OtlpLogger, OtlpSerialization] = await Promise.all([
      import("@effect/opentelemetry/OtlpTracer"),
      import("@effect/opentelemetry/OtlpMetrics"),
      import("@effect/opentelemetry/OtlpLogger"),
      import("@effect/opentelemetry/OtlpSerialization")
    ])
    const base = config.endpoint.replace(/\/+$/, "")
    const common = { resource: { serviceName: config.serviceName }, headers: config.headers }
    const tracer = Layer.unwrapScoped(
      Effect.map(OtlpTracer.make({ ...common, url: `${base}/v1/traces` }), (inner) => Layer.setTracer(sampledTracer(inner, config.sampler)))
    )
    const signals = Layer.mergeAll(
      config.traces ? tracer : Layer.empty,
      config.metrics ? OtlpMetrics.layer({ ...common, url: `${base}/v1/metrics` }) : Layer.empty,
      config.logs ? OtlpLogger.layer({ ...common, url: `${base}/v1/logs` }) : Layer.empty
    )
    const serialization = config.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf
    return signals.pipe(Layer.provide(serialization), Layer.provide(FetchHttpClient.layer))
  })

/** The export layer of the configuration; empty when export is off. */
export const TelemetryLive = (config: Option.Option<TelemetryConfig>): Layer.Layer<never> =>
  Option.match(config, { onNone: () => Layer.empty, onSome: (on) => Layer.unwrapEffect(load(on)) })
