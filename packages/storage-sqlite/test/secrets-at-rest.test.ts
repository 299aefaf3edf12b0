/**
 * What the conformance suite cannot do through the ports: move stored ciphertexts between rows
 * with SQL, and check that they no longer open. The stores are shared by both dialects, so one
 * dialect shows that each row's ciphertext is bound to that row.
 */
import { describe, expect, layer } from "@effect/vitest"
import type { TeamUid, WebhookUid } from "@agent-runs/core/domain/Ids"
import { SecretStore } from "@agent-runs/core/ports/SecretStore"
import { WebhookStore } from "@agent-runs/core/ports/WebhookStore"
import type { StoredWebhook } from "@agent-runs/core/ports/WebhookStore"
import type { SecretName } from "@agent-runs/core/domain/Secret"
import { Webhook } from "@agent-runs/core/domain/Webhook"
import { SqlClient } from "@effect/sql"
import { DateTime, Effect, Either, Option, Redacted } from "effect"
import { storageLayer } from "./harness.js"

const team = (s: string) => s.padEnd(22, "0") as TeamUid
const name = (s: string) => s as SecretName

const webhook = (uid: string, secret: string): StoredWebhook => ({
  item: new Webhook({
    uid: uid.padEnd(22, "0") as WebhookUid,
    name: "hook",
    auth_mode: "token",
    signature_scheme: null,
    enabled: true,
    ingress_url: "https://example.test/hook",
    created_at: DateTime.unsafeMake(0),
    updated_at: DateTime.unsafeMake(0)
  }),
  team_uid: team("T"),
  creator_uid: "P".padEnd(22, "0") as StoredWebhook["creator_uid"],
  state: { status: "enabled", secretVersion: 1 },
  secret: Redacted.make(secret)
})

const failsWithStorageError = <A, E extends { readonly _tag: string }, R>(self: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.either(self), (r) => Either.isLeft(r) && r.left._tag === "StorageError")

layer(storageLayer, { excludeTestServices: true })("secrets at rest (SQLite file)", (it) => {
  describe("a ciphertext copied into another row does not open there", () => {
    it.effect("team secrets", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const secrets = yield* SecretStore
        yield* secrets.put(team("A"), name("TOKEN"), Redacted.make("alpha"), 1)
        yield* secrets.put(team("B"), name("TOKEN"), Redacted.make("beta"), 1)
        yield* secrets.put(team("A"), name("OTHER"), Redacted.make("gamma"), 1)
        const copy = (to: TeamUid, toName: string) =>
          sql`UPDATE secrets SET value = (SELECT value FROM secrets WHERE team_uid = ${team("A")} AND name = 'TOKEN')
            WHERE team_uid = ${to} AND name = ${toName}`
        yield* copy(team("B"), "TOKEN")
        yield* copy(team("A"), "OTHER")
        expect(yield* failsWithStorageError(secrets.get(team("B"), name("TOKEN")))).toBe(true)
        expect(yield* failsWithStorageError(secrets.get(team("A"), name("OTHER")))).toBe(true)
        expect(Option.map(yield* secrets.get(team("A"), name("TOKEN")), Redacted.value)).toEqual(Option.some("alpha"))
      }))

    it.effect("webhook secrets, including an older version of the same webhook's", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const webhooks = yield* WebhookStore
        const [one, two] = [webhook("W1", "first"), webhook("W2", "second")]
        yield* webhooks.create(one)
        yield* webhooks.create(two)
        yield* sql`UPDATE webhooks SET secret = (SELECT secret FROM webhooks WHERE uid = ${one.item.uid})
          WHERE uid = ${two.item.uid}`
        expect(yield* failsWithStorageError(webhooks.get(two.item.uid))).toBe(true)

        const rows = yield* sql<{ secret: Uint8Array }>`SELECT secret FROM webhooks WHERE uid = ${one.item.uid}`
        const v1 = rows[0]!.secret
        yield* webhooks.update({ ...one, state: { status: "enabled", secretVersion: 2 }, secret: Redacted.make("rotated") }, 1)
        yield* sql`UPDATE webhooks SET secret = ${v1} WHERE uid = ${one.item.uid}`
        expect(yield* failsWithStorageError(webhooks.get(one.item.uid))).toBe(true)
      }))
  })
})
