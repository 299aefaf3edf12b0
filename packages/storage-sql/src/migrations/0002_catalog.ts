/**
 * Schedules, environments, webhooks, deliveries, automations, secrets, teams, principals, tokens.
 *
 * Conventions (both dialects): times are epoch milliseconds in BIGINT; booleans are BOOLEAN on
 * PostgreSQL and INTEGER 0/1 on SQLite; nested documents (agent configurations, histories,
 * principal references, triggers) are TEXT holding the JSON the core Schemas encode; encrypted
 * values are BYTEA/BLOB holding nonce ‖ ciphertext ‖ tag (see Crypto.ts). Text that lists sort on
 * (names, ids) compares by code point: PostgreSQL columns use COLLATE "C", SQLite's BINARY does
 * the same. Resources name their team without a foreign key (teams are never deleted, and the
 * runs of 0001 cannot reference a later table either); memberships and tokens do reference their
 * principal and team.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const bool = sql.literal(sql.onDialectOrElse({ pg: () => "BOOLEAN", orElse: () => "INTEGER" }))
  const bytes = sql.literal(sql.onDialectOrElse({ pg: () => "BYTEA", orElse: () => "BLOB" }))
  /** Text compared by code point (sorted lists, keyset positions). */
  const key = sql.literal(sql.onDialectOrElse({ pg: () => `TEXT COLLATE "C"`, orElse: () => "TEXT" }))

  // Identity: teams, principals with their memberships in join order, API token hashes.
  yield* sql`CREATE TABLE teams (
    uid ${key} PRIMARY KEY,
    name ${key} NOT NULL,
    features TEXT NOT NULL,
    max_concurrent_runs INTEGER NOT NULL,
    created_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX teams_by_name ON teams (name, uid)`

  yield* sql`CREATE TABLE principals (
    uid ${key} PRIMARY KEY,
    type TEXT NOT NULL CHECK (type IN ('user', 'service_account')),
    display_name TEXT NOT NULL,
    instance_admin ${bool} NOT NULL,
    created_at BIGINT NOT NULL
  )`

  yield* sql`CREATE TABLE memberships (
    principal_uid ${key} NOT NULL REFERENCES principals (uid) ON DELETE CASCADE,
    team_uid ${key} NOT NULL REFERENCES teams (uid),
    role TEXT NOT NULL CHECK (role IN ('admin', 'member', 'viewer')),
    join_order INTEGER NOT NULL,
    PRIMARY KEY (principal_uid, team_uid),
    UNIQUE (principal_uid, join_order)
  )`
  yield* sql`CREATE INDEX memberships_by_team ON memberships (team_uid)`

  yield* sql`CREATE TABLE tokens (
    token_id ${key} PRIMARY KEY,
    principal_uid ${key} NOT NULL REFERENCES principals (uid) ON DELETE CASCADE,
    name TEXT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT NULL
  )`
  yield* sql`CREATE INDEX tokens_by_principal ON tokens (principal_uid)`

  // Environments, their guests (in the order given) and who opened their share link.
  yield* sql`CREATE TABLE environments (
    uid ${key} PRIMARY KEY,
    team_uid ${key} NOT NULL,
    creator_uid ${key} NOT NULL,
    scope_type TEXT NOT NULL CHECK (scope_type IN ('Team', 'User')),
    scope_uid TEXT NOT NULL,
    config TEXT NOT NULL,
    link_sharing ${bool} NOT NULL,
    setup_failed ${bool} NOT NULL,
    last_task_created TEXT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX environments_by_team ON environments (team_uid, updated_at)`

  yield* sql`CREATE TABLE environment_guests (
    environment_uid ${key} NOT NULL REFERENCES environments (uid) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    principal_uid ${key} NOT NULL,
    PRIMARY KEY (environment_uid, ordinal)
  )`
  yield* sql`CREATE INDEX environment_guests_by_principal ON environment_guests (principal_uid, environment_uid)`

  yield* sql`CREATE TABLE environment_link_access (
    environment_uid ${key} NOT NULL REFERENCES environments (uid) ON DELETE CASCADE,
    principal_uid ${key} NOT NULL,
    PRIMARY KEY (environment_uid, principal_uid)
  )`
  yield* sql`CREATE INDEX environment_link_access_by_principal ON environment_link_access (principal_uid, environment_uid)`

  // Scheduled agents with their state machine's status and tick watermark (the tick ledger,
  // schedule_ticks, is in 0001 beside the runs it creates).
  yield* sql`CREATE TABLE schedules (
    id ${key} PRIMARY KEY,
    team_uid ${key} NOT NULL,
    creator_uid ${key} NOT NULL,
    scope_type TEXT NOT NULL CHECK (scope_type IN ('Team', 'User')),
    scope_uid TEXT NOT NULL,
    name ${key} NOT NULL,
    cron_schedule TEXT NOT NULL,
    timezone TEXT NOT NULL,
    enabled ${bool} NOT NULL,
    prompt TEXT NOT NULL,
    agent_config TEXT NOT NULL,
    environment TEXT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    created_by TEXT NOT NULL,
    updated_by TEXT NOT NULL,
    history TEXT NOT NULL,
    last_spawn_error TEXT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'paused', 'deleted')),
    last_tick_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX schedules_by_team ON schedules (team_uid, name, id)`
  yield* sql`CREATE INDEX schedules_active ON schedules (id) WHERE status = 'active'`

  // Webhooks: the secret sealed under (uid, secret version); deleted ones stay, invisible.
  yield* sql`CREATE TABLE webhooks (
    uid ${key} PRIMARY KEY,
    team_uid ${key} NOT NULL,
    creator_uid ${key} NOT NULL,
    name ${key} NOT NULL,
    auth_mode TEXT NOT NULL CHECK (auth_mode IN ('token', 'url_token', 'signature')),
    signature_scheme TEXT NULL,
    secret_name TEXT NULL,
    delivery_id_header TEXT NULL,
    enabled ${bool} NOT NULL,
    ingress_url TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('enabled', 'disabled', 'deleted')),
    secret_version INTEGER NOT NULL CHECK (secret_version >= 1),
    secret ${bytes} NULL
  )`
  yield* sql`CREATE INDEX webhooks_by_team ON webhooks (team_uid, name, uid)`

  // The delivery log and its de-duplication identities (shared with the run store through
  // DeliveriesSql.ts). An identity lives as long as the delivery that took it.
  yield* sql`CREATE TABLE deliveries (
    delivery_id ${key} PRIMARY KEY,
    webhook_uid TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    size_bytes INTEGER NOT NULL,
    identity TEXT NOT NULL,
    outcome TEXT NOT NULL,
    run_ids TEXT NOT NULL,
    payload TEXT NULL
  )`
  yield* sql`CREATE INDEX deliveries_by_webhook ON deliveries (webhook_uid, received_at, delivery_id)`

  yield* sql`CREATE TABLE delivery_identities (
    webhook_uid TEXT NOT NULL,
    identity TEXT NOT NULL,
    delivery_id TEXT NOT NULL REFERENCES deliveries (delivery_id) ON DELETE CASCADE,
    PRIMARY KEY (webhook_uid, identity)
  )`
  // So that pruning a delivery finds its identity without scanning (the cascade's lookup).
  yield* sql`CREATE INDEX delivery_identities_by_delivery ON delivery_identities (delivery_id)`

  // Automations, and the webhooks their trigger selects (so `forWebhook` is an index lookup).
  yield* sql`CREATE TABLE automations (
    id ${key} PRIMARY KEY,
    team_uid ${key} NOT NULL,
    creator_uid ${key} NOT NULL,
    name ${key} NOT NULL,
    enabled ${bool} NOT NULL,
    prompt TEXT NOT NULL,
    agent_config TEXT NOT NULL,
    trigger_spec TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX automations_by_team ON automations (team_uid, name, id)`

  yield* sql`CREATE TABLE automation_webhooks (
    webhook_uid ${key} NOT NULL,
    automation_id ${key} NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
    PRIMARY KEY (webhook_uid, automation_id)
  )`
  yield* sql`CREATE INDEX automation_webhooks_by_automation ON automation_webhooks (automation_id)`

  // Team secrets, sealed under (team, name).
  yield* sql`CREATE TABLE secrets (
    team_uid ${key} NOT NULL,
    name ${key} NOT NULL,
    value ${bytes} NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (team_uid, name)
  )`
})
