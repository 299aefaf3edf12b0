/**
 * The Effect client of the Agent Runs API: `HttpApiClient.make(Api)` from `@agent-runs/api` (so
 * every endpoint, its parameters, answers and errors are typed by the API definition), on an
 * `HttpClient` that adds the bearer token, the TEAM header, a timeout per attempt and retries
 * (Transport.ts), plus what the derived client cannot do by itself:
 *
 * - `streamRuns` / `streamRunPages` / `listRunsPage`: the run list with every filter (the
 *   `metadata[<key>]` deepObject ones included), following `page_info.next_cursor`; `countRuns`:
 *   the counts by state of the runs the same filters select;
 * - `streamWebhookDeliveries`: a webhook's delivery log, page after page;
 * - `followRun`: a run's live events (`GET /api/v1/agent/runs/{runId}/events`, Server-Sent
 *   Events) as a stream of decoded timeline and conversation events, resumed with
 *   `Last-Event-ID` after a drop, ending with the run (the server's `end` event);
 * - `runTranscriptUrl` / `conversationTranscriptUrl`: the signed download URL a transcript
 *   endpoint redirects to (302), without following it; `runTranscriptLink`: the same URL of a
 *   run's transcript and when it expires, as JSON (`GET /agent/runs/{runId}/transcript-link`).
 *
 * Errors are those of the API: the core error classes of `@agent-runs/core` (`ResourceNotFound`,
 * `AuthenticationRequired`, …, decoded from the problem bodies), `HttpClientError` (no answer,
 * a timeout — see `isTimeout` —, an undeclared status) and `ParseError` (input that does not
 * fit the API's schemas, or an answer that does not).
 */
import {
  FetchHttpClient,
  type HttpApi,
  HttpApiClient,
  HttpClient,
  HttpClientError,
  HttpClientRequest,
  type HttpClientResponse
} from "@effect/platform"
import { type Errors, Ids, type Run, type RunQuery, type RunState, RunStream, Timeline, type Webhook } from "@agent-runs/core"
import { Api, type Models, Problems } from "@agent-runs/api"
import { Context, Duration, Effect, Layer, Option, type ParseResult, Schema, Stream } from "effect"
import * as Sse from "./Sse.js"
import * as Transport from "./Transport.js"

/** Where the server is, who calls it, and how patiently. */
export interface ClientOptions extends Transport.TransportOptions {
  /**
   * The server's base URL, e.g. `http://127.0.0.1:8080` (the API is under `/api/v1`; a URL
   * ending in `/api/v1` is accepted too).
   */
  readonly url: string | URL
}

/** The server's origin (and path prefix, if any) from a configured URL. */
export const baseUrlOf = (url: string | URL): string =>
  url.toString().replace(/\/+$/, "").replace(/\/api\/v1$/, "")

/** The client `HttpApiClient` derives from an `HttpApi`. */
export type ClientOf<A> = A extends HttpApi.HttpApi<infer _Id, infer Groups, infer E, infer _R>
  ? HttpApiClient.Client<Groups, E, never>
  : never

/** The client derived from the API definition: `client.<group>.<endpoint>(request)`. */
export type ApiClient = ClientOf<typeof Api.Api>

const makeApiClient = (
  baseUrl: string,
  options: ClientOptions,
  resolved: Transport.Settings
): Effect.Effect<ApiClient, never, HttpClient.HttpClient> =>
  HttpApiClient.make(Api.Api, {
    baseUrl,
    transformClient: (client) =>
      client.pipe(Transport.authenticated(options), Transport.resilient(resolved), Transport.idempotent)
  })

/** The failures of an API client method. */
export type ErrorOf<F> = F extends (...args: never) => Effect.Effect<unknown, infer E, unknown> ? E : never

/** The failures of `GET /agent/runs`. */
export type ListRunsError = ErrorOf<ApiClient["runs"]["listRuns"]>
/** The failures of `GET /agent/run-counts`. */
export type CountRunsError = ErrorOf<ApiClient["runs"]["countRuns"]>
/** The failures of `GET /agent/runs/{runId}/transcript-link`. */
export type TranscriptLinkError = ErrorOf<ApiClient["runs"]["getRunTranscriptLink"]>
/** The failures of `GET /agent/webhooks/{uid}/deliveries`. */
export type ListDeliveriesError = ErrorOf<ApiClient["webhooks"]["listWebhookDeliveries"]>
/** The failures of a transcript URL: those of the endpoint, or a 302 without a `Location`. */
export type TranscriptUrlError = ErrorOf<ApiClient["runs"]["getRunTranscript"]>
/** The failures of a run's event stream (`Sse.EventTooLarge`: an event over `Sse.MAX_EVENT_CHARS`). */
export type FollowRunError = Errors.ApiError | HttpClientError.HttpClientError | ParseResult.ParseError | Sse.EventTooLarge

/**
 * The run list's query (`GET /agent/runs`), with the API's parameter names. `state` may be one
 * state or several (any of them); `metadata` pairs are sent as `metadata[<key>]=<value>` (all must
 * match; needs the team feature metadata_filtering). Dates may be `Date`s or RFC 3339 strings.
 */
export interface RunListQuery {
  /** Page size, 1 to 500 (20). */
  readonly limit?: number | undefined
  /** Start after this `next_cursor` (with the same filters and sort). */
  readonly cursor?: string | undefined
  readonly sort_by?: RunQuery.RunSortBy | undefined
  readonly sort_order?: RunQuery.SortOrder | undefined
  readonly state?: RunState.RunState | ReadonlyArray<RunState.RunState> | undefined
  readonly name?: string | undefined
  readonly model_id?: string | undefined
  readonly creator?: string | undefined
  readonly executor?: string | undefined
  readonly source?: RunState.RunSourceType | undefined
  readonly execution_location?: RunState.RunExecutionLocation | undefined
  readonly created_after?: string | Date | undefined
  readonly created_before?: string | Date | undefined
  readonly updated_after?: string | Date | undefined
  readonly environment_id?: string | undefined
  readonly skill?: string | undefined
  readonly skill_spec?: string | undefined
  readonly schedule_id?: string | undefined
  readonly ancestor_run_id?: string | undefined
  readonly metadata?: Readonly<Record<string, string>> | undefined
  readonly artifact_type?: RunState.ArtifactType | undefined
  readonly q?: string | undefined
}

/** The run counts' query (`GET /agent/run-counts`): the run list's filters, without paging or sort. */
export type RunCountsQuery = Omit<RunListQuery, "limit" | "cursor" | "sort_by" | "sort_order">

type RunListUrlParams = Parameters<ApiClient["runs"]["listRuns"]>[0]["urlParams"]

/** The query as the endpoint's URL parameters, and the `metadata[<key>]` pairs beside them. */
export const runListParams = (query: RunListQuery): {
  readonly urlParams: RunListUrlParams
  readonly extra: ReadonlyArray<readonly [string, string]>
} => {
  const urlParams: Record<string, string | ReadonlyArray<string>> = {}
  const extra: Array<readonly [string, string]> = []
  for (const [key, value] of Object.entries(query) as Array<[string, unknown]>) {
    if (value === undefined || value === null) continue
    if (key === "metadata") {
      for (const [name, text] of Object.entries(value as Record<string, string>)) extra.push([`metadata[${name}]`, text])
    } else if (Array.isArray(value)) {
      urlParams[key] = value.map(String)
    } else {
      urlParams[key] = value instanceof Date ? value.toISOString() : String(value)
    }
  }
  return { urlParams: urlParams as RunListUrlParams, extra }
}

/** The options of `followRun`. */
export interface FollowRunOptions {
  /**
   * Resume after this event id (an event's `id`, `T-C`; a bare timeline `sequence` resumes the
   * timeline after it with the whole conversation): sent as `Last-Event-ID`.
   */
  readonly lastEventId?: string | undefined
  /**
   * The stream always ends when the run has ended: after its last events, at the server's `end`
   * event (a follow-up that continues the run later needs a new stream). With `untilEnded` it
   * ends at the run's terminal timeline event already (run_succeeded, run_failed, run_blocked,
   * run_errored, run_cancelled), before conversation events sent after it.
   */
  readonly untilEnded?: boolean | undefined
  /**
   * Reconnect (with `Last-Event-ID`) when the connection drops or the server closes the stream
   * before the run's end (true). At most `maxRetries` reconnections in a row without an event in
   * between; then the stream fails with the last error. Without, a drop fails the stream and a
   * close ends it.
   */
  readonly reconnect?: boolean | undefined
  /** How long the stream may stay silent (the server sends a comment every 15 s) before it counts as dropped (60 s). */
  readonly idleTimeout?: Duration.DurationInput | undefined
}

/**
 * One event of a run's stream, with its SSE id (`T-C`: the timeline sequence and the number of
 * conversation events so far), to resume after (`lastEventId`): a timeline event, or an
 * operation of the run's conversation (core's `RunStream.ConversationEvent`).
 */
export type RunEvent =
  | { readonly id: string; readonly event: "timeline"; readonly data: Timeline.TimelineEvent }
  | { readonly id: string; readonly event: "conversation"; readonly data: RunStream.ConversationEvent }

/** The timeline events that end a run. */
/** The shortest wait before reconnecting, whatever the stream's `retry` says (`retry: 0` would reconnect in a tight loop). */
export const MIN_RETRY_MS = 500

export const TERMINAL_EVENTS: ReadonlySet<Timeline.TimelineEventType> = new Set<Timeline.TimelineEventType>([
  "run_succeeded",
  "run_failed",
  "run_blocked",
  "run_errored",
  "run_cancelled"
])

/** What the client adds to the derived one. */
export interface Extensions {
  /** One page of runs, with every filter of `RunListQuery`. */
  readonly listRunsPage: (query?: RunListQuery) => Effect.Effect<Run.ListRunsResponse, ListRunsError>
  /** Every page of runs from `query.cursor` (or the first), following `page_info.next_cursor`. */
  readonly streamRunPages: (query?: RunListQuery) => Stream.Stream<Run.ListRunsResponse, ListRunsError>
  /** Every run of every page. */
  readonly streamRuns: (query?: RunListQuery) => Stream.Stream<Run.RunItem, ListRunsError>
  /** How many runs the list's filters select, by state (every state), and their total. */
  readonly countRuns: (query?: RunCountsQuery) => Effect.Effect<Run.RunCountsResponse, CountRunsError>
  /** Every delivery of a webhook's log, newest first, page after page (`limit` per page). */
  readonly streamWebhookDeliveries: (
    uid: string,
    options?: { readonly limit?: number | undefined }
  ) => Stream.Stream<Webhook.Delivery, ListDeliveriesError>
  /** A run's live events (Server-Sent Events), decoded; see `FollowRunOptions`. */
  readonly followRun: (runId: string, options?: FollowRunOptions) => Stream.Stream<RunEvent, FollowRunError>
  /** The signed, expiring URL of a run's raw transcript (needs no token). */
  readonly runTranscriptUrl: (runId: string) => Effect.Effect<string, TranscriptUrlError>
  /** The same URL and when it expires, as the API answers it (no redirect involved). */
  readonly runTranscriptLink: (runId: string) => Effect.Effect<Models.TranscriptLinkResponse, TranscriptLinkError>
  /** The signed, expiring URL of a conversation's raw transcript (needs no token). */
  readonly conversationTranscriptUrl: (conversationId: string) => Effect.Effect<string, TranscriptUrlError>
}

/** The client: every endpoint of the API by group (`client.runs.getRun(…)`), and the extensions. */
export type Service = ApiClient & Extensions

/** The client as a service. */
export class AgentRunsClient extends Context.Tag("@agent-runs/client/AgentRunsClient")<AgentRunsClient, Service>() {}

/** Every problem body the API sends, decoded into its core error. */
const ProblemBody = Schema.Union(
  Problems.InvalidRequest,
  Problems.AuthenticationRequired,
  Problems.NotAuthorized,
  Problems.FeatureNotAvailable,
  Problems.ResourceNotFound,
  Problems.Conflict,
  Problems.OperationNotSupported,
  Problems.RateLimited,
  Problems.PayloadTooLarge,
  Problems.MethodNotAllowed,
  Problems.UnsupportedMediaType,
  Problems.InternalError,
  Problems.ResourceUnavailable
)
const decodeProblem = Schema.decodeUnknown(Schema.parseJson(ProblemBody))

/** The failure of an answer that is not a success: its problem as a core error, else a status error. */
const failWithProblem = (
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<never, Errors.ApiError | HttpClientError.HttpClientError> =>
  Effect.flatMap(Effect.orElseSucceed(response.text, () => ""), (text) =>
    decodeProblem(text).pipe(
      Effect.orElseFail(() =>
        new HttpClientError.ResponseError({
          request: response.request,
          response,
          reason: "StatusCode",
          description: `the server answered ${response.status}`
        })
      ),
      Effect.flatMap(Effect.fail)
    ))

const decodeTimelineEvent = Schema.decodeUnknown(Schema.parseJson(Timeline.TimelineEvent))
const decodeConversationEvent = Schema.decodeUnknown(Schema.parseJson(RunStream.ConversationEvent))
const decodeRunId = Schema.decodeUnknown(Ids.RunId)
const decodeConversationId = Schema.decodeUnknown(Ids.ConversationId)
const decodeWebhookUid = Schema.decodeUnknown(Ids.WebhookUid)

/** A dropped event stream (its body failed or went silent), to reconnect. */
class Dropped {
  readonly _tag = "Dropped"
  constructor(readonly error: HttpClientError.HttpClientError) {}
}

/** The client, on the `HttpClient` of the context (e.g. `FetchHttpClient.layer`). */
export const make = (options: ClientOptions): Effect.Effect<Service, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const resolved = Transport.settings(options)
    const baseUrl = baseUrlOf(options.url)
    const api = yield* makeApiClient(baseUrl, options, resolved)
    const streaming = (yield* HttpClient.HttpClient).pipe(
      Transport.authenticated(options),
      Transport.resilient(resolved, { stream: true }),
      HttpClient.mapRequest(HttpClientRequest.prependUrl(baseUrl))
    )

    const listRunsPage = (query: RunListQuery = {}) => {
      const { extra, urlParams } = runListParams(query)
      return api.runs.listRuns({ headers: {}, urlParams }).pipe(Effect.locally(Transport.extraUrlParams, extra))
    }

    const countRuns = (query: RunCountsQuery = {}) => {
      const { extra, urlParams } = runListParams(query)
      return api.runs.countRuns({ headers: {}, urlParams }).pipe(Effect.locally(Transport.extraUrlParams, extra))
    }

    const streamRunPages = (query: RunListQuery = {}) =>
      Stream.paginateEffect(query.cursor, (cursor) =>
        Effect.map(listRunsPage({ ...query, cursor }), (page) =>
          [page, nextCursor(page.page_info)] as const))

    const streamWebhookDeliveries = (uid: string, options: { readonly limit?: number | undefined } = {}) =>
      Stream.unwrap(
        Effect.map(decodeWebhookUid(uid), (webhookUid) =>
          Stream.paginateEffect(undefined as string | undefined, (cursor) =>
            Effect.map(
              api.webhooks.listWebhookDeliveries({
                headers: {},
                path: { uid: webhookUid },
                urlParams: {
                  ...(options.limit === undefined ? {} : { limit: options.limit }),
                  ...(cursor === undefined ? {} : { cursor })
                }
              }),
              (page) => [page.deliveries, nextCursor(page.page_info)] as const
            )).pipe(Stream.flattenIterables))
      )

    const transcriptUrl = (
      call: Effect.Effect<readonly [void, HttpClientResponse.HttpClientResponse], TranscriptUrlError>
    ): Effect.Effect<string, TranscriptUrlError> =>
      Effect.gen(function*() {
        // fetch would follow the redirect (and download the transcript): keep the 302.
        const init = Option.getOrElse(yield* Effect.serviceOption(FetchHttpClient.RequestInit), () => ({}))
        const [, response] = yield* Effect.provideService(call, FetchHttpClient.RequestInit, { ...init, redirect: "manual" })
        const location = response.headers["location"]
        if (location === undefined) {
          return yield* new HttpClientError.ResponseError({
            request: response.request,
            response,
            reason: "Decode",
            description: "the transcript redirect has no Location header"
          })
        }
        return new URL(location, `${baseUrl}/`).toString()
      })

    const followRun = (runId: string, follow: FollowRunOptions = {}): Stream.Stream<RunEvent, FollowRunError> =>
      Stream.suspend(() => {
        const reconnect = follow.reconnect ?? true
        const idle = follow.idleTimeout === undefined ? Duration.seconds(60) : Duration.decode(follow.idleTimeout)
        let lastEventId = follow.lastEventId
        let retryMs: number | undefined
        let drops = 0
        /** Whether the server said the run ended (`end`): the stream ends, no reconnection. */
        let ended = false
        let dropError: HttpClientError.HttpClientError | undefined
        const request = () => {
          const base = HttpClientRequest.get(`/api/v1/agent/runs/${encodeURIComponent(runId)}/events`).pipe(
            HttpClientRequest.setHeader("accept", "text/event-stream")
          )
          return lastEventId === undefined ? base : HttpClientRequest.setHeader(base, "last-event-id", lastEventId)
        }
        /** One connection: its events until it ends or drops (recorded in `dropError`). */
        const connection = Stream.unwrap(
          Effect.gen(function*() {
            const sent = request()
            const response = yield* streaming.execute(sent)
            if (response.status !== 200) return yield* failWithProblem(response)
            dropError = undefined
            const body = response.stream.pipe(
              Stream.mapError((error) => new Dropped(error)),
              Stream.timeoutFail(
                () =>
                  new Dropped(
                    new HttpClientError.RequestError({
                      request: sent,
                      reason: "Transport",
                      description: `the event stream was silent for ${Duration.format(idle)}`
                    })
                  ),
                idle
              )
            )
            return Sse.events(body, { lastEventId })
          })
        ).pipe(
          Stream.takeUntil((event) => event.event === "end"),
          Stream.tap((event) =>
            Effect.sync(() => {
              if (event.event === "end") ended = true
              else if (event.id !== undefined) lastEventId = event.id
              if (event.retry !== undefined) retryMs = event.retry
              drops = 0
            })
          ),
          Stream.catchAll((error): Stream.Stream<never, FollowRunError> => {
            if (error instanceof Dropped) {
              dropError = error.error
              return Stream.empty
            }
            return Stream.fail(error)
          })
        )
        const connections = (): Stream.Stream<Sse.SseEvent, FollowRunError> =>
          Stream.concat(
            connection,
            Stream.suspend(() => {
              if (ended) return Stream.empty
              if (!reconnect) return dropError === undefined ? Stream.empty : Stream.fail(dropError)
              if (drops >= resolved.maxRetries) {
                return Stream.fail(
                  dropError ??
                    new HttpClientError.RequestError({
                      request: request(),
                      reason: "Transport",
                      description: `the event stream closed ${drops + 1} times without an event`
                    })
                )
              }
              const wait = retryMs === undefined
                ? Transport.retryDelay(undefined, drops, resolved.maxRetryWait)
                : Math.min(Math.max(retryMs, MIN_RETRY_MS), Duration.toMillis(resolved.maxRetryWait))
              drops++
              return Stream.concat(Stream.drain(Stream.fromEffect(Effect.sleep(Duration.millis(wait)))), connections())
            })
          )
        // Events of other kinds (`end`, and any a newer server adds) are not the caller's.
        const events = connections().pipe(
          Stream.filterMapEffect((event): Option.Option<Effect.Effect<RunEvent, ParseResult.ParseError>> =>
            event.event === "timeline"
              ? Option.some(Effect.map(decodeTimelineEvent(event.data), (data) => ({
                id: event.id ?? String(data.sequence),
                event: "timeline" as const,
                data
              })))
              : event.event === "conversation"
              ? Option.some(Effect.map(decodeConversationEvent(event.data), (data) => ({
                id: event.id ?? "",
                event: "conversation" as const,
                data
              })))
              : Option.none()
          )
        )
        return follow.untilEnded === true
          ? Stream.takeUntil(events, (event) => event.event === "timeline" && TERMINAL_EVENTS.has(event.data.event_type))
          : events
      })

    const extensions: Extensions = {
      listRunsPage,
      streamRunPages,
      streamRuns: (query) => Stream.flatMap(streamRunPages(query), (page) => Stream.fromIterable(page.runs)),
      countRuns,
      streamWebhookDeliveries,
      followRun,
      runTranscriptUrl: (runId) =>
        Effect.flatMap(
          decodeRunId(runId),
          (id) => transcriptUrl(api.runs.getRunTranscript({ headers: {}, path: { runId: id }, withResponse: true }))
        ),
      runTranscriptLink: (runId) =>
        Effect.flatMap(decodeRunId(runId), (id) => api.runs.getRunTranscriptLink({ headers: {}, path: { runId: id } })),
      conversationTranscriptUrl: (conversationId) =>
        Effect.flatMap(decodeConversationId(conversationId), (id) =>
          transcriptUrl(
            api.conversations.getConversationTranscript({ headers: {}, path: { conversation_id: id }, withResponse: true })
          ))
    }
    return { ...api, ...extensions }
  })

/** The next page's cursor, when there is one. */
const nextCursor = (pageInfo: { readonly has_next_page: boolean; readonly next_cursor?: string | undefined }) =>
  pageInfo.has_next_page && pageInfo.next_cursor !== undefined && pageInfo.next_cursor !== ""
    ? Option.some(pageInfo.next_cursor)
    : Option.none()

/** The client as a layer, on the `HttpClient` of the context. */
export const layer = (options: ClientOptions): Layer.Layer<AgentRunsClient, never, HttpClient.HttpClient> =>
  Layer.effect(AgentRunsClient, make(options))

/** The client as a layer on `fetch` (`FetchHttpClient`). */
export const layerFetch = (options: ClientOptions): Layer.Layer<AgentRunsClient> =>
  Layer.provide(layer(options), FetchHttpClient.layer)

export { isConnectionError, isTimeout } from "./Transport.js"
