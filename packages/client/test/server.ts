/**
 * A tiny `node:http` server on 127.0.0.1 (a free port) for the client's tests: each request is
 * recorded and answered by the test's handler.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface Recorded {
  readonly method: string
  /** Path and query. */
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
  /** When it arrived (Date.now()). */
  readonly at: number
}

export type Handler = (request: Recorded, response: ServerResponse, index: number) => void | Promise<void>

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly requests: Array<Recorded>
  readonly close: () => Promise<void>
}

export const startServer = async (handler: Handler): Promise<TestServer> => {
  const requests: Array<Recorded> = []
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const recorded: Recorded = {
        method: request.method ?? "GET",
        url: request.url ?? "/",
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now()
      }
      requests.push(recorded)
      Promise.resolve(handler(recorded, response, requests.length - 1)).catch((error: unknown) => {
        response.statusCode = 599
        response.end(String(error))
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Answers JSON. */
export const json = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(status, { "content-type": "application/json", ...headers })
  response.end(JSON.stringify(body))
}

const titles: Record<string, string> = {
  invalid_request: "Invalid request",
  authentication_required: "Authentication required",
  not_authorized: "Not authorized",
  feature_not_available: "Feature not available",
  resource_not_found: "Resource not found",
  conflict: "Conflict",
  operation_not_supported: "Operation not supported",
  rate_limited: "Rate limited",
  payload_too_large: "Payload too large",
  internal_error: "Internal error",
  resource_unavailable: "Resource unavailable"
}

/** A problem body, as the server sends it. */
export const problemBody = (status: number, code: string, error: string, extra: Record<string, unknown> = {}) => ({
  type: `/docs/errors#${code}`,
  title: titles[code] ?? code,
  status,
  error,
  error_code: code,
  retryable: ["rate_limited", "internal_error", "resource_unavailable"].includes(code),
  ...extra
})

/** Answers a problem. */
export const problem = (
  response: ServerResponse,
  status: number,
  code: string,
  error: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {}
) => {
  response.writeHead(status, { "content-type": "application/problem+json", ...headers })
  response.end(JSON.stringify(problemBody(status, code, error, extra)))
}

/** A free port nothing listens on (bound, then released). */
export const closedPort = async (): Promise<number> => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

export const RUN = "01936f2a-8b7c-7d4e-9f01-23456789abcd"
export const USER = "Us3rAbCdEfGhIjKlMnOpQr"

/** A run as the API sends it (a fresh QUEUED one). */
export const runItem = (runId: string = RUN, title = "Say hello") => ({
  run_id: runId,
  task_id: runId,
  title,
  prompt: "@say hello",
  state: "QUEUED",
  created_at: "2026-11-22T03:17:28.000Z",
  updated_at: "2026-11-22T03:17:28.000Z",
  started_at: null,
  ended_at: null,
  agent_config: {},
  creator: { type: "user", uid: USER, display_name: "Ada Lovelace" },
  executor: { type: "user", uid: USER, display_name: "Ada Lovelace" },
  source: "API",
  execution_location: "REMOTE",
  environment_id: null,
  parent_run_id: null,
  ancestor_run_ids: [],
  metadata: {},
  artifacts: [],
  request_usage: { input_tokens: 0, output_tokens: 0, inference_cost: 0, compute_cost: 0 },
  is_sandbox_running: false,
  is_run_type_cancellable: true,
  scope: { type: "User", uid: USER },
  attempt: 1,
  execution_count: 1
})

/** The n-th (from 0) run id of a list fixture (UUIDv7-shaped). */
export const runIdOf = (n: number) => `01936f2a-8b7c-7d4e-9f01-${String(n).padStart(12, "0")}`
