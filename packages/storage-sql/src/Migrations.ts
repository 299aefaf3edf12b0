/**
 * The schema of both dialects, as forward-only migrations applied at start (idempotent: applied
 * ones are recorded in `agent_runs_migrations` and skipped). Dialect differences sit behind
 * `sql.onDialectOrElse` inside each migration.
 */
import { SqlClient } from "@effect/sql"
import * as Migrator from "@effect/sql/Migrator"
import { Effect } from "effect"
import * as PreviousRelease from "./PreviousRelease.js"
import { warnWithoutTrigrams } from "./RunListSql.js"
import runs from "./migrations/0001_runs.js"
import catalog from "./migrations/0002_catalog.js"
import runConversations from "./migrations/0003_run_conversations.js"
import workers from "./migrations/0004_workers.js"
import deliveryCounts from "./migrations/0005_delivery_counts.js"
import workerBindings from "./migrations/0006_worker_bindings.js"
import conversationParts from "./migrations/0007_conversation_parts.js"
import shapers from "./migrations/0008_shapers.js"
import auditLog from "./migrations/0009_audit_log.js"
import identityLifecycle from "./migrations/0010_identity_lifecycle.js"
import signIn from "./migrations/0011_sign_in.js"
import github from "./migrations/0012_github.js"
import runDocShape from "./migrations/0013_run_doc_shape.js"
import artifactDocShape from "./migrations/0014_artifact_doc_shape.js"
import renderedConversations from "./migrations/0015_rendered_conversations.js"
import idempotencyKeys from "./migrations/0016_idempotency_keys.js"
import traceDocShape from "./migrations/0017_trace_doc_shape.js"
import budgets from "./migrations/0018_budgets.js"
import fairShare from "./migrations/0019_fair_share.js"
import outboundWebhooks from "./migrations/0020_outbound_webhooks.js"
import outboundClaimIndexes from "./migrations/0021_outbound_claim_indexes.js"
import outboundHealthIndex from "./migrations/0022_outbound_health_index.js"
import outboundNames from "./migrations/0023_outbound_names.js"
import retention from "./migrations/0024_retention.js"
import workerVersions from "./migrations/0025_worker_versions.js"
import conversationOrder from "./migrations/0026_conversation_order.js"

export const loader = Migrator.fromRecord({
  "0001_runs": runs,
  "0002_catalog": catalog,
  "0003_run_conversations": runConversations,
  "0004_workers": workers,
  "0005_delivery_counts": deliveryCounts,
  "0006_worker_bindings": workerBindings,
  "0007_conversation_parts": conversationParts,
  "0008_shapers": shapers,
  "0009_audit_log": auditLog,
  "0010_identity_lifecycle": identityLifecycle,
  "0011_sign_in": signIn,
  "0012_github": github,
  "0013_run_doc_shape": runDocShape,
  "0014_artifact_doc_shape": artifactDocShape,
  "0015_rendered_conversations": renderedConversations,
  "0016_idempotency_keys": idempotencyKeys,
  "0017_trace_doc_shape": traceDocShape,
  "0018_budgets": budgets,
  "0019_fair_share": fairShare,
  "0020_outbound_webhooks": outboundWebhooks,
  "0021_outbound_claim_indexes": outboundClaimIndexes,
  "0022_outbound_health_index": outboundHealthIndex,
  "0023_outbound_names": outboundNames,
  "0024_retention": retention,
  "0025_worker_versions": workerVersions,
  "0026_conversation_order": conversationOrder
})

/** Migration 0017's shapes and statement (its test runs it on a database with older documents). */
export * as TraceDocShape from "./migrations/0017_trace_doc_shape.js"
/** Migration 0018's shape and statements (likewise). */
export * as Budgets from "./migrations/0018_budgets.js"
/** Migration 0019's shape and statements (likewise). */
export * as FairShare from "./migrations/0019_fair_share.js"

const TABLE = "agent_runs_migrations"
const migrator = Migrator.make({})({ loader, table: TABLE })

/**
 * Applies the migrations up to `last` only: the schema an earlier release ended with
 * (Releases.ts), which the compatibility tests migrate further (SchemaCompatibility.ts).
 */
export const migrateThrough = (last: number) =>
  Migrator.make({})({ loader: Effect.map(loader, (all) => all.filter(([id]) => id <= last)), table: TABLE })

/**
 * Applies every migration not yet applied, then warns in the log when the run list's `q` can only
 * match substrings (PostgreSQL without pg_trgm), and catches up on what replicas of the previous
 * release wrote (PreviousRelease.ts). On PostgreSQL, replicas that start at once take
 * turns: the whole migration, the creation of its own table included (which two sessions cannot
 * both do at once), runs in one transaction holding an advisory lock, so the first migrates and
 * the others then find nothing to do. The table is created here first, as the migrator would
 * (whose own check of it would fail a statement, and with it the transaction).
 */
export const migrate = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.onDialectOrElse({
    pg: () =>
      sql.withTransaction(Effect.gen(function* () {
        yield* sql`SELECT pg_advisory_xact_lock(hashtext(${TABLE}))`
        yield* sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (
          migration_id integer primary key,
          created_at timestamp with time zone not null default now(),
          name text not null
        )`
        return yield* migrator
      })),
    orElse: () => migrator
  })).pipe(
    Effect.tap(() => Effect.flatMap(SqlClient.SqlClient, warnWithoutTrigrams)),
    Effect.tap(() => PreviousRelease.catchUp)
  )
