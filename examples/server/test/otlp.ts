/**
 * An OTLP/HTTP receiver on loopback for the tests (JSON encoding, `OTEL_EXPORTER_OTLP_PROTOCOL=
 * http/json`): it decodes every export it gets — spans, metrics, logs — and keeps them, with the
 * headers each export came with. Used to check what the server exports (telemetry.test.ts).
 */
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"

/** A span as the receiver keeps it: the OTLP fields the tests read, attributes flattened. */
export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly attributes: Record<string, unknown>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly service: string | undefined
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const valueOf = (value: Json): unknown =>
  value === undefined || value === null
    ? undefined
    : "stringValue" in value
    ? value.stringValue
    : "intValue" in value
    ? Number(value.intValue)
    : "doubleValue" in value
    ? value.doubleValue
    : "boolValue" in value
    ? value.boolValue
    : JSON.stringify(value)

const attributesOf = (list: Array<Json> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((a: Json) => [a.key, valueOf(a.value)]))

export const startOtlpReceiver = async () => {
  const spans: Array<ReceivedSpan> = []
  const metricNames = new Set<string>()
  const metrics: Array<Json> = []
  const headers: Array<IncomingHttpHeaders> = []
  let logRecords = 0
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      headers.push(request.headers)
      const body: Json = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      if (request.url === "/v1/traces") {
        for (const resource of body.resourceSpans ?? []) {
          const service = attributesOf(resource.resource?.attributes)["service.name"] as string | undefined
          for (const scope of resource.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId === "" ? undefined : span.parentSpanId,
                name: span.name,
                attributes: attributesOf(span.attributes),
                links: (span.links ?? []).map((link: Json) => ({ traceId: link.traceId, spanId: link.spanId })),
                service
              })
            }
          }
        }
      } else if (request.url === "/v1/metrics") {
        for (const resource of body.resourceMetrics ?? []) {
          for (const scope of resource.scopeMetrics ?? []) {
            for (const metric of scope.metrics ?? []) {
              metricNames.add(metric.name)
              metrics.push(metric)
            }
          }
        }
      } else if (request.url === "/v1/logs") {
        for (const resource of body.resourceLogs ?? []) {
          for (const scope of resource.scopeLogs ?? []) logRecords += (scope.logRecords ?? []).length
        }
      }
      response.writeHead(200, { "content-type": "application/json" })
      response.end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    metricNames,
    metrics,
    headers,
    logRecords: () => logRecords,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
