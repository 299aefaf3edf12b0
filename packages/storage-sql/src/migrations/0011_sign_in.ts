/**
 * Sign-in with OpenID Connect (docs/sign-in.md): a principal's email (lower case; what sign-in
 * matches a principal not linked yet by) and the provider subject it is linked to
 * (`<issuer> <sub>`, unique).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE principals ADD COLUMN email TEXT NULL`
  yield* sql`ALTER TABLE principals ADD COLUMN oidc_subject TEXT NULL`
  yield* sql`CREATE UNIQUE INDEX principals_by_subject ON principals (oidc_subject)`
  yield* sql`CREATE INDEX principals_by_email ON principals (email)`
})
