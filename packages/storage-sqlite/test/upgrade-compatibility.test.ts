/**
 * This release's migrations and the previous release's code, on SQLite (SchemaCompatibility.ts),
 * and reads that leave out what a later release wrote.
 */
import { expect, it } from "@effect/vitest"
import type { PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { RunStore } from "@agent-runs/core/ports/RunStore"
import { creationEvents, makeDelivery, makeRun, makeWebhook, uid } from "@agent-runs/core/testing"
import { WebhookStore } from "@agent-runs/core/ports/WebhookStore"
import { Migrations } from "@agent-runs/storage-sql"
import { upgradeCompatibilitySuite } from "@agent-runs/storage-sql/testing"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Context, Effect, Layer } from "effect"
import { SqliteStorage } from "../src/index.js"
import { freshDatabase, testKey } from "./harness.js"

upgradeCompatibilitySuite((effect) => Effect.flatMap(freshDatabase, ({ filename }) => Effect.provide(effect, SqliteClient.layer({ filename }))))

it.scoped("a timeline event of a later release (a rolled-back deploy) is left out of reads, not a failure", () =>
  Effect.gen(function* () {
    const { filename } = yield* freshDatabase
    const context = yield* Layer.build(SqliteStorage.layer({ filename, secretKey: testKey() }))
    const store = Context.get(context, RunStore)
    const run = makeRun({ team: uid<TeamUid>(), creator: uid<PrincipalUid>(), state: "SUCCEEDED" })
    yield* store.create([{ run, events: creationEvents(run) }])
    const known = yield* store.timeline(run.item.run_id, 0)
    yield* Context.get(context, SqlClient.SqlClient)`INSERT INTO timeline_events (run_id, sequence, event_type, occurred_at, execution_id)
      VALUES (${run.item.run_id}, ${known.length + 1}, 'sandbox_adopted', ${Date.now()}, ${known[0]!.execution_id})`
    expect(yield* store.timeline(run.item.run_id, 0)).toEqual(known)
  }))

it.scoped("a delivery a replica of the previous release accepted (no payload tracked) is tracked for retention at the next start", () =>
  Effect.gen(function* () {
    const { filename } = yield* freshDatabase
    const context = yield* Layer.build(SqliteStorage.layer({ filename, secretKey: testKey() }))
    const sql = Context.get(context, SqlClient.SqlClient)
    const webhook = makeWebhook({ team: uid<TeamUid>() })
    yield* Context.get(context, WebhookStore).create(webhook)
    const delivery = makeDelivery(Date.now(), "ACCEPTED")
    yield* Context.get(context, RunStore).create([], { _tag: "Delivery", webhook_uid: webhook.item.uid, identity: delivery.identity, delivery })
    const tracked = sql<{ delivery_id: string }>`SELECT delivery_id FROM webhook_payloads`
    expect(yield* tracked).toEqual([{ delivery_id: delivery.delivery_id }])
    // As a replica of 0.1 writes it: the log entry alone.
    yield* sql`DELETE FROM webhook_payloads`
    yield* Effect.provide(Migrations.migrate, context)
    expect(yield* tracked).toEqual([{ delivery_id: delivery.delivery_id }])
  }))
