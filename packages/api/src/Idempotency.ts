/**
 * The `Idempotency-Key` request header (docs/reference/idempotency.md) of the creates that take
 * one: run creation, follow-ups, a schedule's run-now and the creation of a team or principal. Optional; the server
 * checks it (1 to 255 visible ASCII characters, else 400 naming it). The same key and request
 * within 24 hours answers the first answer again (`Idempotent-Replayed: true`); the same key with
 * another request is a 422; a repeat while the first still runs is a 409 with `retryable: true`.
 */
import { Schema } from "effect"
import { TeamHeaders } from "./Security.js"

/** The header's name, lower-case as headers are decoded. */
export const IDEMPOTENCY_HEADER = "idempotency-key"

const idempotencyKey = Schema.optional(
  Schema.String.annotations({
    description: "A key of the caller's choosing (1 to 255 visible ASCII characters, e.g. a UUID): the same key and " +
      "request within 24 hours answers the first answer again without doing anything (`Idempotent-Replayed: true`); " +
      "the same key with a different request: 422; while the first request still runs: 409, retryable."
  })
)

/** The header alone (creating a team or principal: admin creates take no TEAM header). */
export const IdempotentHeaders = Schema.Struct({ [IDEMPOTENCY_HEADER]: idempotencyKey })

/** The TEAM header and the idempotency key (team-scoped creates). */
export const IdempotentTeamHeaders = Schema.Struct({ ...TeamHeaders.fields, [IDEMPOTENCY_HEADER]: idempotencyKey })
