/**
 * The bundled server's OpenTelemetry settings, from the standard `OTEL_*` variables
 * (docs/observability.md). Export is on only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and
 * `OTEL_SDK_DISABLED` is not `true`); without it nothing is exported and the exporter is not loaded.
 *
 * - `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's base URL (`/v1/traces`, `/v1/metrics`,
 *   `/v1/logs` are appended); `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (the default) or
 *   `http/json`; `OTEL_EXPORTER_OTLP_HEADERS`: `key=value,…`, values percent-decoded.
 * - `OTEL_SERVICE_NAME` (`agent-runs`), `OTEL_RESOURCE_ATTRIBUTES` (`key=value,…`).
 * - `OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER`, `OTEL_LOGS_EXPORTER`: `otlp` (the default) or
 *   `none`, to leave a signal out.
 * - `OTEL_TRACES_SAMPLER`: `parentbased_always_on` (the default), `always_on`, `always_off`,
 *   `traceidratio`, `parentbased_always_off`, `parentbased_traceidratio`, with the ratio in
 *   `OTEL_TRACES_SAMPLER_ARG` (0 to 1, default 1).
 */
import { Config, ConfigError, Either, Option } from "effect"

/** How root spans are chosen for export (children follow their parent when parent-based). */
export interface Sampler {
  readonly parentBased: boolean
  /** The share of new traces exported, 0 to 1. */
  readonly ratio: number
}

export interface TelemetryConfig {
  readonly endpoint: string
  readonly protocol: "http/protobuf" | "http/json"
  readonly headers: Readonly<Record<string, string>>
  readonly serviceName: string
  readonly traces: boolean
  readonly metrics: boolean
  readonly logs: boolean
  readonly sampler: Sampler
}

/** `key=value,key=value` (W3C baggage-like, as OTEL_EXPORTER_OTLP_HEADERS), values percent-decoded. */
export const parsePairs = (text: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const part of text.split(",")) {
    const at = part.indexOf("=")
    if (at <= 0) continue
    const key = part.slice(0, at).trim()
    const raw = part.slice(at + 1).trim()
    let value = raw
    try {
      value = decodeURIComponent(raw)
    } catch {
      // not percent-encoded: kept as written
    }
    if (key !== "") out[key] = value
  }
  return out
}

const SAMPLERS = {
  always_on: { parentBased: false, fixed: 1 },
  always_off: { parentBased: false, fixed: 0 },
  traceidratio: { parentBased: false, fixed: undefined },
  parentbased_always_on: { parentBased: true, fixed: 1 },
  parentbased_always_off: { parentBased: true, fixed: 0 },
  parentbased_traceidratio: { parentBased: true, fixed: undefined }
} as const

const samplerConfig = Config.all({
  name: Config.literal(...(Object.keys(SAMPLERS) as Array<keyof typeof SAMPLERS>))("OTEL_TRACES_SAMPLER").pipe(
    Config.withDefault("parentbased_always_on" as const)
  ),
  ratio: Config.number("OTEL_TRACES_SAMPLER_ARG").pipe(
    Config.validate({ message: "must be a number from 0 to 1", validation: (n) => n >= 0 && n <= 1 }),
    Config.withDefault(1)
  )
}).pipe(Config.map(({ name, ratio }): Sampler => ({
  parentBased: SAMPLERS[name].parentBased,
  ratio: SAMPLERS[name].fixed ?? ratio
})))

const exporterOn = (name: string) =>
  Config.literal("otlp", "none")(name).pipe(Config.withDefault("otlp" as const), Config.map((value) => value === "otlp"))

/** The endpoint, none when unset or empty (the OpenTelemetry rule). */
const endpointConfig = Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT")).pipe(
  Config.mapOrFail((value) => {
    const url = Option.getOrElse(value, () => "").trim()
    if (url === "") return Either.right(Option.none<string>())
    return URL.canParse(url) && /^https?:$/.test(new URL(url).protocol)
      ? Either.right(Option.some(url))
      : Either.left(ConfigError.InvalidData(["OTEL_EXPORTER_OTLP_ENDPOINT"], "must be an http:// or https:// URL"))
  })
)

/** The settings when export is on; none when it is off. */
export const TelemetryConfig: Config.Config<Option.Option<TelemetryConfig>> = Config.all({
  disabled: Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
  endpoint: endpointConfig,
  protocol: Config.literal("http/protobuf", "http/json")("OTEL_EXPORTER_OTLP_PROTOCOL").pipe(
    Config.withDefault("http/protobuf" as const)
  ),
  headers: Config.string("OTEL_EXPORTER_OTLP_HEADERS").pipe(Config.withDefault(""), Config.map(parsePairs)),
  serviceName: Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("agent-runs")),
  traces: exporterOn("OTEL_TRACES_EXPORTER"),
  metrics: exporterOn("OTEL_METRICS_EXPORTER"),
  logs: exporterOn("OTEL_LOGS_EXPORTER"),
  sampler: samplerConfig
}).pipe(
  Config.map(({ disabled, endpoint, ...rest }) =>
    disabled || Option.isNone(endpoint) ? Option.none() : Option.some({ endpoint: endpoint.value, ...rest }))
)
