/** Every storage port, as one requirement, and the test-only view of an adapter's raw storage. */
import type { Effect } from "effect"
import { Context } from "effect"
import type { AuditLog } from "../src/ports/AuditLog.js"
import type { AutomationStore } from "../src/ports/AutomationStore.js"
import type { EnvironmentStore } from "../src/ports/EnvironmentStore.js"
import type { IdempotencyStore } from "../src/ports/IdempotencyStore.js"
import type { IdentityStore } from "../src/ports/IdentityStore.js"
import type { OutboundWebhookStore } from "../src/ports/OutboundWebhookStore.js"
import type { RetentionStore } from "../src/ports/RetentionStore.js"
import type { RunStore } from "../src/ports/RunStore.js"
import type { ScheduleStore } from "../src/ports/ScheduleStore.js"
import type { SecretStore } from "../src/ports/SecretStore.js"
import type { WebhookStore } from "../src/ports/WebhookStore.js"
import type { WorkerStore } from "../src/ports/WorkerStore.js"

export type Stores =
  | RunStore
  | ScheduleStore
  | EnvironmentStore
  | WebhookStore
  | AutomationStore
  | SecretStore
  | IdentityStore
  | WorkerStore
  | AuditLog
  | IdempotencyStore
  | OutboundWebhookStore
  | RetentionStore

/**
 * Test-only: what an adapter has actually stored, so the suite can check that secrets are
 * encrypted at rest. Each adapter's test harness provides it (SQLite: the database file's bytes;
 * PostgreSQL: every row of every table as text).
 */
export class RawStorage extends Context.Tag("@agent-runs/core/testing/RawStorage")<RawStorage, {
  /** Whether any stored byte sequence contains this text (UTF-8). */
  readonly contains: (needle: string) => Effect.Effect<boolean>
}>() {}
