/**
 * A run's wire JSON served from what storage keeps (docs/performance.md, "Serving stored JSON"):
 * a list of runs is the JSON of each run's stored document with a few columns spliced in, not a
 * decoding of every row into a `RunItem` and an encoding of it back into the same JSON.
 *
 * Decisions:
 * - The stored document is the schema's encoding of the run's item without the parts kept in
 *   columns or tables of their own (`run_id`, `state`, `updated_at`, `metadata`,
 *   `ancestor_run_ids`, `artifacts`) and without the two computed flags (`is_sandbox_running`,
 *   `is_run_type_cancellable`), which are computed when the run is read from what else is stored:
 *   a claim changes the state without rewriting the document.
 * - A document is stored with `RUN_DOC_SHAPE`, a fingerprint of `RunItem`'s encoded form (its JSON
 *   Schema). Only a document of the current shape is spliced; any other (written before this
 *   scheme, or by a version whose `RunItem` differed) is decoded and encoded as before, until the
 *   run is written again. A change to `RunItem` therefore never serves an old document as new.
 * - The spliced JSON equals the schema's encoding of the presented run as a JSON value (the order
 *   of keys differs); the stores' conformance suite checks it for generated runs.
 */
import { sha256 } from "@noble/hashes/sha2.js"
import { Encoding, JSONSchema, Schema } from "effect"
import { RunItem } from "./Run.js"
import type { RunExecutionLocation, RunSourceType, RunState } from "./RunState.js"
import { isRunTypeCancellable } from "./RunStateMachine.js"

/** The fingerprint of `RunItem`'s encoded form that a stored document is spliced under. */
export const RUN_DOC_SHAPE: string = Encoding.encodeHex(
  sha256(new TextEncoder().encode(JSON.stringify(JSONSchema.make(RunItem))))
).slice(0, 16)

/** What the two computed flags of a run are computed from. */
export interface RunFlagInputs {
  readonly state: RunState
  readonly sandbox_retained: boolean
  readonly source: RunSourceType
  readonly execution_location: RunExecutionLocation
}

/** The two computed flags of a `RunItem`. */
export interface RunFlags {
  readonly is_sandbox_running: boolean
  readonly is_run_type_cancellable: boolean
}

/** `is_sandbox_running` (an executor holds the run, or a failed setup's sandbox is kept) and `is_run_type_cancellable`. */
export const runFlags = (run: RunFlagInputs): RunFlags => ({
  is_sandbox_running: run.state === "CLAIMED" || run.state === "INPROGRESS" || run.sandbox_retained,
  is_run_type_cancellable: isRunTypeCancellable(run)
})

/** The keys of a `RunItem` that its stored document leaves out. */
export const RUN_DOC_OMITS = [
  "run_id",
  "state",
  "updated_at",
  "metadata",
  "ancestor_run_ids",
  "artifacts",
  "is_sandbox_running",
  "is_run_type_cancellable"
] as const

/** A run's stored parts, each already JSON (as storage keeps them), and its flags. */
export interface RunJsonParts {
  readonly run_id: string
  readonly state: RunState
  /** The ISO 8601 text of `updated_at`. */
  readonly updated_at: string
  /** The JSON of `metadata`, of `ancestor_run_ids`, and of each artifact. */
  readonly metadata: string
  readonly ancestor_run_ids: string
  readonly artifacts: ReadonlyArray<string>
  /** The stored document: a JSON object of the current `RUN_DOC_SHAPE`. */
  readonly doc: string
  readonly flags: RunFlags
}

/** The wire JSON of a run from its stored parts. */
export const runJsonOf = (p: RunJsonParts): string => {
  // `run_id`, `state` (a literal) and the ISO time need no escaping beyond JSON.stringify's.
  const head = `{"run_id":${JSON.stringify(p.run_id)},"state":"${p.state}","updated_at":"${p.updated_at}",` +
    `"metadata":${p.metadata},"ancestor_run_ids":${p.ancestor_run_ids},"artifacts":[${p.artifacts.join(",")}],` +
    `"is_sandbox_running":${p.flags.is_sandbox_running},"is_run_type_cancellable":${p.flags.is_run_type_cancellable}`
  return p.doc === "{}" ? `${head}}` : `${head},${p.doc.slice(1)}`
}

const encodeItem = Schema.encodeSync(RunItem)

/** The wire JSON of a run item, by its schema (for runs not served from a stored document). */
export const runItemJson = (item: RunItem): string => JSON.stringify(encodeItem(item))
