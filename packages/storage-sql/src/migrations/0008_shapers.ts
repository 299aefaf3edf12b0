/**
 * Who shaped what a run executes (docs/security.md): a run token acts with the least role of its
 * creator, executor and every principal recorded here.
 *
 * - `run_shapers`: the principals who shaped a run beyond its creator's role now (an environment's
 *   last editor, a follow-up's sender, the runs a continued conversation or a parent run came
 *   from), each with the role it acted with then; rows only ever added.
 * - `runs.followup_count`, `runs.followup_bytes`: the follow-ups a run has received in its life and
 *   the bytes of their messages, for the per-run total.
 * - Environments and automations record their last editor and its role (`editor_uid`,
 *   `editor_role`); schedules already name theirs (`updated_by`) and get its role. What was stored
 *   before is not known: a Team environment counts as last changed by its creator as a member
 *   (any member could have changed it), a User environment by its creator with the creator's own
 *   role (only it and admins could change it); schedules and automations keep the editor's role
 *   now ('admin' caps nothing).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE run_shapers (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    principal_uid TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('admin', 'member', 'viewer')),
    PRIMARY KEY (run_id, principal_uid, role)
  )`
  yield* sql`ALTER TABLE runs ADD COLUMN followup_count INTEGER NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE runs ADD COLUMN followup_bytes BIGINT NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE environments ADD COLUMN editor_uid TEXT NOT NULL DEFAULT ''`
  yield* sql`ALTER TABLE environments ADD COLUMN editor_role TEXT NOT NULL DEFAULT 'member'`
  yield* sql`UPDATE environments SET editor_uid = creator_uid,
    editor_role = CASE WHEN scope_type = 'Team' THEN 'member' ELSE 'admin' END`
  yield* sql`ALTER TABLE schedules ADD COLUMN editor_role TEXT NOT NULL DEFAULT 'admin'`
  yield* sql`ALTER TABLE automations ADD COLUMN editor_uid TEXT NOT NULL DEFAULT ''`
  yield* sql`ALTER TABLE automations ADD COLUMN editor_role TEXT NOT NULL DEFAULT 'admin'`
  yield* sql`UPDATE automations SET editor_uid = creator_uid`
})
