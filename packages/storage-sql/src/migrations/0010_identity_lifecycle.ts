/**
 * The identity lifecycle (docs/reference/access.md):
 *
 * - `principals.disabled_at`: a disabled principal's tokens, and its runs' tokens, stop working;
 *   enabling it again restores them. `principals.deleted_at`: a deleted principal stays as a
 *   tombstone that keeps its name (runs and audit entries show it); its memberships are removed
 *   and its tokens revoked in the same transaction.
 * - `tokens.expires_at` (a token stops working then), `tokens.last_used_at` (kept to the minute),
 *   `tokens.team_uid` and `tokens.max_role` (the team it acts in only, the most rights it acts
 *   with). Tokens made before have none of them.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE principals ADD COLUMN disabled_at BIGINT NULL`
  yield* sql`ALTER TABLE principals ADD COLUMN deleted_at BIGINT NULL`
  yield* sql`ALTER TABLE tokens ADD COLUMN expires_at BIGINT NULL`
  yield* sql`ALTER TABLE tokens ADD COLUMN last_used_at BIGINT NULL`
  yield* sql`ALTER TABLE tokens ADD COLUMN team_uid TEXT NULL`
  yield* sql`ALTER TABLE tokens ADD COLUMN max_role TEXT NULL CHECK (max_role IN ('admin', 'member', 'viewer'))`
  yield* sql`CREATE INDEX tokens_by_principal_created ON tokens (principal_uid, created_at)`
})
