/**
 * The execution host of a self-hosted worker (core's `ExecutionHost`), over the server's worker
 * endpoints (`/api/v1/workers/{workerId}/…`, docs/workers.md) with the worker's service-account
 * token, so a worker runs core's execution loop on its own executor:
 * - claim: long-polls the server (which claims the run and answers what its execution needs, the
 *   team secrets its agent gets included); the plan is resolved here (the skill from this worker's
 *   repositories; the agent CLI's key and the MCP servers as the server resolved them, kept in
 *   memory only); wake-ups never come (the claim waits on the server instead);
 * - the execution's events, the agent's report, lease renewal and follow-ups: sent as they are;
 *   the server applies them as it applies its own executions';
 * - output: transcript appends at an offset (a retried append is a no-op on the server), parts of
 *   the conversation log, artifacts;
 * - a failed setup's sandbox is released at once (no debug windows on workers);
 * - an agent CLI's session files: kept by the server in parts at the end of an execution, read
 *   back by the execution that continues the run (whichever worker with this id claims it).
 *
 * A request the server did not answer (it restarts, the network drops) or answered 5xx is retried
 * with backoff for up to `retryForMs`, so a worker rides out a server restart with its runs going
 * on; a 409 is the server saying the execution no longer holds the run (`Lost`).
 */
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { type ExecutionEvent, ExecutionHost, ExecutionPlan, type Ids, RepoSource, Storage, Worker } from "@agent-runs/core"
import * as WorkerProtocol from "@agent-runs/core/domain/WorkerProtocol"
import { Api, Security } from "@agent-runs/api"
import { isTerminal } from "@agent-runs/core/domain/RunState"
import { MAX_AGENT_STATE_BYTES } from "@agent-runs/core/engine/CliAgent"
import * as WorkerSecrets from "@agent-runs/core/engine/WorkerSecrets"
import { Duration, Effect, Either, Encoding, Layer, Option, Redacted, Schedule, Stream } from "effect"

/** Where the server is and who this worker is. */
export interface Connection {
  /** e.g. `http://127.0.0.1:8080` (the API is under `/api/v1`). */
  readonly server: string
  /** A service account's API token. */
  readonly token: Redacted.Redacted<string>
  /** The team to act in (`X-Team-Uid`); the token's first team when absent. */
  readonly team: Option.Option<string>
  /** This worker's id: the `agent_config.worker_host` of its runs. */
  readonly workerId: string
  /** How long a request the server did not answer is retried (default 30 s). */
  readonly retryForMs?: number
}

/** How long a claim waits on the server for a run. */
export const CLAIM_WAIT_SECONDS = 20

/** The typed client of the API for a connection. */
const client = (connection: Connection) =>
  HttpApiClient.make(Api.Api, {
    baseUrl: connection.server.replace(/\/+$/, ""),
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(Redacted.value(connection.token)))
  }).pipe(Effect.provide(FetchHttpClient.layer))

/** The TEAM header of a connection. */
const teamHeaders = (connection: Connection) =>
  Option.match(connection.team, { onNone: () => ({}), onSome: (team) => ({ [Security.TEAM_HEADER]: team }) })

/** The worker's presence calls: a heartbeat (answering the server's settings) and the goodbye. */
export interface Presence {
  readonly heartbeat: (request: Worker.HeartbeatRequest) => Effect.Effect<Worker.HeartbeatResponse, unknown>
  readonly disconnect: Effect.Effect<void, unknown>
}

/** The presence calls of a connection. */
export const presence = (connection: Connection): Effect.Effect<Presence> =>
  Effect.map(client(connection), ({ workers }) => {
    const headers = teamHeaders(connection)
    const path = { workerId: connection.workerId }
    return {
      heartbeat: (payload) => workers.workerHeartbeat({ headers, path, payload }),
      disconnect: Effect.asVoid(workers.workerDisconnect({ headers, path }))
    }
  })

const codeOf = (error: unknown): string | undefined => (error as { readonly errorCode?: string }).errorCode

/** Whether a failure is worth retrying: no answer, or the server failing (5xx). */
export const isTransient = (error: unknown): boolean => {
  const e = error as { readonly _tag?: string; readonly response?: { readonly status?: number } }
  if (e._tag === "RequestError") return true
  if (e._tag === "ResponseError") return (e.response?.status ?? 0) >= 500
  const code = codeOf(error)
  return code === "resource_unavailable" || code === "internal_error"
}

/** Retries transient failures with backoff (200 ms doubling to 2 s) for up to `forMs`. */
export const retryTransient = (forMs: number) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.retry(effect, {
    while: isTransient,
    schedule: Schedule.exponential(Duration.millis(200)).pipe(
      Schedule.either(Schedule.spaced(Duration.seconds(2))),
      Schedule.upTo(Duration.millis(forMs))
    )
  })

/** Session files in the parts the protocol takes. */
const partsOf = (state: Uint8Array) =>
  Array.from({ length: Math.ceil(state.length / Worker.AGENT_STATE_PART_BYTES) }, (_, i) => {
    const offset = i * Worker.AGENT_STATE_PART_BYTES
    return { offset, bytes: state.subarray(offset, offset + Worker.AGENT_STATE_PART_BYTES) }
  })

/**
 * Leaves out what the agreed protocol does not take: a server of protocol 3 knows no `HandOver`
 * (WorkerProtocol.ts), so a stopping worker's runs wait for their leases to run out there.
 */
const understood = (protocol: number, events: ReadonlyArray<ExecutionEvent.ExecutionEvent>) =>
  WorkerProtocol.handsOver(protocol) ? events : events.filter((e) => e._tag !== "HandOver")

/**
 * The execution host over the server's worker endpoints, for the runs of `connection.workerId`,
 * speaking the worker protocol last agreed with the server (at each heartbeat).
 */
export const layer = (
  connection: Connection,
  agreedProtocol: Effect.Effect<number>,
  /** The worker's goodbye, said when its loop stops executing (`ExecutionHost.departing`). */
  departing?: Effect.Effect<void>
): Layer.Layer<ExecutionHost.ExecutionHost, never, RepoSource.RepoSource> =>
  Layer.effect(
    ExecutionHost.ExecutionHost,
    Effect.gen(function*() {
      const api = (yield* client(connection)).workers
      const headers = teamHeaders(connection)
      const workerId = connection.workerId
      const retry = retryTransient(connection.retryForMs ?? 30_000)
      const repos = yield* RepoSource.RepoSource

      /** Sends a request: transient failures retried; 409 → Lost; others → StorageError. */
      const send = <A, E>(operation: string, request: Effect.Effect<A, E>) =>
        request.pipe(
          retry,
          Effect.mapError((error) =>
            codeOf(error) === "conflict" ? new ExecutionHost.Lost() : new Storage.StorageError({ operation, cause: error })
          )
        )
      /** For calls that cannot be refused as stale: a 409 is a failure like any other. */
      const sendPlain = <A, E>(operation: string, request: Effect.Effect<A, E>) =>
        Effect.catchTag(send(operation, request), "Lost", (e) => Effect.fail(new Storage.StorageError({ operation, cause: e })))

      // The server names the execution (the claim's `execution_id`); the loop's proposal is not sent.
      const claim = () =>
        Effect.gen(function*() {
          const protocol = yield* agreedProtocol
          const answer = yield* sendPlain(
            "claim",
            api.workerClaim({
              headers,
              path: { workerId },
              payload: new Worker.ClaimRequest({ wait_seconds: CLAIM_WAIT_SECONDS, protocol, secrets: true })
            })
          )
          const c = answer.claim
          if (c === null) return Option.none()
          const attachments = c.attachments.flatMap((a) => {
            const bytes = Encoding.decodeBase64(a.data_base64)
            return bytes._tag === "Right" ? [{ name: a.name, media_type: a.media_type, bytes: bytes.right }] : []
          })
          const sources = { repos, secrets: WorkerSecrets.fromClaim(c.secrets), debugWindows: false }
          return Option.some(yield* ExecutionPlan.planOf({ ...c, attachments }, sources))
        })

      const sendReport = (runId: Ids.RunId, execution_id: Ids.ExecutionId, report: ExecutionEvent.Report) =>
        Effect.asVoid(send(
          "report",
          api.workerReport({ headers, path: { workerId, runId }, payload: new Worker.ReportRequest({ execution_id, report }) })
        ))

      // What each run's children held of its budget at its last renewal (the server says so then).
      const held = new Map<Ids.RunId, number>()

      // The last report before the events, as two requests (the protocol has no report in events).
      const recordEvents = (
        runId: Ids.RunId,
        execution_id: Ids.ExecutionId,
        events: ReadonlyArray<ExecutionEvent.ExecutionEvent>,
        report: ExecutionEvent.Report | undefined
      ) =>
        Effect.map(
          Effect.zipRight(
            report === undefined ? Effect.void : sendReport(runId, execution_id, report),
            send(
              "events",
              api.workerRecordEvents({ headers, path: { workerId, runId }, payload: new Worker.RecordEventsRequest({ execution_id, events }) })
            )
          ),
          (answer) => {
            if (isTerminal(answer.state)) held.delete(runId)
            return { state: answer.state, sandbox_retained: false }
          }
        )

      return ExecutionHost.ExecutionHost.of({
        departing,
        wakeups: Stream.never,
        claim,
        renew: (runId, execution_id) =>
          agreedProtocol.pipe(
            Effect.flatMap((protocol) =>
              send(
                "renew",
                api.workerRenewLease({ headers, path: { workerId, runId }, payload: new Worker.RenewLeaseRequest({ execution_id, protocol }) })
              )
            ),
            Effect.map((answer) => {
              if (answer.descendants_committed !== undefined) held.set(runId, answer.descendants_committed)
            })
          ),
        childrenHold: (runId) => Effect.sync(() => held.get(runId)),
        record: (runId, execution_id, all, report) =>
          Effect.flatMap(agreedProtocol, (protocol) => {
            const events = understood(protocol, all)
            return events.length === 0
              ? Effect.fail(new Storage.StorageError({ operation: "events", cause: `a server of worker protocol ${protocol} takes no hand-over` }))
              : recordEvents(runId, execution_id, events, report)
          }),
        report: sendReport,
        followups: (runId, execution_id) =>
          Effect.map(
            send(
              "followups",
              api.workerTakeFollowups({ headers, path: { workerId, runId }, payload: new Worker.TakeFollowupsRequest({ execution_id }) })
            ),
            (answer) => answer.followups
          ),
        output: (runId, execution_id) => ({
          appendTranscript: (offset, bytes) =>
            Effect.map(
              sendPlain(
                "transcript",
                api.workerAppendTranscript({
                  headers,
                  path: { workerId, runId },
                  payload: new Worker.AppendTranscriptRequest({ execution_id, data_base64: Encoding.encodeBase64(bytes), offset })
                })
              ),
              (answer) => answer.transcript_bytes
            ),
          appendConversation: (part) =>
            Effect.asVoid(sendPlain(
              "conversation",
              api.workerAppendConversation({
                headers,
                path: { workerId, runId },
                payload: new Worker.AppendConversationRequest({ execution_id, seq: part.seq, ops: part.ops })
              })
            )),
          addArtifact: (artifact) =>
            Effect.asVoid(sendPlain(
              "artifact",
              api.workerAddArtifact({ headers, path: { workerId, runId }, payload: new Worker.AddArtifactRequest({ execution_id, artifact }) })
            ))
        }),
        // No debug windows on workers.
        retain: (_runId, sandbox) => sandbox.release,
        // The agent CLI's session files are kept by the server, for whichever execution continues the run.
        agentState: (runId, execution_id) =>
          Effect.gen(function*() {
            const parts: Array<Uint8Array> = []
            let offset = 0
            for (;;) {
              const answer = yield* send(
                "agent state",
                api.workerReadAgentState({ headers, path: { workerId, runId }, payload: new Worker.ReadAgentStateRequest({ execution_id, offset }) })
              )
              // None kept, or more than an agent's session files may be: none to resume from.
              if (answer.state === null || answer.state.total_bytes > MAX_AGENT_STATE_BYTES) return Option.none()
              const bytes = Encoding.decodeBase64(answer.state.data_base64)
              // A server that sends nothing more before the end, or what is not base64: none to resume from.
              if (Either.isLeft(bytes) || (bytes.right.length === 0 && offset < answer.state.total_bytes)) return Option.none()
              parts.push(bytes.right)
              offset += bytes.right.length
              if (offset >= answer.state.total_bytes) return Option.some<Uint8Array>(Buffer.concat(parts))
            }
          }),
        saveAgentState: (runId, execution_id, state) =>
          Effect.gen(function*() {
            let saved = false
            for (const part of partsOf(state)) {
              const payload = new Worker.SaveAgentStateRequest({
                execution_id,
                offset: part.offset,
                total_bytes: state.length,
                data_base64: Encoding.encodeBase64(part.bytes)
              })
              saved = (yield* send("agent state", api.workerSaveAgentState({ headers, path: { workerId, runId }, payload }))).saved
            }
            if (!saved) return yield* new Storage.StorageError({ operation: "agent state", cause: "the server did not keep the session files" })
          })
      })
    })
  )
