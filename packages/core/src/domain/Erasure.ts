/**
 * Erasing a principal's personal data (docs/retention.md#erasing-a-principal): the request, the
 * answer, and the name that replaces theirs.
 */
import { Schema } from "effect"

/** The name an erased principal keeps, where its runs are kept, and on its tombstone. */
export const ERASED_NAME = "erased principal"

/** `POST /admin/principals/{principal_uid}/erase`. */
export class EraseRequest extends Schema.Class<EraseRequest>("EraseRequest")({
  /** `delete`: the runs it created go, with their conversations, transcripts and follow-ups; `anonymize`: they stay, its name replaced. */
  runs: Schema.Literal("delete", "anonymize")
}) {}

/** What an erasure did. */
export class EraseResponse extends Schema.Class<EraseResponse>("EraseResponse")({
  principal_uid: Schema.String,
  runs_deleted: Schema.NonNegativeInt,
  runs_anonymized: Schema.NonNegativeInt
}) {}
