/**
 * The team secrets service (`Secrets`) over a real storage adapter: put (create or replace), list
 * (names and times, never values) and delete, admins only, with webhooks that name a secret
 * keeping it from deletion. Each test makes fresh teams of its own. Call
 * `secretsServiceSuite(name, layer)` inside a vitest file.
 */
import { describe, expect, layer } from "@effect/vitest"
import { DateTime, Effect, Layer, Option, Redacted, Schema } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import { decodeRequest } from "../src/domain/Common.js"
import type { InvalidRequest } from "../src/domain/Errors.js"
import { IdsLive } from "../src/domain/Ids.js"
import { SecretStore } from "../src/ports/SecretStore.js"
import { ListSecretsResponse, PutSecretRequest, SecretName } from "../src/domain/Secret.js"
import { Secrets } from "../src/services/Secrets.js"
import { CreateWebhookRequest } from "../src/domain/Webhook.js"
import { webhookIngressSettings, Webhooks } from "../src/services/Webhooks.js"
import type { Stores } from "./Stores.js"
import { failureOf, seedWorld, type World } from "./World.js"

const decodePut = decodeRequest(PutSecretRequest)
const decodeName = decodeRequest(SecretName)
const decodeCreateWebhook = decodeRequest(CreateWebhookRequest)

const put = (viewer: Viewer, name: string, body: unknown) =>
  Effect.gen(function* () {
    const secretName = yield* decodeName(name)
    const request = yield* decodePut(body)
    return yield* (yield* Secrets).put(viewer, secretName, request)
  })

const remove = (viewer: Viewer, name: string) => Effect.flatMap(Secrets, (s) => s.remove(viewer, name as SecretName))

/** The stored value of a team's secret (what webhooks read). */
const valueOf = (world: World, name: string) =>
  Effect.flatMap(SecretStore, (store) => store.get(world.team, name as SecretName)).pipe(
    Effect.map(Option.map(Redacted.value))
  )

const namesOf = (world: World) =>
  Effect.flatMap(SecretStore, (store) => store.list(world.team)).pipe(Effect.map((l) => l.map((s) => s.name)))

/** Registers the secrets service suite against one storage adapter's layer. */
export const secretsServiceSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const services = Layer.mergeAll(Secrets.Default, Webhooks.Default).pipe(
    Layer.provideMerge(Layer.mergeAll(storage, IdsLive, webhookIngressSettings("http://127.0.0.1:8080")))
  )

  describe(`secrets service (${name})`, () => {
    layer(services, { excludeTestServices: true, timeout: "60 seconds" })("Secrets", (it) => {
      it.effect("put creates, then replaces, a secret: names and times answered, never the value", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const secrets = yield* Secrets
          const created = yield* put(world.admin, "GITHUB_SECRET", { value: "s3cret-one" })
          expect(created.name).toBe("GITHUB_SECRET")
          expect(created.updated_at).toEqual(created.created_at)
          expect(JSON.stringify(created)).not.toContain("s3cret-one")
          expect(yield* valueOf(world, "GITHUB_SECRET")).toEqual(Option.some("s3cret-one"))

          yield* Effect.sleep("5 millis")
          const replaced = yield* put(world.admin, "GITHUB_SECRET", { value: "s3cret-two" })
          expect(replaced.created_at).toEqual(created.created_at)
          expect(DateTime.toEpochMillis(replaced.updated_at)).toBeGreaterThan(DateTime.toEpochMillis(created.updated_at))
          expect(yield* valueOf(world, "GITHUB_SECRET")).toEqual(Option.some("s3cret-two"))

          yield* put(world.admin, "A_FIRST", { value: "another" })
          const listed = yield* secrets.list(world.admin)
          expect(listed.secrets.map((s) => s.name)).toEqual(["A_FIRST", "GITHUB_SECRET"])
          expect(listed.secrets[1]).toEqual(replaced)
          const encoded = JSON.stringify(Schema.encodeSync(ListSecretsResponse)(listed))
          expect(encoded).not.toContain("s3cret")
          expect(encoded).not.toContain("another")
          expect(Object.keys(Schema.encodeSync(ListSecretsResponse)(listed).secrets[0]!).sort()).toEqual([
            "created_at",
            "name",
            "updated_at"
          ])
        }))

      it.effect("delete removes a secret; an absent one is a 404", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          yield* put(world.admin, "GONE", { value: "v" })
          yield* put(world.admin, "STAYS", { value: "v" })
          yield* remove(world.admin, "GONE")
          expect(yield* namesOf(world)).toEqual(["STAYS"])
          expect(yield* valueOf(world, "GONE")).toEqual(Option.none())
          const again = yield* failureOf(remove(world.admin, "GONE"))
          expect(again._tag).toBe("ResourceNotFound")
          expect(again.message).toContain("GONE")
          expect((yield* failureOf(remove(world.admin, "NEVER")))._tag).toBe("ResourceNotFound")
        }))

      it.effect("a secret a webhook names cannot be deleted (409) until the webhook is", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const webhooks = yield* Webhooks
          yield* put(world.admin, "HOOK_TOKEN", { value: "token-value" })
          const request = yield* decodeCreateWebhook({ name: "uses it", secret_name: "HOOK_TOKEN" })
          const hook = yield* webhooks.create(world.admin, request)
          const refused = yield* failureOf(remove(world.admin, "HOOK_TOKEN"))
          expect(refused._tag).toBe("Conflict")
          expect(refused.message).toContain("uses it")
          expect(yield* valueOf(world, "HOOK_TOKEN")).toEqual(Option.some("token-value"))
          yield* webhooks.remove(world.admin, hook.uid)
          yield* remove(world.admin, "HOOK_TOKEN")
          expect(yield* namesOf(world)).toEqual([])
        }))

      it.effect("admins only: members and viewers get 403 for put, list and delete, and nothing changes", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const secrets = yield* Secrets
          yield* put(world.admin, "KEPT", { value: "original" })
          for (const viewer of [world.alice, world.viewer]) {
            expect((yield* failureOf(put(viewer, "KEPT", { value: "changed" })))._tag).toBe("NotAuthorized")
            expect((yield* failureOf(put(viewer, "NEW", { value: "x" })))._tag).toBe("NotAuthorized")
            expect((yield* failureOf(secrets.list(viewer)))._tag).toBe("NotAuthorized")
            expect((yield* failureOf(remove(viewer, "KEPT")))._tag).toBe("NotAuthorized")
          }
          expect(yield* namesOf(world)).toEqual(["KEPT"])
          expect(yield* valueOf(world, "KEPT")).toEqual(Option.some("original"))
        }))

      it.effect("teams are separate: another team's admin neither sees nor deletes a secret", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const secrets = yield* Secrets
          yield* put(world.admin, "SHARED_NAME", { value: "ours" })
          expect((yield* secrets.list(other.admin)).secrets).toEqual([])
          expect((yield* failureOf(remove(other.admin, "SHARED_NAME")))._tag).toBe("ResourceNotFound")
          yield* put(other.admin, "SHARED_NAME", { value: "theirs" })
          expect(yield* valueOf(world, "SHARED_NAME")).toEqual(Option.some("ours"))
          expect(yield* valueOf(other, "SHARED_NAME")).toEqual(Option.some("theirs"))
        }))

      it.effect("rejects an empty or missing value and a bad name with a 400 naming it, storing nothing", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          for (const [name, body, field] of [
            ["OK", { value: "" }, "value"],
            ["OK", {}, "value"],
            ["OK", { value: 42 }, "value"],
            ["OK", { value: "x".repeat(65537) }, "value"]
          ] as const) {
            const error = yield* failureOf(put(world.admin, name, body))
            expect(error._tag).toBe("InvalidRequest")
            expect((error as InvalidRequest).field).toBe(field)
          }
          for (const bad of ["1STARTS_WITH_DIGIT", "has-dash", ""]) {
            expect((yield* failureOf(put(world.admin, bad, { value: "v" })))._tag).toBe("InvalidRequest")
          }
          expect(yield* namesOf(world)).toEqual([])
        }))
    })
  })
}
