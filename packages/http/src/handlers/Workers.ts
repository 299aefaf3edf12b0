/** Handlers of the self-hosted worker protocol: each endpoint calls core's `Workers` with the caller. */
import { HttpApiBuilder } from "@effect/platform"
import { Errors, Worker, Workers } from "@agent-runs/core"
import { Effect, Encoding, Either, Option } from "effect"
import { Api } from "@agent-runs/api/Api"
import { CurrentViewer } from "@agent-runs/api/Security"

const ok = { success: true } as const

/** How long a claim waits when the worker does not say. */
const DEFAULT_CLAIM_WAIT_SECONDS = 20

export const WorkersLive = HttpApiBuilder.group(Api, "workers", (handlers) =>
  Effect.gen(function*() {
    const workers = yield* Workers.Workers
    return handlers
      .handle("workerHeartbeat", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) => workers.heartbeat(viewer, path.workerId, payload)))
      .handle("workerDisconnect", ({ path }) =>
        Effect.flatMap(CurrentViewer, (viewer) => Effect.as(workers.disconnect(viewer, path.workerId), ok)))
      .handle("workerRelease", ({ path }) =>
        Effect.flatMap(CurrentViewer, (viewer) =>
          Effect.map(workers.release(viewer, path.workerId), (released) => new Worker.ReleaseWorkerResponse({ released }))))
      .handle("workerClaim", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) =>
          workers.claim(viewer, path.workerId, payload.wait_seconds ?? DEFAULT_CLAIM_WAIT_SECONDS, payload.protocol, payload.secrets === true)))
      .handle("workerRecordEvents", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) => workers.recordEvents(viewer, path.workerId, path.runId, payload.execution_id, payload.events)))
      .handle("workerReport", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) =>
          Effect.as(workers.report(viewer, path.workerId, path.runId, payload.execution_id, payload.report), ok)))
      .handle("workerUpdateRun", () => Effect.fail(Workers.upgradeNeeded))
      .handle("workerRenewLease", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) => workers.renew(viewer, path.workerId, path.runId, payload.execution_id, payload.protocol)))
      .handle("workerTakeFollowups", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) => workers.takeFollowups(viewer, path.workerId, path.runId, payload.execution_id)))
      .handle("workerAppendConversation", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) =>
          Effect.as(workers.appendConversation(viewer, path.workerId, path.runId, payload.execution_id, { seq: payload.seq, ops: payload.ops }), ok)))
      .handle("workerSaveConversation", () => Effect.fail(Workers.upgradeNeeded))
      .handle("workerAddArtifact", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) =>
          Effect.as(workers.addArtifact(viewer, path.workerId, path.runId, payload.execution_id, payload.artifact), ok)))
      .handle("workerAppendTranscript", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) =>
          Effect.gen(function*() {
            const bytes = Encoding.decodeBase64(payload.data_base64)
            if (Either.isLeft(bytes)) return yield* Effect.fail(Errors.InvalidRequest.forField("data_base64", "must be base64"))
            const size = yield* workers.appendTranscript(viewer, path.workerId, path.runId, payload.execution_id, bytes.right, payload.offset)
            return new Worker.AppendTranscriptResponse({ success: true, transcript_bytes: size })
          })))
      .handle("workerSaveAgentState", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) =>
          Effect.gen(function*() {
            const bytes = Encoding.decodeBase64(payload.data_base64)
            if (Either.isLeft(bytes)) return yield* Effect.fail(Errors.InvalidRequest.forField("data_base64", "must be base64"))
            const part = { offset: payload.offset, bytes: bytes.right, total: payload.total_bytes }
            const kept = yield* workers.saveAgentState(viewer, path.workerId, path.runId, payload.execution_id, part)
            return new Worker.SaveAgentStateResponse({ received_bytes: kept.received, saved: kept.saved })
          })))
      .handle("workerReadAgentState", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) =>
          Effect.map(
            workers.readAgentState(viewer, path.workerId, path.runId, payload.execution_id, payload.offset),
            (part) =>
              new Worker.ReadAgentStateResponse({
                state: Option.getOrNull(Option.map(part, ({ bytes, total }) => ({ data_base64: Encoding.encodeBase64(bytes), total_bytes: total })))
              })
          )))
  }))
