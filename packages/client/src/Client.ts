/**
 * The Promise client: `createClient({ url, token })` runs the Effect client (AgentRunsClient.ts)
 * on `fetch` and answers plain JSON, exactly as the API sends it (snake_case fields, RFC 3339
 * strings), typed by the API's schemas (their encoded side). Request bodies are that JSON too;
 * they are checked against the API's schemas before they are sent (a `BadRequestError` without
 * `status` when they do not fit).
 *
 * Failures are the error classes of Errors.ts; list methods answer a `Paginated` (async iterable
 * over items, `.pages()` over pages); `runs.events` is an async iterable over a run's live events.
 */
import { FetchHttpClient, HttpClientError } from "@effect/platform"
import {
  Agent,
  Audit,
  Automation,
  Conversation,
  Environment,
  Errors as CoreErrors,
  Followups,
  Ids,
  Identity,
  Run,
  RunStream,
  Schedule,
  Secret,
  Timeline,
  Webhook,
  Worker
} from "@agent-runs/core"
import type { AuditApi} from "@agent-runs/api";
import { Models, Problems } from "@agent-runs/api"
import { Cause, Effect, Exit, ParseResult, Schema, Stream } from "effect"
import * as AgentRunsClient from "./AgentRunsClient.js"
import {
  AgentRunsError,
  BadRequestError,
  ConnectionError,
  fromAnswer,
  TimeoutError
} from "./Errors.js"
import * as Transport from "./Transport.js"

/** The JSON form of a schema's values (what the API sends and takes). */
export type Json<S extends Schema.Schema.Any> = Schema.Schema.Encoded<S>

export type RunItem = Json<typeof Run.RunItem>
export type ListRunsResponse = Json<typeof Run.ListRunsResponse>
export type RunCountsResponse = Json<typeof Run.RunCountsResponse>
export type TranscriptLinkResponse = Json<typeof Models.TranscriptLinkResponse>
export type RunAgentRequest = Json<typeof Run.RunAgentRequest>
export type RunAgentResponse = Json<typeof Run.RunAgentResponse>
export type RunFollowupRequest = Json<typeof Run.RunFollowupRequest>
export type RunFollowupResponse = Json<typeof Followups.RunFollowupResponse>
export type RunTimeline = Json<typeof Timeline.RunTimeline>
export type TimelineEvent = Json<typeof Timeline.TimelineEvent>
/** An operation of a run's conversation as the event stream sends it (docs/reference/api.md). */
export type ConversationEvent = Json<typeof RunStream.ConversationEvent>
export type ConversationResponse = Json<typeof Conversation.ConversationResponse>
export type RunByExternalReferenceResponse = Json<typeof Models.RunByExternalReferenceResponse>
export type DeleteResponse = Json<typeof Models.DeleteResponse>
export type ScheduledAgentItem = Json<typeof Schedule.ScheduledAgentItem>
export type CreateScheduledAgentRequest = Json<typeof Schedule.CreateScheduledAgentRequest>
export type UpdateScheduledAgentRequest = Json<typeof Schedule.UpdateScheduledAgentRequest>
export type ListScheduledAgentsResponse = Json<typeof Schedule.ListScheduledAgentsResponse>
export type PreviewScheduleRequest = Json<typeof Schedule.PreviewScheduleRequest>
export type SchedulePreview = Json<typeof Schedule.SchedulePreview>
export type DeleteScheduledAgentResponse = Json<typeof Schedule.DeleteScheduledAgentResponse>
export type EnvironmentItem = Json<typeof Environment.Environment>
export type CreateEnvironmentRequest = Json<typeof Environment.CreateEnvironmentRequest>
export type UpdateEnvironmentRequest = Json<typeof Environment.UpdateEnvironmentRequest>
export type ListEnvironmentsResponse = Json<typeof Environment.ListEnvironmentsResponse>
export type ListEnvironmentsQuery = typeof Models.ListEnvironmentsUrlParams.Type
export type WebhookItem = Json<typeof Webhook.Webhook>
export type WebhookWithSecret = Json<typeof Webhook.WebhookWithSecret>
export type CreateWebhookRequest = Json<typeof Webhook.CreateWebhookRequest>
export type PatchWebhookRequest = Json<typeof Webhook.PatchWebhookRequest>
export type CheckWebhookSecretRequest = Json<typeof Webhook.CheckWebhookSecretRequest>
export type CheckWebhookSecretResponse = Json<typeof Webhook.CheckWebhookSecretResponse>
export type ListWebhooksResponse = Json<typeof Webhook.ListWebhooksResponse>
export type Delivery = Json<typeof Webhook.Delivery>
export type ListDeliveriesResponse = Json<typeof Webhook.ListDeliveriesResponse>
export type AutomationItem = Json<typeof Automation.Automation>
export type CreateAutomationRequest = Json<typeof Automation.CreateAutomationRequest>
export type UpdateAutomationRequest = Json<typeof Automation.UpdateAutomationRequest>
export type ListAutomationsResponse = Json<typeof Automation.ListAutomationsResponse>
export type TestFilterRequest = Json<typeof Automation.TestFilterRequest>
export type TestFilterResult = Json<typeof Automation.TestFilterResult>
export type SecretMetadata = Json<typeof Secret.SecretMetadata>
export type PutSecretRequest = Json<typeof Secret.PutSecretRequest>
export type ListSecretsResponse = Json<typeof Secret.ListSecretsResponse>
export type ListAgentsResponse = Json<typeof Agent.ListAgentsResponse>
export type ListAgentsQuery = typeof Models.ListAgentsUrlParams.Type
export type AuditLogPage = Json<typeof Audit.AuditLogPage>
export type AuditEntry = Json<typeof Audit.AuditEntry>
/** The audit log's filters and paging (`limit`, `cursor`), as strings; `team_uid` for the whole log only. */
export type AuditLogQuery = typeof AuditApi.AdminAuditUrlParams.Type
export type ListConnectedWorkersResponse = Json<typeof Worker.ListConnectedWorkersResponse>
export type Team = Json<typeof Identity.Team>
export type CreateTeamRequest = Json<typeof Identity.CreateTeamRequest>
export type PatchTeamRequest = Json<typeof Identity.PatchTeamRequest>
export type ListTeamsResponse = Json<typeof Identity.ListTeamsResponse>
export type Principal = Json<typeof Identity.Principal>
export type CreatePrincipalRequest = Json<typeof Identity.CreatePrincipalRequest>
export type CreateTokenRequest = Json<typeof Identity.CreateTokenRequest>
export type CreateTokenResponse = Json<typeof Identity.CreateTokenResponse>
export type MeResponse = Json<typeof Identity.MeResponse>

export type RunListQuery = AgentRunsClient.RunListQuery
export type RunCountsQuery = AgentRunsClient.RunCountsQuery

/** Options of `createClient`. */
export interface CreateClientOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8080` (a URL ending in `/api/v1` is accepted too). */
  readonly url: string | URL
  /** An API token (`ar_…`), sent as `Authorization: Bearer <token>`. */
  readonly token: string
  /** The team to act in (`X-Team-Uid`); the token's first team when absent. */
  readonly teamUid?: string | undefined
  /** The timeout of each attempt of a request, in milliseconds (60,000). */
  readonly timeoutMs?: number | undefined
  /** How many times a request answered 429 or 503, or not answered, is sent again (2). */
  readonly maxRetries?: number | undefined
  /** The longest wait before a retry, whatever `Retry-After` says, in milliseconds (30,000). */
  readonly maxRetryWaitMs?: number | undefined
  /** The `fetch` to use (globalThis.fetch). */
  readonly fetch?: typeof globalThis.fetch | undefined
}

/** A list: `for await` over its items (every page), or `.pages()` for one page at a time. */
export interface Paginated<Item, Page> extends AsyncIterable<Item> {
  /** The pages, following `page_info.next_cursor` until `has_next_page` is false. */
  pages(): AsyncIterableIterator<Page>
}

/**
 * One event of a run's live stream with its SSE id (`T-C`: pass it as `lastEventId` to resume
 * after it): a timeline event, or an operation of the run's conversation.
 */
export type RunEvent =
  | { readonly id: string; readonly event: "timeline"; readonly data: TimelineEvent }
  | { readonly id: string; readonly event: "conversation"; readonly data: ConversationEvent }

/** Options of `runs.events`. */
export interface RunEventsOptions {
  /** Resume after this event id (sent as `Last-Event-ID`). */
  readonly lastEventId?: string | undefined
  /** Stops the iteration (it ends without an error) and closes the connection. */
  readonly signal?: AbortSignal | undefined
  /**
   * The iteration always ends with the run (after its last events). With `untilEnded` it ends at
   * the run's terminal timeline event already (run_succeeded, run_failed, run_blocked,
   * run_errored, run_cancelled), before conversation events sent after it.
   */
  readonly untilEnded?: boolean | undefined
  /** Reconnect with `Last-Event-ID` when the connection drops before the run's end (true). */
  readonly reconnect?: boolean | undefined
}

/**
 * Options of a create that takes an `Idempotency-Key`: `idempotencyKey`, to send a key of your own
 * (the same with each of your retries of the create); without one, each call sends a fresh key.
 */
export interface IdempotentOptions {
  readonly idempotencyKey?: string | undefined
}

/** The Promise client. */
export interface AgentRunsClientPromise {
  readonly runs: {
    /** `POST /agent/runs` */
    create(body: RunAgentRequest, options?: IdempotentOptions): Promise<RunAgentResponse>
    /** `GET /agent/runs`, every page: `for await (const run of client.runs.list({ state: ["QUEUED"] }))`. */
    list(query?: RunListQuery): Paginated<RunItem, ListRunsResponse>
    /** `GET /agent/runs`, one page. */
    listPage(query?: RunListQuery): Promise<ListRunsResponse>
    /** `GET /agent/run-counts`: how many runs the list's filters select, by state, and their total. */
    counts(query?: RunCountsQuery): Promise<RunCountsResponse>
    /** `GET /agent/runs/{runId}` */
    get(runId: string): Promise<RunItem>
    /** `POST /agent/runs/{runId}/cancel`: the run id. */
    cancel(runId: string): Promise<string>
    /** `POST /agent/runs/{runId}/followups` */
    followup(runId: string, body: RunFollowupRequest, options?: IdempotentOptions): Promise<RunFollowupResponse>
    /** `GET /agent/runs/{runId}/conversation` */
    conversation(runId: string): Promise<ConversationResponse>
    /** `GET /agent/runs/{runId}/timeline` */
    timeline(runId: string): Promise<RunTimeline>
    /** The signed, expiring URL `GET /agent/runs/{runId}/transcript` redirects to (needs no token). */
    transcriptUrl(runId: string): Promise<string>
    /** `GET /agent/runs/{runId}/transcript-link`: the same signed URL and when it expires, as JSON. */
    transcriptLink(runId: string): Promise<TranscriptLinkResponse>
    /** `GET /agent/run-by-external-reference?url=` */
    byExternalReference(url: string): Promise<RunByExternalReferenceResponse>
    /** `GET /agent/runs/{runId}/events` (Server-Sent Events): the run's timeline events as they happen. */
    events(runId: string, options?: RunEventsOptions): AsyncIterable<RunEvent>
  }
  readonly conversations: {
    get(conversationId: string): Promise<ConversationResponse>
    transcriptUrl(conversationId: string): Promise<string>
  }
  readonly schedules: {
    create(body: CreateScheduledAgentRequest): Promise<ScheduledAgentItem>
    list(): Promise<ListScheduledAgentsResponse>
    get(scheduleId: string): Promise<ScheduledAgentItem>
    update(scheduleId: string, body: UpdateScheduledAgentRequest): Promise<ScheduledAgentItem>
    delete(scheduleId: string): Promise<DeleteScheduledAgentResponse>
    pause(scheduleId: string): Promise<ScheduledAgentItem>
    resume(scheduleId: string): Promise<ScheduledAgentItem>
    /** `POST /agent/schedules/{scheduleId}/run`: one run of the schedule now (paused or not), answered as a creation. */
    run(scheduleId: string): Promise<RunAgentResponse>
    /** `POST /agent/schedules/preview`: a cron expression in words and its next fire times. */
    preview(body: PreviewScheduleRequest): Promise<SchedulePreview>
  }
  readonly environments: {
    list(query?: ListEnvironmentsQuery): Promise<ListEnvironmentsResponse>
    create(body: CreateEnvironmentRequest): Promise<EnvironmentItem>
    get(uid: string): Promise<EnvironmentItem>
    update(uid: string, body: UpdateEnvironmentRequest): Promise<EnvironmentItem>
    delete(uid: string): Promise<DeleteResponse>
  }
  readonly webhooks: {
    create(body: CreateWebhookRequest): Promise<WebhookWithSecret>
    list(): Promise<ListWebhooksResponse>
    get(uid: string): Promise<WebhookItem>
    update(uid: string, body: PatchWebhookRequest): Promise<WebhookItem>
    delete(uid: string): Promise<DeleteResponse>
    rotateSecret(uid: string): Promise<WebhookWithSecret>
    checkSecret(body: CheckWebhookSecretRequest): Promise<CheckWebhookSecretResponse>
    /** The delivery log, newest first, every page (`limit` per page, 1–100). */
    listDeliveries(
      uid: string,
      query?: { readonly limit?: number | undefined; readonly cursor?: string | undefined }
    ): Paginated<Delivery, ListDeliveriesResponse>
    getDelivery(uid: string, deliveryId: string): Promise<Delivery>
  }
  readonly automations: {
    create(body: CreateAutomationRequest): Promise<AutomationItem>
    list(): Promise<ListAutomationsResponse>
    get(id: string): Promise<AutomationItem>
    update(id: string, body: UpdateAutomationRequest): Promise<AutomationItem>
    delete(id: string): Promise<DeleteResponse>
    /** `POST /agent/automations/{id}/test-filter`: `{ delivery_id }` (a logged delivery) or `{ payload }` (a pasted body). */
    testFilter(id: string, body: TestFilterRequest): Promise<TestFilterResult>
  }
  readonly secrets: {
    list(): Promise<ListSecretsResponse>
    put(name: string, body: PutSecretRequest): Promise<SecretMetadata>
    delete(name: string): Promise<DeleteResponse>
  }
  readonly agents: {
    list(query?: ListAgentsQuery): Promise<ListAgentsResponse>
    connectedWorkers(): Promise<ListConnectedWorkersResponse>
  }
  readonly identity: {
    /** `GET /agent/me`: the caller's principal and the teams it may act in. */
    me(): Promise<MeResponse>
  }
  readonly audit: {
    /** `GET /agent/audit-log`: a page of the team's audit log, newest first (team admins). */
    list(query?: Omit<AuditLogQuery, "team_uid">): Promise<AuditLogPage>
    /** `GET /admin/audit-log`: a page of the whole audit log, newest first (instance administrators). */
    listAll(query?: AuditLogQuery): Promise<AuditLogPage>
  }
  readonly admin: {
    createTeam(body: CreateTeamRequest): Promise<Team>
    listTeams(): Promise<ListTeamsResponse>
    updateTeam(uid: string, body: PatchTeamRequest): Promise<Team>
    createPrincipal(body: CreatePrincipalRequest): Promise<Principal>
    createToken(principalUid: string, body: CreateTokenRequest): Promise<CreateTokenResponse>
    revokeToken(tokenId: string): Promise<DeleteResponse>
  }
}

const problemSchemas: Record<CoreErrors.ApiError["_tag"], Schema.Schema<CoreErrors.ApiError, unknown>> = {
  InvalidRequest: Problems.InvalidRequest,
  AuthenticationRequired: Problems.AuthenticationRequired,
  NotAuthorized: Problems.NotAuthorized,
  FeatureNotAvailable: Problems.FeatureNotAvailable,
  ResourceNotFound: Problems.ResourceNotFound,
  Conflict: Problems.Conflict,
  OperationNotSupported: Problems.OperationNotSupported,
  RateLimited: Problems.RateLimited,
  PayloadTooLarge: Problems.PayloadTooLarge,
  MethodNotAllowed: Problems.MethodNotAllowed,
  UnsupportedMediaType: Problems.UnsupportedMediaType,
  InternalError: Problems.InternalError,
  ResourceUnavailable: Problems.ResourceUnavailable
} as unknown as Record<CoreErrors.ApiError["_tag"], Schema.Schema<CoreErrors.ApiError, unknown>>

const isCoreError = (error: unknown): error is CoreErrors.ApiError =>
  Schema.is(CoreErrors.ApiError)(error)

/** The body of an answer: its JSON, else its text, else undefined. */
const parseBody = (bytes: Uint8Array | undefined): unknown => {
  if (bytes === undefined || bytes.byteLength === 0) return undefined
  const text = new TextDecoder().decode(bytes)
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** A failure of the Effect client as an error of this one; `exchange` is what the last attempt answered. */
export const toAgentRunsError = (error: unknown, exchange: Transport.Exchange = {}): AgentRunsError => {
  if (error instanceof AgentRunsError) return error
  if (Transport.isTimeout(error)) {
    return new TimeoutError({ message: (error as HttpClientError.RequestError).message, cause: error })
  }
  if (Transport.isConnectionError(error)) {
    return new ConnectionError({ message: (error as HttpClientError.RequestError).message, cause: error })
  }
  const status = exchange.status
  const message = error instanceof Error ? error.message : String(error)
  if (status !== undefined && status >= 400) {
    return fromAnswer({
      status,
      body: parseBody(exchange.body),
      headers: exchange.headers,
      message: isCoreError(error) ? error.message : undefined,
      cause: error
    })
  }
  if (isCoreError(error)) {
    // An error answer this client did not see (none was recorded): its problem, rebuilt.
    const body = Schema.encodeUnknownSync(problemSchemas[error._tag])(error)
    return fromAnswer({ status: Problems.statusOf[error.errorCode], body, message: error.message, cause: error })
  }
  if (ParseResult.isParseError(error) || HttpClientError.isHttpClientError(error)) {
    return new AgentRunsError({
      message: `unexpected answer${status === undefined ? "" : ` (${status})`}: ${message}`,
      status,
      body: parseBody(exchange.body),
      headers: exchange.headers,
      cause: error
    })
  }
  return new AgentRunsError({ message, cause: error })
}

/** Input the client checks before sending: decoded by the API's schema, or a `BadRequestError`. */
const input = <A, I>(schema: Schema.Schema<A, I>, value: unknown, what: string): Effect.Effect<A, BadRequestError> =>
  Effect.mapError(
    Schema.decodeUnknown(schema)(value),
    (error) =>
      new BadRequestError({
        message: `${what}: ${ParseResult.TreeFormatter.formatErrorSync(error)} (not sent)`,
        errorCode: "invalid_request",
        cause: error
      })
  )

/** Follows `page_info.next_cursor` from `cursor`. */
const paginated = <
  Item,
  Page extends { readonly page_info: { readonly has_next_page: boolean; readonly next_cursor?: string | undefined } }
>(
  fetchPage: (cursor: string | undefined) => Promise<Page>,
  itemsOf: (page: Page) => ReadonlyArray<Item>,
  cursor: string | undefined
): Paginated<Item, Page> => {
  async function* pages(): AsyncGenerator<Page> {
    let next = cursor
    for (;;) {
      const page = await fetchPage(next)
      yield page
      const { has_next_page, next_cursor } = page.page_info
      if (!has_next_page || next_cursor === undefined || next_cursor === "") return
      next = next_cursor
    }
  }
  return {
    pages,
    async *[Symbol.asyncIterator]() {
      for await (const page of pages()) yield* itemsOf(page)
    }
  }
}

/** Ends when the signal aborts. */
const aborted = (signal: AbortSignal): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (signal.aborted) return resume(Effect.void)
    const onAbort = () => resume(Effect.void)
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  })

/** The Promise client of a server. */
export const createClient = (options: CreateClientOptions): AgentRunsClientPromise => {
  // Callers without the type checker: say what is missing now, not at the first call.
  if (typeof options.token !== "string" || options.token === "") {
    throw new TypeError("createClient: options.token is required: an API token (ar_…)")
  }
  if (typeof options.url !== "string" || !URL.canParse(options.url)) {
    throw new TypeError(`createClient: options.url must be the server's absolute URL, not ${options.url}`)
  }
  const service = Effect.runSync(
    AgentRunsClient.make({
      url: options.url,
      token: options.token,
      teamUid: options.teamUid,
      maxRetries: options.maxRetries,
      timeout: options.timeoutMs,
      maxRetryWait: options.maxRetryWaitMs
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )
  const customFetch = options.fetch

  /** Runs a call; its failure (with what the server answered) becomes an AgentRunsError. */
  const run = async <A>(effect: Effect.Effect<A, unknown>): Promise<A> => {
    const exchange: Transport.Exchange = {}
    const withFetch = customFetch === undefined ? effect : Effect.provideService(effect, FetchHttpClient.Fetch, customFetch)
    const exit = await Effect.runPromiseExit(
      withFetch.pipe(
        Effect.mapError((error) => toAgentRunsError(error, exchange)),
        Effect.locally(Transport.currentExchange, exchange)
      )
    )
    if (Exit.isSuccess(exit)) return exit.value
    throw Cause.squash(exit.cause)
  }
  /** Runs a call and answers its result as JSON. */
  const call = <A, I>(output: Schema.Schema<A, I>, effect: Effect.Effect<A, unknown>): Promise<I> =>
    run(Effect.flatMap(effect, Schema.encode(output)))

  const headers = {}
  /** The headers of a create: the caller's idempotency key, when it gave one. */
  const keyed = (options: IdempotentOptions | undefined) =>
    options?.idempotencyKey === undefined ? headers : { [Transport.IDEMPOTENCY_HEADER]: options.idempotencyKey }
  const runId = (id: string) => Effect.map(input(Ids.RunId, id, "runId"), (runId) => ({ runId }))
  const scheduleId = (id: string) => Effect.map(input(Ids.ScheduleId, id, "scheduleId"), (scheduleId) => ({ scheduleId }))
  const environmentUid = (id: string) => Effect.map(input(Ids.EnvironmentUid, id, "uid"), (uid) => ({ uid }))
  const webhookUid = (id: string) => Effect.map(input(Ids.WebhookUid, id, "uid"), (uid) => ({ uid }))
  const automationId = (id: string) => Effect.map(input(Ids.AutomationId, id, "id"), (id) => ({ id }))
  const secretName = (name: string) => Effect.map(input(Secret.SecretName, name, "name"), (name) => ({ name }))
  const teamUid = (id: string) => Effect.map(input(Ids.TeamUid, id, "uid"), (uid) => ({ uid }))

  const listRunsPage = (query: RunListQuery = {}): Promise<ListRunsResponse> =>
    call(Run.ListRunsResponse, service.listRunsPage(query))

  type DeliveriesQuery = { readonly limit?: number | undefined; readonly cursor?: string | undefined }
  const listDeliveriesPage = (uid: string, query: DeliveriesQuery): Promise<ListDeliveriesResponse> =>
    call(
      Webhook.ListDeliveriesResponse,
      Effect.flatMap(webhookUid(uid), (path) =>
        service.webhooks.listWebhookDeliveries({
          headers,
          path,
          urlParams: {
            ...(query.limit === undefined ? {} : { limit: query.limit }),
            ...(query.cursor === undefined ? {} : { cursor: query.cursor })
          }
        }))
    )

  const encodeTimelineEvent = Schema.encode(Timeline.TimelineEvent)
  const encodeConversationEvent = Schema.encode(RunStream.ConversationEvent)
  const events = (id: string, eventOptions: RunEventsOptions = {}): AsyncIterable<RunEvent> => {
    const exchange: Transport.Exchange = {}
    let stream: Stream.Stream<RunEvent, AgentRunsError> = service.followRun(id, eventOptions).pipe(
      Stream.mapEffect((event) =>
        event.event === "timeline"
          ? Effect.map(encodeTimelineEvent(event.data), (data): RunEvent => ({ id: event.id, event: "timeline", data }))
          : Effect.map(encodeConversationEvent(event.data), (data): RunEvent => ({ id: event.id, event: "conversation", data }))
      ),
      Stream.mapError((error) => toAgentRunsError(error, exchange))
    )
    if (eventOptions.signal !== undefined) stream = Stream.interruptWhen(stream, aborted(eventOptions.signal))
    if (customFetch !== undefined) stream = Stream.provideService(stream, FetchHttpClient.Fetch, customFetch)
    const reporting = stream
    return Stream.toAsyncIterable(
      Stream.unwrapScoped(Effect.as(Effect.locallyScoped(Transport.currentExchange, exchange), reporting))
    )
  }

  return {
    runs: {
      create: (body, options) =>
        call(
          Run.RunAgentResponse,
          Effect.flatMap(input(Run.RunAgentRequest, body, "body"), (payload) => service.runs.createRun({ headers: keyed(options), payload }))
        ),
      list: (query = {}) => paginated((cursor) => listRunsPage({ ...query, cursor }), (page) => page.runs, query.cursor),
      listPage: listRunsPage,
      counts: (query = {}) => call(Run.RunCountsResponse, service.countRuns(query)),
      get: (id) => call(Run.RunItem, Effect.flatMap(runId(id), (path) => service.runs.getRun({ headers, path }))),
      cancel: (id) => call(Ids.RunId, Effect.flatMap(runId(id), (path) => service.runs.cancelRun({ headers, path }))),
      followup: (id, body, options) =>
        call(
          Followups.RunFollowupResponse,
          Effect.flatMap(
            Effect.all([runId(id), input(Run.RunFollowupRequest, body, "body")]),
            ([path, payload]) => service.runs.createRunFollowup({ headers: keyed(options), path, payload })
          )
        ),
      conversation: (id) =>
        call(
          Conversation.ConversationResponse,
          Effect.flatMap(runId(id), (path) => service.runs.getRunConversation({ headers, path }))
        ),
      timeline: (id) =>
        call(Timeline.RunTimeline, Effect.flatMap(runId(id), (path) => service.runs.getRunTimeline({ headers, path }))),
      transcriptUrl: (id) => run(service.runTranscriptUrl(id)),
      transcriptLink: (id) =>
        call(
          Models.TranscriptLinkResponse,
          Effect.flatMap(runId(id), (path) => service.runs.getRunTranscriptLink({ headers, path }))
        ),
      byExternalReference: (url) =>
        call(Models.RunByExternalReferenceResponse, service.runs.getRunByExternalReference({ headers, urlParams: { url } })),
      events
    },
    conversations: {
      get: (id) =>
        call(
          Conversation.ConversationResponse,
          Effect.flatMap(input(Ids.ConversationId, id, "conversation_id"), (conversation_id) =>
            service.conversations.getConversation({ headers, path: { conversation_id } }))
        ),
      transcriptUrl: (id) => run(service.conversationTranscriptUrl(id))
    },
    schedules: {
      create: (body) =>
        call(
          Schedule.ScheduledAgentItem,
          Effect.flatMap(
            input(Schedule.CreateScheduledAgentRequest, body, "body"),
            (payload) => service.schedules.createSchedule({ headers, payload })
          )
        ),
      list: () => call(Schedule.ListScheduledAgentsResponse, service.schedules.listSchedules({ headers })),
      get: (id) =>
        call(Schedule.ScheduledAgentItem, Effect.flatMap(scheduleId(id), (path) => service.schedules.getSchedule({ headers, path }))),
      update: (id, body) =>
        call(
          Schedule.ScheduledAgentItem,
          Effect.flatMap(
            Effect.all([scheduleId(id), input(Schedule.UpdateScheduledAgentRequest, body, "body")]),
            ([path, payload]) => service.schedules.updateSchedule({ headers, path, payload })
          )
        ),
      delete: (id) =>
        call(
          Schedule.DeleteScheduledAgentResponse,
          Effect.flatMap(scheduleId(id), (path) => service.schedules.deleteSchedule({ headers, path }))
        ),
      pause: (id) =>
        call(Schedule.ScheduledAgentItem, Effect.flatMap(scheduleId(id), (path) => service.schedules.pauseSchedule({ headers, path }))),
      resume: (id) =>
        call(Schedule.ScheduledAgentItem, Effect.flatMap(scheduleId(id), (path) => service.schedules.resumeSchedule({ headers, path }))),
      run: (id) =>
        call(Run.RunAgentResponse, Effect.flatMap(scheduleId(id), (path) => service.schedules.runSchedule({ headers, path }))),
      preview: (body) =>
        call(
          Schedule.SchedulePreview,
          Effect.flatMap(
            input(Schedule.PreviewScheduleRequest, body, "body"),
            (payload) => service.schedules.previewSchedule({ headers, payload })
          )
        )
    },
    environments: {
      list: (query = {}) =>
        call(Environment.ListEnvironmentsResponse, service.environments.listEnvironments({ headers, urlParams: query })),
      create: (body) =>
        call(
          Environment.Environment,
          Effect.flatMap(
            input(Environment.CreateEnvironmentRequest, body, "body"),
            (payload) => service.environments.createEnvironment({ headers, payload })
          )
        ),
      get: (uid) =>
        call(Environment.Environment, Effect.flatMap(environmentUid(uid), (path) => service.environments.getEnvironment({ headers, path }))),
      update: (uid, body) =>
        call(
          Environment.Environment,
          Effect.flatMap(
            Effect.all([environmentUid(uid), input(Environment.UpdateEnvironmentRequest, body, "body")]),
            ([path, payload]) => service.environments.updateEnvironment({ headers, path, payload })
          )
        ),
      delete: (uid) =>
        call(Models.DeleteResponse, Effect.flatMap(environmentUid(uid), (path) => service.environments.deleteEnvironment({ headers, path })))
    },
    webhooks: {
      create: (body) =>
        call(
          Webhook.WebhookWithSecret,
          Effect.flatMap(input(Webhook.CreateWebhookRequest, body, "body"), (payload) => service.webhooks.createWebhook({ headers, payload }))
        ),
      list: () => call(Webhook.ListWebhooksResponse, service.webhooks.listWebhooks({ headers })),
      get: (uid) => call(Webhook.Webhook, Effect.flatMap(webhookUid(uid), (path) => service.webhooks.getWebhook({ headers, path }))),
      update: (uid, body) =>
        call(
          Webhook.Webhook,
          Effect.flatMap(
            Effect.all([webhookUid(uid), input(Webhook.PatchWebhookRequest, body, "body")]),
            ([path, payload]) => service.webhooks.updateWebhook({ headers, path, payload })
          )
        ),
      delete: (uid) =>
        call(Models.DeleteResponse, Effect.flatMap(webhookUid(uid), (path) => service.webhooks.deleteWebhook({ headers, path }))),
      rotateSecret: (uid) =>
        call(
          Webhook.WebhookWithSecret,
          Effect.flatMap(webhookUid(uid), (path) => service.webhooks.rotateWebhookSecret({ headers, path }))
        ),
      checkSecret: (body) =>
        call(
          Webhook.CheckWebhookSecretResponse,
          Effect.flatMap(
            input(Webhook.CheckWebhookSecretRequest, body, "body"),
            (payload) => service.webhooks.checkWebhookSecret({ headers, payload })
          )
        ),
      listDeliveries: (uid, query = {}) =>
        paginated((cursor) => listDeliveriesPage(uid, { ...query, cursor }), (page) => page.deliveries, query.cursor),
      getDelivery: (uid, deliveryId) =>
        call(
          Webhook.Delivery,
          Effect.flatMap(
            Effect.all([webhookUid(uid), input(Ids.DeliveryId, deliveryId, "delivery_id")]),
            ([path, delivery_id]) => service.webhooks.getWebhookDelivery({ headers, path: { ...path, delivery_id } })
          )
        )
    },
    automations: {
      create: (body) =>
        call(
          Automation.Automation,
          Effect.flatMap(
            input(Automation.CreateAutomationRequest, body, "body"),
            (payload) => service.automations.createAutomation({ headers, payload })
          )
        ),
      list: () => call(Automation.ListAutomationsResponse, service.automations.listAutomations({ headers })),
      get: (id) =>
        call(Automation.Automation, Effect.flatMap(automationId(id), (path) => service.automations.getAutomation({ headers, path }))),
      update: (id, body) =>
        call(
          Automation.Automation,
          Effect.flatMap(
            Effect.all([automationId(id), input(Automation.UpdateAutomationRequest, body, "body")]),
            ([path, payload]) => service.automations.updateAutomation({ headers, path, payload })
          )
        ),
      delete: (id) =>
        call(Models.DeleteResponse, Effect.flatMap(automationId(id), (path) => service.automations.deleteAutomation({ headers, path }))),
      testFilter: (id, body) =>
        call(
          Automation.TestFilterResult,
          Effect.flatMap(
            Effect.all([automationId(id), input(Automation.TestFilterRequest, body, "body")]),
            ([path, payload]) => service.automations.testAutomationFilter({ headers, path, payload })
          )
        )
    },
    secrets: {
      list: () => call(Secret.ListSecretsResponse, service.secrets.listSecrets({ headers })),
      put: (name, body) =>
        call(
          Secret.SecretMetadata,
          Effect.flatMap(
            Effect.all([secretName(name), input(Secret.PutSecretRequest, body, "body")]),
            ([path, payload]) => service.secrets.putSecret({ headers, path, payload })
          )
        ),
      delete: (name) =>
        call(Models.DeleteResponse, Effect.flatMap(secretName(name), (path) => service.secrets.deleteSecret({ headers, path })))
    },
    agents: {
      list: (query = {}) => call(Agent.ListAgentsResponse, service.agents.listAgents({ headers, urlParams: query })),
      connectedWorkers: () => call(Worker.ListConnectedWorkersResponse, service.agents.listConnectedWorkers({ headers }))
    },
    identity: {
      me: () => call(Identity.MeResponse, service.identity.me({ headers }))
    },
    audit: {
      list: (query = {}) => call(Audit.AuditLogPage, service.audit.listAuditLog({ headers, urlParams: query })),
      listAll: (query = {}) => call(Audit.AuditLogPage, service.audit.listInstanceAuditLog({ urlParams: query }))
    },
    admin: {
      createTeam: (body) =>
        call(Identity.Team, Effect.flatMap(input(Identity.CreateTeamRequest, body, "body"), (payload) => service.admin.createTeam({ headers: {}, payload }))),
      listTeams: () => call(Identity.ListTeamsResponse, service.admin.listTeams()),
      updateTeam: (uid, body) =>
        call(
          Identity.Team,
          Effect.flatMap(
            Effect.all([teamUid(uid), input(Identity.PatchTeamRequest, body, "body")]),
            ([path, payload]) => service.admin.updateTeam({ path, payload })
          )
        ),
      createPrincipal: (body) =>
        call(
          Identity.Principal,
          Effect.flatMap(input(Identity.CreatePrincipalRequest, body, "body"), (payload) => service.admin.createPrincipal({ headers: {}, payload }))
        ),
      createToken: (principalUid, body) =>
        call(
          Identity.CreateTokenResponse,
          Effect.flatMap(
            Effect.all([input(Ids.PrincipalUid, principalUid, "uid"), input(Identity.CreateTokenRequest, body, "body")]),
            ([uid, payload]) => service.admin.createToken({ path: { uid }, payload })
          )
        ),
      revokeToken: (tokenId) =>
        call(
          Models.DeleteResponse,
          Effect.flatMap(input(Ids.TokenId, tokenId, "token_id"), (token_id) => service.admin.revokeToken({ path: { token_id } }))
        )
    }
  }
}
