/** This release's migrations and the previous release's code, on PostgreSQL (SchemaCompatibility.ts). */
import { upgradeCompatibilitySuite } from "@agent-runs/storage-sql/testing"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { freshDatabase } from "./harness.js"

upgradeCompatibilitySuite((effect) =>
  Effect.flatMap(freshDatabase, ({ url }) => Effect.provide(effect, PgClient.layer({ url: Redacted.make(url) }))))
