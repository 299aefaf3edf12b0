/**
 * Where the server keeps the session files an agent CLI left in a run's execution (CliAgent.ts),
 * for the run's next execution to resume the session: one blob per run (`agentStateKey`), written
 * only by the execution holding the run. The server's own executions keep and read them whole; a
 * self-hosted worker's go both ways in parts of at most `AGENT_STATE_PART_BYTES` (the protocol's
 * body limit), so neither side holds more than a part per request:
 * - Sending: each part is written at its offset to one blob of the execution
 *   (`agentStateUploadKey`), after a header of 8 bytes holding the declared total, and only after
 *   the bytes before it (a part ahead of a missing one is refused), so a part sent again is a
 *   no-op; a part declaring another total than the first is refused and the upload dropped. The
 *   part that completes it moves the whole into place. A last part sent again after that answers
 *   `saved` when the kept blob has its size and its bytes there.
 * - Reading: a part of the kept blob from an offset, with its size; only the part is held, and
 *   the blob is read no further than it.
 */
import { Effect, Option, Stream } from "effect"
import { agentStateKey, agentStateUploadKey } from "../domain/BlobKeys.js"
import { InvalidRequest, PayloadTooLarge } from "../domain/Errors.js"
import type { ExecutionId, RunId } from "../domain/Ids.js"
import { AGENT_STATE_PART_BYTES } from "../domain/Worker.js"
import { concatBytes } from "../internal/Bytes.js"
import type { BlobStore } from "../ports/BlobStore.js"
import { MAX_AGENT_STATE_BYTES } from "./CliAgent.js"

/** The whole of a blob, or none. */
export const readWhole = (blobs: BlobStore["Type"], key: string) =>
  Effect.flatMap(blobs.read(key), Option.match({
    onNone: () => Effect.succeedNone,
    onSome: (stream) => Effect.map(Stream.runCollect(stream), (chunks) => Option.some(concatBytes([...chunks])))
  }))

/** The run's kept session files, or none. */
export const read = (blobs: BlobStore["Type"], runId: RunId) => readWhole(blobs, agentStateKey(runId))

/** Keeps the session files of the run's latest execution (the caller holds the run). */
export const save = (blobs: BlobStore["Type"], runId: RunId, state: Uint8Array) => blobs.put(agentStateKey(runId), state)

/** At most `AGENT_STATE_PART_BYTES` of the kept session files from `offset`, and their size; none when none are kept. */
export const readPart = (blobs: BlobStore["Type"], runId: RunId, offset: number) =>
  Effect.map(sliceOf(blobs, agentStateKey(runId), offset, AGENT_STATE_PART_BYTES), Option.map(({ bytes, size }) => ({ bytes, total: size })))

/** `length` bytes of a blob from `offset` (fewer at its end) and its size, reading no further than them; none without the blob. */
const sliceOf = (blobs: BlobStore["Type"], key: string, offset: number, length: number) =>
  Effect.gen(function*() {
    const found = yield* blobs.read(key)
    if (Option.isNone(found)) return Option.none<{ readonly bytes: Uint8Array; readonly size: number }>()
    const end = offset + length
    const { parts } = yield* Stream.runFoldWhile(found.value, { at: 0, parts: [] as Array<Uint8Array> }, (acc) => acc.at < end, (acc, chunk) => {
      const from = Math.max(offset - acc.at, 0)
      const to = Math.min(end - acc.at, chunk.length)
      if (from < to) acc.parts.push(chunk.subarray(from, to))
      return { at: acc.at + chunk.length, parts: acc.parts }
    })
    return Option.some({ bytes: concatBytes(parts), size: yield* blobs.size(key) })
  })

/** The 8 bytes before an upload's parts: the total it declared. */
const HEADER = 8

const header = (total: number) => {
  const bytes = new Uint8Array(HEADER)
  new DataView(bytes.buffer).setBigUint64(0, BigInt(total))
  return bytes
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((byte, i) => byte === b[i])

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
    if (part.bytes.length > AGENT_STATE_PART_BYTES) {
      return yield* new PayloadTooLarge({
        message: `data_base64: a part is at most ${AGENT_STATE_PART_BYTES} bytes`,
        limitBytes: AGENT_STATE_PART_BYTES
      })
    }
    if (part.offset + part.bytes.length > part.total) return yield* InvalidRequest.forField("data_base64", "goes past total_bytes")
    const upload = agentStateUploadKey(runId, executionId)
    const stored = yield* blobs.size(upload)
    const complete = part.offset + part.bytes.length === part.total
    if (stored === 0 && part.offset > 0) {
      // The last part again, after it moved the whole into place (its answer was lost).
      const kept = yield* sliceOf(blobs, agentStateKey(runId), part.offset, part.bytes.length)
      if (complete && Option.exists(kept, (k) => k.size === part.total && sameBytes(k.bytes, part.bytes))) {
        return { received: part.total, saved: true }
      }
      return yield* InvalidRequest.forField("offset", "the server has none of these session files; send the part at offset 0")
    }
    if (stored === 0) yield* blobs.appendAt(upload, 0, header(part.total))
    else {
      const declared = yield* sliceOf(blobs, upload, 0, HEADER)
      const total = Option.map(declared, (d) => Number(new DataView(d.bytes.buffer, d.bytes.byteOffset, HEADER).getBigUint64(0)))
      if (!Option.contains(total, part.total)) {
        yield* blobs.remove(upload)
        return yield* InvalidRequest.forField("total_bytes", "differs from the upload's first part; send the session files again from offset 0")
      }
    }
    const before = Math.max(stored - HEADER, 0)
    if (part.offset > before) {
      return yield* InvalidRequest.forField("offset", `the server has ${before} bytes of these session files; send the part at offset ${before}`)
    }
    const received = (yield* blobs.appendAt(upload, HEADER + part.offset, part.bytes)) - HEADER
    if (received < part.total) return { received, saved: false }
    const whole = yield* readWhole(blobs, upload)
    // Another request with the same last part moved it into place meanwhile.
    if (Option.isNone(whole)) return { received: part.total, saved: true }
    yield* save(blobs, runId, whole.value.subarray(HEADER))
    yield* blobs.remove(upload)
    return { received, saved: true }
  })
