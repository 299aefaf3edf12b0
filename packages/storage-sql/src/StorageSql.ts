/**
 * Every storage port of @agent-runs/core over an `SqlClient`, for SQLite and PostgreSQL alike.
 * The dialect packages provide the client, the wake-ups and the key, and run `migrate` first.
 */
import { Layer } from "effect"
import * as AuditLogSql from "./AuditLogSql.js"
import * as AutomationStoreSql from "./AutomationStoreSql.js"
import * as EnvironmentStoreSql from "./EnvironmentStoreSql.js"
import * as IdempotencyStoreSql from "./IdempotencyStoreSql.js"
import * as IdentityStoreSql from "./IdentityStoreSql.js"
import * as OutboundWebhookStoreSql from "./OutboundWebhookStoreSql.js"
import * as RetentionStoreSql from "./RetentionStoreSql.js"
import * as SealedValuesSql from "./SealedValuesSql.js"
import * as RunStoreSql from "./RunStoreSql.js"
import * as ScheduleStoreSql from "./ScheduleStoreSql.js"
import * as SecretStoreSql from "./SecretStoreSql.js"
import * as WebhookStoreSql from "./WebhookStoreSql.js"
import * as WorkerStoreSql from "./WorkerStoreSql.js"

/** The stores, needing `SqlClient`, its `Reader`, `Wakeups` and `StorageKey`. */
export const layer = Layer.mergeAll(
  Layer.empty,
  RunStoreSql.layer,
  ScheduleStoreSql.layer,
  EnvironmentStoreSql.layer,
  WebhookStoreSql.layer,
  AutomationStoreSql.layer,
  SecretStoreSql.layer,
  IdentityStoreSql.layer,
  WorkerStoreSql.layer,
  AuditLogSql.layer,
  IdempotencyStoreSql.layer,
  OutboundWebhookStoreSql.layer,
  RetentionStoreSql.layer,
  SealedValuesSql.layer
)
