/**
 * The marker file of a sandbox, `<root>/<run_id>/<execution_id>.sandbox.json`: who the sandbox
 * belongs to, when it was made, what the agent sees as attachments, and the process groups
 * started in it that may still run (so that a later life of the service can stop them). The
 * sandbox's environment is deliberately not stored: it may hold secrets.
 */
import { Ids } from "@agent-runs/core"
import { Either, Option, Schema } from "effect"

/** The suffix of marker file names. */
export const MARKER_SUFFIX = ".sandbox.json"

export const Marker = Schema.Struct({
  version: Schema.Literal(1),
  run_id: Ids.RunId,
  execution_id: Ids.ExecutionId,
  /** ISO 8601. */
  created_at: Schema.String,
  attachments: Schema.Array(Schema.Struct({ name: Schema.String, media_type: Schema.String, path: Schema.String })),
  /** Process group ids of processes started in the sandbox that had not exited when last written. */
  process_groups: Schema.Array(Schema.Int.pipe(Schema.positive())),
  /** The sandbox's own uid, when the executor isolates sandboxes by user. */
  uid: Schema.optional(Schema.Int.pipe(Schema.positive()))
})
export type Marker = typeof Marker.Type

const decode = Schema.decodeUnknownEither(Schema.parseJson(Marker))

/**
 * The marker in `text`, read from the file `<runDir>/<fileName>`: none when it is not a marker, is
 * malformed, or names another run or execution than its place on disk (a marker never points
 * elsewhere).
 */
export const parseMarker = (text: string, location: { readonly runDir: string; readonly fileName: string }): Option.Option<Marker> => {
  if (!location.fileName.endsWith(MARKER_SUFFIX)) return Option.none()
  const executionId = location.fileName.slice(0, -MARKER_SUFFIX.length)
  return Either.getRight(decode(text)).pipe(
    Option.filter((marker) => marker.run_id === location.runDir && marker.execution_id === executionId)
  )
}

/** The marker as the file's text. */
export const formatMarker = (marker: Marker): string => `${JSON.stringify(marker, null, 2)}\n`
