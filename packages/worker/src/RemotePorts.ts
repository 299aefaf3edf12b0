/**
 * The ports core's `Dispatcher` needs, implemented over the server's worker endpoints
 * (`/api/v1/workers/{workerId}/…`, docs/workers.md) with the worker's service-account token, so a
 * self-hosted worker runs the same dispatcher as the server, on its own executor:
 * - `RunStore`: claim (long poll), get, guarded update, lease renewal, follow-ups, conversation,
 *   artifacts; wake-ups never come (the claim waits on the server instead). What only the server
 *   does (creating and listing runs, the sweep, admission) is not available here;
 * - `BlobStore`: appends to a run's transcript at an offset (a retried append is a no-op
 *   on the server), its size as last answered; reads the blobs the claim brought along;
 * - `EnvironmentStore`: reads an environment of the worker's team;
 * - `RunTokens`: the run token the claim brought along for its execution;
 * - `IdentityStore`: not available (only admission reads it, and a worker does not admit).
 *
 * A request the server did not answer (it restarts, the network drops) or answered 5xx is retried
 * with backoff for up to `retryForMs`, so a worker rides out a server restart with its runs going
 * on; a 409 is the server saying the execution no longer holds the run (`StaleWrite`).
 */
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import {
  BlobStore,
  Conversations,
  EnvironmentStore,
  IdentityStore,
  RunStore,
  RunTokens,
  Storage,
  Worker
} from "@agent-runs/core"
import type { ExecutionId, RunId } from "@agent-runs/core/Ids"
import { Api, Security } from "@agent-runs/http"
import { Context, Duration, Effect, Encoding, Layer, Option, Redacted, Schedule, Stream } from "effect"

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

const unavailable = (operation: string) => () => Effect.die(new Error(`${operation} is not available on a self-hosted worker`))

/** The ports over the server's worker endpoints, for a dispatcher claiming `connection.workerId`'s runs. */
export const layer = (connection: Connection): Layer.Layer<
  RunStore.RunStore | BlobStore.BlobStore | EnvironmentStore.EnvironmentStore | RunTokens.RunTokens | IdentityStore.IdentityStore
> =>
  Layer.effectContext(
    Effect.gen(function*() {
      const api = (yield* client(connection)).workers
      const headers = teamHeaders(connection)
      const workerId = connection.workerId
      const retry = retryTransient(connection.retryForMs ?? 30_000)
      /** The execution this worker runs for each run it claimed (the latest claim). */
      const executions = new Map<RunId, ExecutionId>()
      /** The run token of each execution this worker claimed. */
      const tokens = new Map<string, string>()
      /** Where in its run's transcript each execution's next output goes (from the claim, then each append's answer). */
      const offsets = new Map<string, number>()
      /** Blobs claims brought along (webhook payloads), by key. */
      const blobs = new Map<string, Uint8Array>()

      /** Sends a request: transient failures retried; 409 → StaleWrite; others → StorageError. */
      const send = <A, E>(operation: string, request: Effect.Effect<A, E>) =>
        request.pipe(
          retry,
          Effect.mapError((error) =>
            codeOf(error) === "conflict"
              ? new Storage.StaleWrite({ what: `${operation}: ${(error as { message?: string }).message ?? "conflict"}` })
              : new Storage.StorageError({ operation, cause: error })
          )
        )
      /** For calls that cannot be stale: a 409 is a storage failure like any other. */
      const sendPlain = <A, E>(operation: string, request: Effect.Effect<A, E>) =>
        Effect.catchTag(send(operation, request), "StaleWrite", (e) => Effect.fail(new Storage.StorageError({ operation, cause: e })))
      /** A 404 as none. */
      const found = <A, E>(operation: string, request: Effect.Effect<A, E>) =>
        sendPlain(
          operation,
          request.pipe(
            Effect.map(Option.some),
            Effect.catchIf((e) => codeOf(e) === "resource_not_found", () => Effect.succeed(Option.none<A>()))
          )
        )

      const executionOf = (runId: RunId) => {
        const execution = executions.get(runId)
        return execution === undefined
          ? Effect.fail(new Storage.StorageError({ operation: "worker", cause: `run ${runId} is not held by this worker` }))
          : Effect.succeed(execution)
      }

      const runStore: RunStore.RunStore["Type"] = {
        create: unavailable("RunStore.create"),
        states: unavailable("RunStore.states"),
        list: unavailable("RunStore.list"),
        expiredLeases: unavailable("RunStore.expiredLeases"),
        waitingForWorkers: unavailable("RunStore.waitingForWorkers"),
        activeCount: unavailable("RunStore.activeCount"),
        waitingTeams: unavailable("RunStore.waitingTeams"),
        pending: unavailable("RunStore.pending"),
        timeline: unavailable("RunStore.timeline"),
        recordFollowup: unavailable("RunStore.recordFollowup"),
        findByExternalReference: unavailable("RunStore.findByExternalReference"),
        findByConversation: unavailable("RunStore.findByConversation"),
        get: (runId) => found("RunStore.get", api.workerGetRun({ headers, path: { workerId, runId } })),
        update: (runId, guard, next, events) =>
          guard.execution_id === undefined
            ? Effect.fail(new Storage.StaleWrite({ what: "a worker writes only runs its execution holds" }))
            : Effect.asVoid(send(
              "RunStore.update",
              api.workerUpdateRun({
                headers,
                path: { workerId, runId },
                payload: new Worker.UpdateRunRequest({
                  guard: { state: guard.state, execution_id: guard.execution_id },
                  run: next,
                  events
                })
              })
            )),
        claim: (params) =>
          Effect.gen(function*() {
            const answer = yield* sendPlain(
              "RunStore.claim",
              api.workerClaim({
                headers,
                path: { workerId },
                payload: new Worker.ClaimRequest({ execution_id: params.execution_id, wait_seconds: CLAIM_WAIT_SECONDS })
              })
            )
            if (answer.run === null) return Option.none()
            executions.set(answer.run.item.run_id, params.execution_id)
            if (answer.run_token !== null) tokens.set(params.execution_id, answer.run_token)
            offsets.set(params.execution_id, answer.transcript_bytes)
            for (const blob of answer.blobs) {
              const bytes = Encoding.decodeBase64(blob.data_base64)
              if (bytes._tag === "Right") blobs.set(blob.key, bytes.right)
            }
            return Option.some(answer.run)
          }),
        renewLease: (runId, execution_id) =>
          Effect.asVoid(send(
            "RunStore.renewLease",
            api.workerRenewLease({ headers, path: { workerId, runId }, payload: new Worker.RenewLeaseRequest({ execution_id }) })
          )),
        takeFollowups: (runId) =>
          Effect.map(
            sendPlain("RunStore.takeFollowups", api.workerTakeFollowups({ headers, path: { workerId, runId } })),
            (r) => r.followups
          ),
        conversation: (runId) =>
          Effect.map(sendPlain("RunStore.conversation", api.workerGetConversation({ headers, path: { workerId, runId } })), (r) => r.steps),
        appendConversation: (runId, execution_id, part) =>
          Effect.asVoid(sendPlain(
            "RunStore.appendConversation",
            api.workerAppendConversation({
              headers,
              path: { workerId, runId },
              payload: new Worker.AppendConversationRequest({ execution_id, seq: part.seq, ops: part.ops })
            })
          )),
        addArtifact: (runId, artifact) =>
          Effect.flatMap(executionOf(runId), (execution_id) =>
            Effect.asVoid(sendPlain(
              "RunStore.addArtifact",
              api.workerAddArtifact({
                headers,
                path: { workerId, runId },
                payload: new Worker.AddArtifactRequest({ execution_id, artifact })
              })
            ))),
        wakeups: Stream.never
      }

      /** The run of a transcript key (`Conversations.transcriptKey`), if it is one. */
      const transcriptRun = (key: string) => {
        const match = /^transcripts\/(.+)\.jsonl$/.exec(key)
        return match !== null && Conversations.transcriptKey(match[1]! as RunId) === key ? (match[1]! as RunId) : undefined
      }

      /**
       * Appends to a run's transcript at `offset` (the end as last answered when absent): sent with
       * its offset, so a request retried after a lost answer does not append it twice.
       */
      const appendTranscript = (operation: string, key: string, bytes: Uint8Array, at?: number) => {
        const runId = transcriptRun(key)
        if (runId === undefined) return Effect.fail(new Storage.StorageError({ operation, cause: `not a transcript: ${key}` }))
        return Effect.flatMap(executionOf(runId), (execution_id) => {
          const offset = at ?? offsets.get(execution_id)
          const payload = new Worker.AppendTranscriptRequest({
            execution_id,
            data_base64: Encoding.encodeBase64(bytes),
            ...(offset === undefined ? {} : { offset })
          })
          return sendPlain(operation, api.workerAppendTranscript({ headers, path: { workerId, runId }, payload })).pipe(
            Effect.map((answer) => {
              offsets.set(execution_id, answer.transcript_bytes)
              return answer.transcript_bytes
            })
          )
        })
      }

      const blobStore: BlobStore.BlobStore["Type"] = {
        append: (key, bytes) => Effect.asVoid(appendTranscript("BlobStore.append", key, bytes)),
        appendAt: (key, offset, bytes) => appendTranscript("BlobStore.appendAt", key, bytes, offset),
        // A transcript's size as the server last answered it (the claim brings it).
        size: (key) => {
          const runId = transcriptRun(key)
          if (runId === undefined) return Effect.fail(new Storage.StorageError({ operation: "BlobStore.size", cause: `not a transcript: ${key}` }))
          return Effect.map(executionOf(runId), (execution_id) => offsets.get(execution_id) ?? 0)
        },
        read: (key) => {
          const bytes = blobs.get(key)
          return Effect.succeed(bytes === undefined ? Option.none() : Option.some(Stream.make(bytes)))
        },
        put: unavailable("BlobStore.put"),
        remove: unavailable("BlobStore.remove")
      }

      const environmentStore: EnvironmentStore.EnvironmentStore["Type"] = {
        get: (uid) => found("EnvironmentStore.get", api.workerGetEnvironment({ headers, path: { workerId, uid } })),
        create: unavailable("EnvironmentStore.create"),
        list: unavailable("EnvironmentStore.list"),
        update: unavailable("EnvironmentStore.update"),
        noteRun: unavailable("EnvironmentStore.noteRun"),
        remove: unavailable("EnvironmentStore.remove"),
        recordLinkAccess: unavailable("EnvironmentStore.recordLinkAccess")
      }

      const runTokens: RunTokens.RunTokens["Type"] = {
        issue: ({ execution_id }) => Effect.succeed(tokens.get(execution_id) ?? ""),
        verify: () => Effect.succeed(Option.none())
      }

      const identityStore: IdentityStore.IdentityStore["Type"] = {
        createTeam: unavailable("IdentityStore.createTeam"),
        getTeam: unavailable("IdentityStore.getTeam"),
        listTeams: Effect.die(new Error("IdentityStore.listTeams is not available on a self-hosted worker")),
        updateTeam: unavailable("IdentityStore.updateTeam"),
        createPrincipal: unavailable("IdentityStore.createPrincipal"),
        getPrincipal: unavailable("IdentityStore.getPrincipal"),
        instanceAdmins: Effect.die(new Error("IdentityStore.instanceAdmins is not available on a self-hosted worker")),
        countPrincipals: Effect.die(new Error("IdentityStore.countPrincipals is not available on a self-hosted worker")),
        createToken: unavailable("IdentityStore.createToken"),
        findToken: unavailable("IdentityStore.findToken"),
        findTokenRecord: unavailable("IdentityStore.findTokenRecord"),
        revokeToken: unavailable("IdentityStore.revokeToken")
      }

      return Context.make(RunStore.RunStore, runStore).pipe(
        Context.add(BlobStore.BlobStore, blobStore),
        Context.add(EnvironmentStore.EnvironmentStore, environmentStore),
        Context.add(RunTokens.RunTokens, runTokens),
        Context.add(IdentityStore.IdentityStore, identityStore)
      )
    })
  )
