/**
 * What the client adds to every request on top of an `HttpClient`: the bearer token and the TEAM
 * header, a timeout per attempt, and retries.
 *
 * Retries: a 429 or 503 answer, or a request that got no answer (connection refused or reset, DNS
 * failure: `RequestError` with reason `Transport`), is sent again (a POST with the same
 * `Idempotency-Key`, `idempotent`; and then also a retryable 409: its first attempt still runs), at most `maxRetries` times (2 by
 * default). The wait before a retry is the answer's `Retry-After` (seconds, or an HTTP date),
 * otherwise an exponential backoff with jitter (0.5 s, 1 s, 2 s, … up to 8 s); either is capped at
 * `maxRetryWait` (30 s by default). A timeout is not retried (the server may have acted on the
 * request), nor is any other answer: the last answer is returned and decoded as usual.
 *
 * Timeout: each attempt, until its whole body is read, gets `timeout` (60 s by default); over it,
 * the attempt fails with a `RequestError` (reason `Transport`) whose `cause` is a
 * `Cause.TimeoutException` (`isTimeout`). Streams (`stream: true`) get the timeout until their
 * headers only, and their body is not read ahead.
 */
import { type Headers, HttpClient, HttpClientError, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Security } from "@agent-runs/api"
import { Cause, Duration, Effect, FiberRef, Redacted } from "effect"

/** The statuses that are retried. */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 503])

export const DEFAULT_MAX_RETRIES = 2
export const DEFAULT_TIMEOUT: Duration.Duration = Duration.seconds(60)
export const DEFAULT_MAX_RETRY_WAIT: Duration.Duration = Duration.seconds(30)

/** How the client reaches the server and who it is. */
export interface TransportOptions {
  /** The bearer token (`ar_…`). */
  readonly token: string | Redacted.Redacted<string>
  /** The team to act in (`X-Team-Uid`); the token's first team when absent. A request that sets the header keeps its own. */
  readonly teamUid?: string | undefined
  /** How many times a request is retried (2). */
  readonly maxRetries?: number | undefined
  /** The timeout of each attempt (60 s). */
  readonly timeout?: Duration.DurationInput | undefined
  /** The longest wait before a retry, whatever `Retry-After` says (30 s). */
  readonly maxRetryWait?: Duration.DurationInput | undefined
}

/** The resolved settings. */
export interface Settings {
  readonly maxRetries: number
  readonly timeout: Duration.Duration
  readonly maxRetryWait: Duration.Duration
}

export const settings = (options: TransportOptions): Settings => ({
  maxRetries: Math.max(0, Math.floor(options.maxRetries ?? DEFAULT_MAX_RETRIES)),
  timeout: options.timeout === undefined ? DEFAULT_TIMEOUT : Duration.decode(options.timeout),
  maxRetryWait: options.maxRetryWait === undefined ? DEFAULT_MAX_RETRY_WAIT : Duration.decode(options.maxRetryWait)
})

/**
 * The wait a `Retry-After` value asks for, in milliseconds: delay-seconds (`120`) or an HTTP date
 * (`Wed, 21 Oct 2015 07:28:00 GMT`, 0 when past); undefined when absent or not understood.
 */
export const parseRetryAfter = (value: string | undefined, now: number = Date.now()): number | undefined => {
  if (value === undefined) return undefined
  const text = value.trim()
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000)
  if (!/[a-z]/i.test(text)) return undefined
  const at = Date.parse(text)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/** The wait before retry number `retry + 1` (from 0), in milliseconds. */
export const retryDelay = (
  retryAfter: string | undefined,
  retry: number,
  maxRetryWait: Duration.Duration,
  now: number = Date.now()
): number => {
  const told = parseRetryAfter(retryAfter, now)
  const backoff = Math.min(500 * 2 ** retry, 8000) * (1 - Math.random() * 0.25)
  return Math.min(told ?? backoff, Duration.toMillis(maxRetryWait))
}

/** Whether a failure is an attempt that timed out. */
export const isTimeout = (error: unknown): boolean =>
  HttpClientError.isHttpClientError(error) && error._tag === "RequestError" && Cause.isTimeoutException(error.cause)

/** Whether a failure is a request that got no answer (and was not a timeout). */
export const isConnectionError = (error: unknown): boolean =>
  HttpClientError.isHttpClientError(error) && error._tag === "RequestError" && error.reason === "Transport" &&
  !Cause.isTimeoutException(error.cause)

/**
 * What the last attempt of a request answered, for callers that want more than the decoded
 * result (the Promise client's errors carry the raw body): set through `currentExchange`.
 */
export interface Exchange {
  status?: number
  headers?: Headers.Headers
  body?: Uint8Array
}

/** The exchange the requests of the current fiber report to (none by default). */
export const currentExchange: FiberRef.FiberRef<Exchange | undefined> = FiberRef.unsafeMake<Exchange | undefined>(
  undefined
)

/** Query parameters appended to the requests of the current fiber (deepObject filters the API schema cannot say). */
export const extraUrlParams: FiberRef.FiberRef<ReadonlyArray<readonly [string, string]>> = FiberRef.unsafeMake<
  ReadonlyArray<readonly [string, string]>
>([])

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304])

/** The response with its body read into memory (so the timeout covers it and it can be read again). */
const buffered = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.flatMap(response.arrayBuffer, (buffer) =>
    Effect.flatMap(FiberRef.get(currentExchange), (exchange) => {
      if (exchange !== undefined) {
        exchange.status = response.status
        exchange.headers = response.headers
        exchange.body = new Uint8Array(buffer)
      }
      const body = buffer.byteLength === 0 || NULL_BODY_STATUSES.has(response.status) ? null : buffer
      return Effect.succeed(
        HttpClientResponse.fromWeb(
          response.request,
          new Response(body, { status: response.status, headers: response.headers as Record<string, string> })
        )
      )
    }))

type Outcome =
  | { readonly _tag: "Answer"; readonly response: HttpClientResponse.HttpClientResponse }
  | { readonly _tag: "Retry"; readonly response: HttpClientResponse.HttpClientResponse | undefined }

/** The bearer token and TEAM header on every request. */
export const authenticated = (options: TransportOptions) => {
  const token = Redacted.isRedacted(options.token) ? Redacted.value(options.token) : options.token
  const team = options.teamUid
  return (client: HttpClient.HttpClient): HttpClient.HttpClient =>
    HttpClient.mapRequestEffect(client, (request) =>
      Effect.map(FiberRef.get(extraUrlParams), (extra) => {
        let out = HttpClientRequest.bearerToken(request, token)
        if (team !== undefined && team !== "" && request.headers[Security.TEAM_HEADER] === undefined) {
          out = HttpClientRequest.setHeader(out, Security.TEAM_HEADER, team)
        }
        return extra.length === 0 ? out : HttpClientRequest.appendUrlParams(out, extra)
      }))
}

/** The idempotency key header (the server's creates honour it: docs/reference/idempotency.md). */
export const IDEMPOTENCY_HEADER = "idempotency-key"

/**
 * A fresh `Idempotency-Key` on every POST that does not carry one, set once before the retries
 * (`resilient` sends the same request again): a retried create is done at most once, and a repeat
 * of one that was done answers what it answered. Endpoints that take no key ignore the header.
 */
export const idempotent = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.mapRequest(client, (request) =>
    request.method !== "POST" || request.headers[IDEMPOTENCY_HEADER] !== undefined
      ? request
      : HttpClientRequest.setHeader(request, IDEMPOTENCY_HEADER, newKey()))

/** A random UUID (v4): `crypto.randomUUID` where there is one (it needs a secure context in browsers). */
const newKey = (): string => {
  if (typeof globalThis.crypto.randomUUID === "function") return globalThis.crypto.randomUUID()
  const b = globalThis.crypto.getRandomValues(new Uint8Array(16))
  b[6] = (b[6]! & 0x0f) | 0x40
  b[8] = (b[8]! & 0x3f) | 0x80
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/**
 * Whether an answer is to be retried: 429 and 503; and for a request with an idempotency key, a
 * 409 the server says is retryable (its first request with the key is still being handled).
 */
const retryable = (request: HttpClientRequest.HttpClientRequest, response: HttpClientResponse.HttpClientResponse) =>
  RETRY_STATUSES.has(response.status) ||
  (response.status === 409 && request.headers[IDEMPOTENCY_HEADER] !== undefined && response.headers["x-should-retry"] === "true")

/** Timeouts and retries (see the module documentation); `stream` leaves the body unread. */
export const resilient = (resolved: Settings, options: { readonly stream?: boolean } = {}) =>
(client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transform(client, (execute, request) => {
    const timeoutMs = Duration.toMillis(resolved.timeout)
    const timedOut = () =>
      new HttpClientError.RequestError({
        request,
        reason: "Transport",
        cause: new Cause.TimeoutException(`no answer within ${timeoutMs} ms`),
        description: `no answer within ${timeoutMs} ms (timeout)`
      })
    const attempt = (retriesLeft: boolean): Effect.Effect<Outcome, HttpClientError.HttpClientError> =>
      execute.pipe(
        Effect.flatMap((response): Effect.Effect<Outcome, HttpClientError.HttpClientError> => {
          if (retriesLeft && retryable(request, response)) {
            // Read (and drop) the body, so the connection can be used again.
            return Effect.as(Effect.ignore(response.arrayBuffer), { _tag: "Retry", response })
          }
          if (options.stream === true && response.status < 300) return Effect.succeed({ _tag: "Answer", response })
          return Effect.map(buffered(response), (answer) => ({ _tag: "Answer", response: answer }))
        }),
        Effect.catchIf(
          (error) => retriesLeft && isConnectionError(error),
          () => Effect.succeed<Outcome>({ _tag: "Retry", response: undefined })
        ),
        Effect.timeoutFail({ duration: resolved.timeout, onTimeout: timedOut })
      )
    const loop = (retry: number): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError> =>
      Effect.flatMap(attempt(retry < resolved.maxRetries), (outcome) => {
        if (outcome._tag === "Answer") return Effect.succeed(outcome.response)
        const wait = retryDelay(outcome.response?.headers["retry-after"], retry, resolved.maxRetryWait)
        return Effect.zipRight(Effect.sleep(Duration.millis(wait)), loop(retry + 1))
      })
    return loop(0)
  })
