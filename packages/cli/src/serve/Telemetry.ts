/**
 * OpenTelemetry export for the bundled server (docs/observability.md): when `TelemetryConfig`
 * says so, the service's spans (with the sampler), its metrics (the same Effect metrics `/metrics`
 * shows) and its logs at `info` and above go to an OTLP/HTTP collector, through
 * `@effect/opentelemetry`. The exporter is loaded only then; without an endpoint this is an empty
 * layer. Each export gets `EXPORT_TIMEOUT` to be answered, so a collector that hangs holds nothing
 * for long.
 */
import { FetchHttpClient, HttpClient, HttpClientError } from "@effect/platform"
import { Duration, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { sampledTracer } from "./SampledTracer.js"
import type { TelemetryConfig } from "./TelemetryConfig.js"

/** How long an export may wait for the collector's answer. */
export const EXPORT_TIMEOUT = Duration.seconds(10)

/** `fetch`, each request failing after `EXPORT_TIMEOUT`. */
const exportClient = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(HttpClient.HttpClient, (client) =>
    HttpClient.transform(client, (effect, request) =>
      Effect.timeoutFail(effect, {
        duration: EXPORT_TIMEOUT,
        onTimeout: () => new HttpClientError.RequestError({ request, reason: "Transport", description: "the collector did not answer in time" })
      })))
).pipe(Layer.provide(FetchHttpClient.layer))

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
    const logs = Logger.addScoped(
      Effect.map(OtlpLogger.make({ ...common, url: `${base}/v1/logs` }), (logger) =>
        Logger.filterLogLevel(logger, LogLevel.greaterThanEqual(LogLevel.Info)))
    )
    const signals = Layer.mergeAll(
      config.traces ? tracer : Layer.empty,
      config.metrics ? OtlpMetrics.layer({ ...common, url: `${base}/v1/metrics` }) : Layer.empty,
      config.logs ? logs : Layer.empty,
      Layer.effectDiscard(Effect.forEach(config.warnings, (warning) => Effect.logWarning(`telemetry: ${warning}`)))
    )
    const serialization = config.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf
    return signals.pipe(Layer.provide(serialization), Layer.provide(exportClient))
  })

/** The export layer of the configuration; empty when export is off. */
export const TelemetryLive = (config: Option.Option<TelemetryConfig>): Layer.Layer<never> =>
  Option.match(config, { onNone: () => Layer.empty, onSome: (on) => Layer.unwrapEffect(load(on)) })
