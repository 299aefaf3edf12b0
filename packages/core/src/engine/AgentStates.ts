/**
 * Where the server keeps the session files an agent CLI left in a run's execution (CliAgent.ts),
 * for the run's next execution to resume the session: one blob per run (`agentStateKey`), written
 * only by the execution holding the run. The server's own executions keep them whole; a
 * self-hosted worker's arrive in parts (the worker protocol's body limit), each written at its
 * offset to a blob of that execution (`agentStateUploadKey`, so a part sent again is a no-op), and
 * the last one moves them into place.
 */
import { Effect, Option, Stream } from "effect"
import { agentStateKey, agentStateUploadKey } from "../domain/BlobKeys.js"
import { InvalidRequest, PayloadTooLarge } from "../domain/Errors.js"
import type { ExecutionId, RunId } from "../domain/Ids.js"
import { concatBytes } from "../internal/Bytes.js"
import type { BlobStore } from "../ports/BlobStore.js"
import { MAX_AGENT_STATE_BYTES } from "./CliAgent.js"

/** The whole of a blob, or none. */
const readWhole = (blobs: BlobStore["Type"], key: string) =>
  Effect.flatMap(blobs.read(key), Option.match({
    onNone: () => Effect.succeedNone,
    onSome: (stream) => Effect.map(Stream.runCollect(stream), (chunks) => Option.some(concatBytes([...chunks])))
  }))

/** The run's kept session files, or none. */
export const read = (blobs: BlobStore["Type"], runId: RunId) => readWhole(blobs, agentStateKey(runId))

/** Keeps the session files of the run's latest execution (the caller holds the run). */
export const save = (blobs: BlobStore["Type"], runId: RunId, state: Uint8Array) => blobs.put(agentStateKey(runId), state)

/**
 * Writes a part of an execution's session files (`total` bytes in all) at `offset`, and keeps
 * them once every byte is there: how many bytes are there, and whether they are kept. The caller
 * holds the run.
 */
export const savePart = (
  blobs: BlobStore["Type"],
  runId: RunId,
  executionId: ExecutionId,
  part: { readonly offset: number; readonly bytes: Uint8Array; readonly total: number }
) =>
  Effect.gen(function*() {
    if (part.total > MAX_AGENT_STATE_BYTES) {
      return yield* new PayloadTooLarge({
        message: `total_bytes: an agent's session files are kept up to ${MAX_AGENT_STATE_BYTES} bytes`,
        limitBytes: MAX_AGENT_STATE_BYTES
      })
    }
    if (part.offset + part.bytes.length > part.total) {
      return yield* InvalidRequest.forField("data_base64", "goes past total_bytes")
    }
    const upload = agentStateUploadKey(runId, executionId)
    const received = yield* blobs.appendAt(upload, part.offset, part.bytes)
    if (received < part.total) return { received, saved: false }
    const whole = yield* readWhole(blobs, upload)
    yield* blobs.remove(upload)
    if (received > part.total || Option.isNone(whole)) {
      return yield* InvalidRequest.forField("total_bytes", "the parts sent add up to more; send them again from offset 0")
    }
    yield* save(blobs, runId, whole.value)
    return { received, saved: true }
  })
