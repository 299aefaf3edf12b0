/** Ids given as arguments, checked before anything is sent: a malformed one is a usage error (exit 2). */
import { ParseResult, Schema } from "effect"
import { Effect } from "effect"
import * as Failure from "../Failure.js"

/** A schema's first problem as one line. */
export const problemOf = (error: ParseResult.ParseError): string => {
  const first = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  return first === undefined ? error.message : `${first.path.length > 0 ? `${first.path.join(".")}: ` : ""}${first.message}`
}

/** Decodes an id argument with its branded schema; `what` names it in the error ("run id"). */
export const decode = <A>(schema: Schema.Schema<A, string>, what: string) => (id: string): Effect.Effect<A, Failure.UsageError> =>
  Schema.decodeUnknown(schema)(id).pipe(
    Effect.mapError((error) => new Failure.UsageError({ message: `invalid ${what} "${id}": ${problemOf(error)}` }))
  )
