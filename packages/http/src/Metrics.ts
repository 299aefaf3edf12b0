/**
 * `/metrics` in the Prometheus text format (version 0.0.4): every Effect metric of the process
 * (counters, gauges, histograms, with their tags as labels) plus the request metrics recorded by
 * `metricsMiddleware` and a few process figures. The OpenTelemetry export (docs/observability.md)
 * sends the same Effect metrics.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { HttpApp } from "@effect/platform"
import { Effect, FiberRef, Metric, MetricBoundaries, MetricLabel, MetricState } from "effect"
import type { MetricPair } from "effect"
import { makeRouteLabel } from "./RouteLabel.js"

/** Requests answered, by method and status. */
export const httpRequests = Metric.counter("agent_runs_http_requests_total", {
  description: "HTTP requests answered, by method and status",
  incremental: true
})

/** Request latency in seconds, by method and route (RouteLabel.ts). */
export const httpDuration = Metric.histogram(
  "agent_runs_http_request_duration_seconds",
  MetricBoundaries.exponential({ start: 0.0005, factor: 2, count: 16 }),
  "HTTP request latency in seconds, by method and route"
)

/**
 * The tagged counter and histogram of a method and status, made once each: tagging builds a new
 * metric key (hashed on every use), which would cost every request a few allocations and hashes.
 */
const counters = new Map<string, Metric.Metric.Counter<number>>()
const histograms = new Map<string, Metric.Metric.Histogram<number>>()

const counterOf = (method: string, status: number) => {
  const key = `${method} ${status}`
  let counter = counters.get(key)
  if (counter === undefined) {
    counter = Metric.taggedWithLabels(httpRequests, [MetricLabel.make("method", method), MetricLabel.make("status", String(status))])
    counters.set(key, counter)
  }
  return counter
}

const routeOf = makeRouteLabel()

const histogramOf = (method: string, route: string) => {
  const key = `${method} ${route}`
  let histogram = histograms.get(key)
  if (histogram === undefined) {
    histogram = Metric.taggedWithLabels(httpDuration, [MetricLabel.make("method", method), MetricLabel.make("route", route)])
    histograms.set(key, histogram)
  }
  return histogram
}

/** Records the count and latency of every request. */
export const metricsMiddleware = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const start = performance.now()
    // Updated in place (`unsafeUpdate`), with the fiber's metric labels as `Metric.update` would:
    // two effects a request would cost more than the counting itself.
    return Effect.flatMap(app, (response) =>
      Effect.withFiberRuntime((fiber) => {
        const tags = fiber.getFiberRef(FiberRef.currentMetricLabels)
        counterOf(request.method, response.status).unsafeUpdate(1, tags)
        histogramOf(request.method, routeOf(request.url, response.status)).unsafeUpdate((performance.now() - start) / 1000, tags)
        return Effect.succeed(response)
      }))
  })

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')

const labels = (tags: ReadonlyArray<readonly [string, string]>): string =>
  tags.length === 0 ? "" : `{${tags.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`

const sanitize = (name: string) => name.replace(/[^a-zA-Z0-9_:]/g, "_")

const formatNumber = (n: number | bigint) =>
  typeof n === "bigint" ? n.toString() : Number.isFinite(n) ? String(n) : n > 0 ? "+Inf" : n < 0 ? "-Inf" : "NaN"

/** Renders metric pairs as Prometheus text. */
export const render = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>, extra: ReadonlyArray<string> = []): string => {
  const families = new Map<string, { type: string; help: string | undefined; lines: Array<string> }>()
  const family = (name: string, type: string, help: string | undefined) => {
    let f = families.get(name)
    if (f === undefined) {
      f = { type, help, lines: [] }
      families.set(name, f)
    }
    return f.lines
  }
  for (const pair of pairs) {
    const name = sanitize(pair.metricKey.name)
    const help = pair.metricKey.description._tag === "Some" ? pair.metricKey.description.value : undefined
    const tags = pair.metricKey.tags.map((t) => [t.key, t.value] as const)
    const state = pair.metricState
    if (MetricState.isCounterState(state)) {
      family(name, "counter", help).push(`${name}${labels(tags)} ${formatNumber(state.count)}`)
    } else if (MetricState.isGaugeState(state)) {
      family(name, "gauge", help).push(`${name}${labels(tags)} ${formatNumber(state.value)}`)
    } else if (MetricState.isHistogramState(state)) {
      const lines = family(name, "histogram", help)
      for (const [bound, count] of state.buckets) {
        lines.push(`${name}_bucket${labels([...tags, ["le", formatNumber(bound)]])} ${count}`)
      }
      lines.push(`${name}_sum${labels(tags)} ${formatNumber(state.sum)}`)
      lines.push(`${name}_count${labels(tags)} ${state.count}`)
    }
  }
  const out: Array<string> = []
  for (const [name, f] of families) {
    if (f.help !== undefined) out.push(`# HELP ${name} ${f.help.replace(/\n/g, " ")}`)
    out.push(`# TYPE ${name} ${f.type}`, ...f.lines)
  }
  return [...out, ...extra].join("\n") + "\n"
}

const processFigures = (): ReadonlyArray<string> => {
  const memory = process.memoryUsage()
  return [
    "# TYPE process_resident_memory_bytes gauge",
    `process_resident_memory_bytes ${memory.rss}`,
    "# TYPE nodejs_heap_used_bytes gauge",
    `nodejs_heap_used_bytes ${memory.heapUsed}`,
    "# TYPE process_uptime_seconds gauge",
    `process_uptime_seconds ${process.uptime().toFixed(3)}`
  ]
}

/** The `/metrics` response. */
export const metricsResponse = Effect.map(
  Metric.snapshot,
  (pairs) =>
    HttpServerResponse.text(render(pairs, processFigures()), { contentType: "text/plain; version=0.0.4; charset=utf-8" })
)
