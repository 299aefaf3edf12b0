/**
 * What a stopping process of the service leaves for the next about an agent it left running
 * (Execution.ts; the executor's `LastingAgent.detach`): how far it read the agent's output, the
 * execution's state as reduced from it, and what of it was saved. The next process adopts the
 * agent from there, as the same execution under the same lease, as if nothing had happened:
 * the output after `offset` goes on from the line it was in, the conversation log from part
 * `conversation_seq`, the usage on top of `usage_before`, the maximum runtime from `started_at`.
 *
 * It is kept in the service's blob store (never where the agent could write), and written once
 * everything it counts as saved is: the conversation and the report (`pending` and `artifacts`
 * are then empty).
 */
import { Either, Encoding, Schema } from "effect"
import { concatBytes } from "../internal/Bytes.js"
import type { ExecutionState, LineBuffer } from "./Harness.js"
import { RequestUsage } from "./Run.js"

const Note = Schema.Struct({
  version: Schema.Literal(1),
  /** Bytes of the agent's stdout read (into the transcript and the state). */
  offset: Schema.NonNegativeInt,
  /** Where the run's transcript ended: the next output's place (checked against storage on adoption). */
  transcript_bytes: Schema.NonNegativeInt,
  /** The bytes of the line the agent was writing (base64), and those of it past the line limit. */
  line: Schema.String,
  line_dropped: Schema.NonNegativeInt,
  /** The execution's state (Harness.ts), its actions as entries, without its budget. */
  state: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  usage_before: RequestUsage,
  /** The report last written (its JSON), so that the same one is not written again. */
  report_written: Schema.String,
  conversation_seq: Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)),
  started_at: Schema.Number
})
type Note = typeof Note.Type

const NoteJson = Schema.parseJson(Note)
const encodeNote = Schema.encodeSync(NoteJson)
const decodeNote = Schema.decodeUnknownEither(NoteJson)

/** What the note is made from: an execution's output as its reader left it. */
export interface Adoption {
  readonly offset: number
  readonly transcript_bytes: number
  readonly buffer: LineBuffer
  readonly state: ExecutionState
  readonly usage_before: RequestUsage
  readonly report_written: string
  readonly conversation_seq: number
  readonly started_at: number
}

/** The note's bytes. */
export const write = (adoption: Adoption): Uint8Array => {
  const { budget: _budget, actions, ...state } = adoption.state
  const note: Note = {
    version: 1,
    offset: adoption.offset,
    transcript_bytes: adoption.transcript_bytes,
    line: Encoding.encodeBase64(concatBytes(adoption.buffer.parts)),
    line_dropped: adoption.buffer.dropped,
    state: { ...state, actions: [...actions.entries()] },
    usage_before: adoption.usage_before,
    report_written: adoption.report_written,
    conversation_seq: adoption.conversation_seq,
    started_at: adoption.started_at
  }
  return new TextEncoder().encode(encodeNote(note))
}

/** The adoption a note describes (its state bound by no budget yet); undefined for bytes that are no note of this version. */
export const read = (bytes: Uint8Array): Adoption | undefined => {
  const decoded = decodeNote(new TextDecoder().decode(bytes))
  if (decoded._tag === "Left") return undefined
  const note = decoded.right
  const actions = note.state["actions"]
  if (!Array.isArray(actions)) return undefined
  const line = Either.getOrUndefined(Encoding.decodeBase64(note.line))
  if (line === undefined) return undefined
  return {
    offset: note.offset,
    transcript_bytes: note.transcript_bytes,
    buffer: { parts: line.length === 0 ? [] : [line], size: line.length, dropped: note.line_dropped },
    // The service's own note, written from this very type: its fields as they were.
    state: { ...note.state, actions: new Map(actions), budget: undefined } as unknown as ExecutionState,
    usage_before: note.usage_before,
    report_written: note.report_written,
    conversation_seq: note.conversation_seq,
    started_at: note.started_at
  }
}
