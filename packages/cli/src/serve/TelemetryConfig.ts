/**
 * The bundled server's OpenTelemetry settings, from the standard `OTEL_*` variables
 * (docs/observability.md). Export is on only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and
 * `OTEL_SDK_DISABLED` is not `true`); without it nothing is exported and the exporter is not loaded.
 *
 * - `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's base URL (`/v1/traces`, `/v1/metrics`,
 *   `/v1/logs` are appended); `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (the default) or
 *   `http/json`; `OTEL_EXPORTER_OTLP_HEADERS`: `key=value,…`, values percent-decoded.
 * - `OTEL_SERVICE_NAME` (`agent-runs`), `OTEL_RESOURCE_ATTRIBUTES` (`key=value,…`).
 * - `OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER`, `OTEL_LOGS_EXPORTER`: a list; a signal is
 *   exported when it holds `otlp` (the default), and left out otherwise (`none`).
 * - `OTEL_TRACES_SAMPLER`: `parentbased_always_on` (the default), `always_on`, `always_off`,
 *   `traceidratio`, `parentbased_always_off`, `parentbased_traceidratio`, with the ratio in
 *   `OTEL_TRACES_SAMPLER_ARG` (0 to 1, default 1).
 *
 * Empty values are unset. Only the endpoint can stop the start (not an http(s) URL, or one with
 * credentials); any other value the server cannot use is a warning, and its default is used, as
 * the OpenTelemetry specification asks. The per-signal endpoints
 * (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, …) are not read.
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
  /** Settings that could not be used, and what is used instead (logged at start). */
  readonly warnings: ReadonlyArray<string>
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

/** A variable as set: trimmed, and unset when empty (the OpenTelemetry rule). */
const setting = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Config.map((value) => Option.filter(Option.map(value, (v) => v.trim()), (v) => v !== ""))
  )

/** Why an endpoint cannot be used (not an http(s) URL, or one holding credentials), or undefined. */
const endpointProblem = (url: string): string | undefined => {
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) return "must be an http:// or https:// URL"
  const parsed = new URL(url)
  return parsed.username !== "" || parsed.password !== ""
    ? "must not hold credentials: put them in OTEL_EXPORTER_OTLP_HEADERS"
    : undefined
}

/** What was set, read leniently: a value the server cannot use is a warning and its default. */
const Raw = Config.all({
  disabled: setting("OTEL_SDK_DISABLED"),
  endpoint: setting("OTEL_EXPORTER_OTLP_ENDPOINT"),
  protocol: setting("OTEL_EXPORTER_OTLP_PROTOCOL"),
  headers: setting("OTEL_EXPORTER_OTLP_HEADERS"),
  serviceName: setting("OTEL_SERVICE_NAME"),
  resourceAttributes: setting("OTEL_RESOURCE_ATTRIBUTES"),
  traces: setting("OTEL_TRACES_EXPORTER"),
  metrics: setting("OTEL_METRICS_EXPORTER"),
  logs: setting("OTEL_LOGS_EXPORTER"),
  sampler: setting("OTEL_TRACES_SAMPLER"),
  samplerArg: setting("OTEL_TRACES_SAMPLER_ARG")
})
type Raw = Config.Config.Success<typeof Raw>

/** Whether a signal's exporter list (`otlp`, `none`, `console`, …) includes `otlp`; absent: yes. */
const exporterOn = (value: Option.Option<string>): boolean =>
  Option.match(value, { onNone: () => true, onSome: (v) => v.toLowerCase().split(",").map((x) => x.trim()).includes("otlp") })

const samplerOf = (raw: Raw, warnings: Array<string>): Sampler => {
  const name = Option.getOrElse(Option.map(raw.sampler, (v) => v.toLowerCase()), () => "parentbased_always_on")
  const known = SAMPLERS[name as keyof typeof SAMPLERS]
  if (known === undefined) warnings.push(`OTEL_TRACES_SAMPLER: ${name} is not supported; parentbased_always_on is used`)
  const chosen = known ?? SAMPLERS.parentbased_always_on
  if (chosen.fixed !== undefined) return { parentBased: chosen.parentBased, ratio: chosen.fixed }
  const ratio = Option.getOrElse(Option.map(raw.samplerArg, Number), () => 1)
  if (!(ratio >= 0 && ratio <= 1)) warnings.push("OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1; 1 is used")
  return { parentBased: chosen.parentBased, ratio: ratio >= 0 && ratio <= 1 ? ratio : 1 }
}

const protocolOf = (raw: Raw, warnings: Array<string>): TelemetryConfig["protocol"] => {
  const protocol = Option.getOrElse(raw.protocol, () => "http/protobuf")
  if (protocol === "http/protobuf" || protocol === "http/json") return protocol
  warnings.push(`OTEL_EXPORTER_OTLP_PROTOCOL: ${protocol} is not supported (http/protobuf or http/json); http/protobuf is used`)
  return "http/protobuf"
}

/** `OTEL_SERVICE_NAME`, else `service.name` of `OTEL_RESOURCE_ATTRIBUTES`, else `agent-runs`. */
const serviceNameOf = (raw: Raw): string =>
  Option.getOrElse(raw.serviceName, () => parsePairs(Option.getOrElse(raw.resourceAttributes, () => ""))["service.name"] ?? "agent-runs")

/** The settings when export is on, with what could not be used; none when it is off. */
export const TelemetryConfig: Config.Config<Option.Option<TelemetryConfig>> = Raw.pipe(
  Config.mapOrFail((raw) => {
    const disabled = Option.getOrElse(Option.map(raw.disabled, (v) => v.toLowerCase() === "true"), () => false)
    if (disabled || Option.isNone(raw.endpoint)) return Either.right(Option.none())
    const problem = endpointProblem(raw.endpoint.value)
    if (problem !== undefined) return Either.left(ConfigError.InvalidData(["OTEL_EXPORTER_OTLP_ENDPOINT"], problem))
    const warnings: Array<string> = []
    return Either.right(Option.some({
      endpoint: raw.endpoint.value,
      protocol: protocolOf(raw, warnings),
      headers: parsePairs(Option.getOrElse(raw.headers, () => "")),
      serviceName: serviceNameOf(raw),
      traces: exporterOn(raw.traces),
      metrics: exporterOn(raw.metrics),
      logs: exporterOn(raw.logs),
      sampler: samplerOf(raw, warnings),
      warnings
    }))
  })
)
