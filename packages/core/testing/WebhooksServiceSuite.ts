/**
 * The webhooks service (`Webhooks`) over a real storage adapter: create (credentials per mode,
 * secret shown once, team secrets, the 20-per-team limit), list, get, patch (with the state
 * machine and team secrets re-read on enable), delete, rotate, and the delivery log (seeded
 * through `WebhookStore.logDelivery`), with access checks and validation. Each test makes fresh
 * teams of its own. Call `webhooksServiceSuite(name, layer)` inside a vitest file.
 */
import { describe, expect, layer } from "@effect/vitest"
import { DateTime, Effect, Either, Encoding, Layer, Option, Redacted, Schema } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import { decodeRequest } from "../src/domain/Common.js"
import type { InvalidRequest } from "../src/domain/Errors.js"
import { DeliveryId, IdsLive, WebhookUid } from "../src/domain/Ids.js"
import { WebhookStore } from "../src/ports/WebhookStore.js"
import { PutSecretRequest, type SecretName } from "../src/domain/Secret.js"
import { Secrets } from "../src/services/Secrets.js"
import {
  CreateWebhookRequest,
  Delivery,
  type DeliveryOutcome,
  ListWebhooksResponse,
  MAX_WEBHOOKS_PER_TEAM,
  PatchWebhookRequest,
  Webhook,
  WebhookWithSecret
} from "../src/domain/Webhook.js"
import { DELIVERY_PAGE_LIMIT, standardWebhooksKey, webhookIngressSettings, Webhooks } from "../src/services/Webhooks.js"
import { uid } from "./RunStoreConformance.js"
import type { Stores } from "./Stores.js"
import { failureOf, seedWorld, type World } from "./World.js"

/** The ingress base URL the suite provides (with a trailing slash, which must be dropped). */
const BASE = "https://hooks.example.test/"
const ingressOf = (uid: string) => `https://hooks.example.test/webhooks/w/${uid}`

const decodeCreate = decodeRequest(CreateWebhookRequest)
const decodePatch = decodeRequest(PatchWebhookRequest)
const decodePut = decodeRequest(PutSecretRequest)

/** Decodes a body as the transport does, then creates the webhook. */
const create = (viewer: Viewer, body: unknown) =>
  Effect.flatMap(decodeCreate(body), (request) => Effect.flatMap(Webhooks, (w) => w.create(viewer, request)))

const patch = (viewer: Viewer, uid: WebhookUid, body: unknown) =>
  Effect.flatMap(decodePatch(body), (request) => Effect.flatMap(Webhooks, (w) => w.patch(viewer, uid, request)))

const putSecret = (viewer: Viewer, name: string, value: string) =>
  Effect.flatMap(decodePut({ value }), (request) =>
    Effect.flatMap(Secrets, (s) => s.put(viewer, name as SecretName, request)))

/** The credential the store holds for a webhook (what the ingress will check). */
const storedSecret = (uid: WebhookUid) =>
  Effect.flatMap(WebhookStore, (store) => store.get(uid)).pipe(
    Effect.map(Option.flatMap((w) => Option.fromNullable(w.secret))),
    Effect.map(Option.map(Redacted.value))
  )

/** The names of the team's webhooks, as its admin lists them. */
const names = (world: World) =>
  Effect.flatMap(Webhooks, (w) => w.list(world.admin)).pipe(Effect.map((r) => r.webhooks.map((h) => h.name)))

const wire = (u: unknown) => JSON.stringify(u)

const expectInvalid = (error: unknown, field: string) => {
  expect((error as InvalidRequest)._tag).toBe("InvalidRequest")
  expect((error as InvalidRequest).field).toBe(field)
  expect((error as InvalidRequest).message.startsWith(`${field}: `)).toBe(true)
}

const delivery = (receivedAt: number, outcome: DeliveryOutcome = "ACCEPTED", id = uid<DeliveryId>()) =>
  new Delivery({
    delivery_id: id,
    received_at: DateTime.unsafeMake(receivedAt),
    size_bytes: 17,
    identity: `identity-${id}`,
    outcome,
    run_ids: [],
    ...(outcome === "ACCEPTED" ? { payload: { n: receivedAt } } : {})
  })

const T = Date.UTC(2026, 10, 2)

/** Registers the webhooks service suite against one storage adapter's layer. */
export const webhooksServiceSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const services = Layer.mergeAll(Webhooks.Default, Secrets.Default).pipe(
    Layer.provideMerge(Layer.mergeAll(storage, IdsLive, webhookIngressSettings(BASE)))
  )

  describe(`webhooks service (${name})`, () => {
    layer(services, { excludeTestServices: true, timeout: "60 seconds" })("Webhooks", (it) => {
      it.effect("creates a token webhook with a generated secret shown once, never by get or list", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const webhooks = yield* Webhooks
          const created = yield* create(world.admin, { name: "  GitHub pushes  ", unknown_field: true })
          expect(created).toBeInstanceOf(WebhookWithSecret)
          expect(created.name).toBe("GitHub pushes")
          expect(created.auth_mode).toBe("token")
          expect(created.signature_scheme).toBeNull()
          expect(created.enabled).toBe(true)
          expect(created.ingress_url).toBe(ingressOf(created.uid))
          expect(created.secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
          const bytes = Encoding.decodeBase64Url(created.secret)
          expect(Either.isRight(bytes) && bytes.right.length).toBe(32)
          expect(yield* storedSecret(created.uid)).toEqual(Option.some(created.secret))

          const read = yield* webhooks.get(world.viewer, created.uid)
          expect(read).toBeInstanceOf(Webhook)
          expect("secret" in read).toBe(false)
          const listed = yield* webhooks.list(world.alice)
          expect(listed.webhooks.map((w) => w.uid)).toEqual([created.uid])
          expect(wire(Schema.encodeSync(Webhook)(read))).not.toContain(created.secret)
          expect(wire(Schema.encodeSync(ListWebhooksResponse)(listed))).not.toContain(created.secret)
          const { secret: _secret, ...withoutSecret } = created
          expect({ ...read }).toEqual(withoutSecret)
          const second = yield* create(world.admin, { name: "other" })
          expect(second.secret).not.toBe(created.secret)
        }))

      it.effect("url_token: the URL carries the token in the create response only", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const webhooks = yield* Webhooks
          const created = yield* create(world.admin, { name: "in the url", auth_mode: "url_token" })
          expect(created.secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
          expect(created.ingress_url).toBe(`${ingressOf(created.uid)}/${created.secret}`)
          expect((yield* webhooks.get(world.admin, created.uid)).ingress_url).toBe(`${ingressOf(created.uid)}/{token}`)
          const stored = yield* Effect.flatMap(WebhookStore, (s) => s.get(created.uid))
          expect(Option.map(stored, (w) => w.item.ingress_url.includes(created.secret))).toEqual(Option.some(false))
          expect(wire(yield* webhooks.list(world.admin))).not.toContain(created.secret)
        }))

      it.effect("signature: keeps a supplied secret (trimmed), generates a whsec_ one when blank, checks Standard Webhooks secrets", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const github = yield* create(world.admin, {
            name: "gh",
            auth_mode: "signature",
            signature_scheme: "github",
            secret: "  my github secret \n",
            delivery_id_header: "X-GitHub-Delivery"
          })
          expect(github.secret).toBe("my github secret")
          expect(github.signature_scheme).toBe("github")
          expect(github.delivery_id_header).toBe("X-GitHub-Delivery")
          expect(github.ingress_url).toBe(ingressOf(github.uid))
          expect(yield* storedSecret(github.uid)).toEqual(Option.some("my github secret"))

          for (const secret of [{}, { secret: null }, { secret: "" }, { secret: "   " }]) {
            const generated = yield* create(world.admin, {
              name: `sw ${JSON.stringify(secret)}`,
              auth_mode: "signature",
              signature_scheme: "standard_webhooks",
              ...secret
            })
            expect(generated.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/)
            expect(standardWebhooksKey(generated.secret)?.length).toBe(32)
            expect(yield* storedSecret(generated.uid)).toEqual(Option.some(generated.secret))
          }
          const supplied = yield* create(world.admin, {
            name: "svix",
            auth_mode: "signature",
            signature_scheme: "standard_webhooks",
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
          })
          expect(supplied.secret).toBe("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")

          const before = yield* names(world)
          for (const secret of ["whsec_not base64!", "whsec_", "%%%"]) {
            const error = yield* failureOf(create(world.admin, {
              name: "bad",
              auth_mode: "signature",
              signature_scheme: "standard_webhooks",
              secret
            }))
            expectInvalid(error, "secret")
          }
          expect(yield* names(world)).toEqual(before)
        }))

      it.effect("rejects invalid bodies with a 400 naming the field, and stores nothing", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const cases: ReadonlyArray<readonly [unknown, string]> = [
            [{}, "name"],
            [{ name: "  " }, "name"],
            [{ name: "x", auth_mode: "basic" }, "auth_mode"],
            [{ name: "x", auth_mode: "signature" }, "signature_scheme"],
            [{ name: "x", signature_scheme: "github" }, "signature_scheme"],
            [{ name: "x", auth_mode: "signature", signature_scheme: "acme" }, "signature_scheme"],
            [{ name: "x", secret: "mine" }, "secret"],
            [{ name: "x", auth_mode: "signature", signature_scheme: "github", secret: "s", secret_name: "S" }, "secret"],
            [{ name: "x", secret_name: "1bad" }, "secret_name"],
            [{ name: "x", delivery_id_header: "Bad Header" }, "delivery_id_header"],
            [{ name: "x", enabled: "yes" }, "enabled"]
          ]
          for (const [body, field] of cases) {
            expectInvalid(yield* failureOf(create(world.admin, body)), field)
          }
          expect(yield* names(world)).toEqual([])
        }))

      it.effect("secret_name: the credential is the team secret, never shown; it must exist and suit the mode", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const missing = yield* failureOf(create(world.admin, { name: "x", secret_name: "GITHUB_SECRET" }))
          expectInvalid(missing, "secret_name")
          expect(missing.message).toContain("GITHUB_SECRET")
          yield* putSecret(world.admin, "SPACED", "has a space")
          const unsafe = yield* failureOf(create(world.admin, { name: "x", auth_mode: "url_token", secret_name: "SPACED" }))
          expectInvalid(unsafe, "secret_name")
          const header = yield* failureOf(create(world.admin, { name: "x", secret_name: "SPACED" }))
          expectInvalid(header, "secret_name")
          const sw = yield* failureOf(create(world.admin, {
            name: "x",
            auth_mode: "signature",
            signature_scheme: "standard_webhooks",
            secret_name: "SPACED"
          }))
          expectInvalid(sw, "secret_name")
          // Another team's secret of the same name does not count.
          const other = yield* seedWorld()
          yield* putSecret(other.admin, "GITHUB_SECRET", "theirs")
          expectInvalid(yield* failureOf(create(world.admin, { name: "x", secret_name: "GITHUB_SECRET" })), "secret_name")
          expect(yield* names(world)).toEqual([])

          yield* putSecret(world.admin, "GITHUB_SECRET", "team-value-1")
          const created = yield* create(world.admin, {
            name: "gh",
            auth_mode: "signature",
            signature_scheme: "github",
            secret_name: "GITHUB_SECRET"
          })
          expect(created.secret).toBe("")
          expect(created.secret_name).toBe("GITHUB_SECRET")
          expect(wire(created)).not.toContain("team-value-1")
          expect(yield* storedSecret(created.uid)).toEqual(Option.some("team-value-1"))
          const url = yield* create(world.admin, { name: "u", auth_mode: "url_token", secret_name: "GITHUB_SECRET" })
          expect(url.ingress_url).toBe(`${ingressOf(url.uid)}/{token}`)
          expect(wire(url)).not.toContain("team-value-1")
        }))

      it.effect("toggling a secret_name webhook off and on picks up the team secret's new value", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          yield* putSecret(world.admin, "HOOK_TOKEN", "first-value")
          const created = yield* create(world.admin, { name: "t", secret_name: "HOOK_TOKEN" })
          yield* putSecret(world.admin, "HOOK_TOKEN", "second-value")
          expect(yield* storedSecret(created.uid)).toEqual(Option.some("first-value"))
          // Repeating enabled: true is not a toggle.
          yield* patch(world.admin, created.uid, { enabled: true })
          expect(yield* storedSecret(created.uid)).toEqual(Option.some("first-value"))
          const off = yield* patch(world.admin, created.uid, { enabled: false })
          expect(off.enabled).toBe(false)
          expect(yield* storedSecret(created.uid)).toEqual(Option.some("first-value"))
          const on = yield* patch(world.admin, created.uid, { enabled: true })
          expect(on.enabled).toBe(true)
          expect(yield* storedSecret(created.uid)).toEqual(Option.some("second-value"))
          const state = yield* Effect.flatMap(WebhookStore, (s) => s.get(created.uid))
          expect(Option.map(state, (w) => w.state)).toEqual(Option.some({ status: "enabled", secretVersion: 1 }))

          // A value that no longer suits the mode keeps the webhook disabled (409 naming enabled).
          yield* patch(world.admin, created.uid, { enabled: false })
          yield* putSecret(world.admin, "HOOK_TOKEN", "not a header value")
          const refused = yield* failureOf(patch(world.admin, created.uid, { enabled: true }))
          expect(refused._tag).toBe("Conflict")
          expect(refused.message).toContain("enabled")
          expect((yield* Effect.flatMap(Webhooks, (w) => w.get(world.admin, created.uid))).enabled).toBe(false)
          expect(yield* storedSecret(created.uid)).toEqual(Option.some("second-value"))
        }))

      it.effect("patch changes only the given keys; a no-op writes nothing; the state machine decides enabled", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const webhooks = yield* Webhooks
          const created = yield* create(world.admin, { name: "a", delivery_id_header: "X-Id" })
          yield* Effect.sleep("5 millis")
          const same = yield* patch(world.admin, created.uid, { name: "a", enabled: true, delivery_id_header: "X-Id" })
          expect(same.updated_at).toEqual(created.updated_at)
          const renamed = yield* patch(world.admin, created.uid, { name: " b " })
          expect(renamed.name).toBe("b")
          expect(renamed.delivery_id_header).toBe("X-Id")
          expect(renamed.enabled).toBe(true)
          expect(DateTime.toEpochMillis(renamed.updated_at)).toBeGreaterThan(DateTime.toEpochMillis(created.updated_at))
          expect(renamed.created_at).toEqual(created.created_at)
          const header = yield* patch(world.admin, created.uid, { delivery_id_header: "X-Other" })
          expect(header.delivery_id_header).toBe("X-Other")
          const cleared = yield* patch(world.admin, created.uid, { delivery_id_header: null })
          expect("delivery_id_header" in cleared).toBe(false)
          const disabled = yield* patch(world.admin, created.uid, { enabled: false })
          expect(disabled.enabled).toBe(false)
          expect(yield* patch(world.admin, created.uid, { enabled: false })).toEqual(disabled)
          const stored = yield* Effect.flatMap(WebhookStore, (s) => s.get(created.uid))
          expect(Option.map(stored, (w) => w.state.status)).toEqual(Option.some("disabled"))
          expect(yield* storedSecret(created.uid)).toEqual(Option.some(created.secret))
          expect(yield* webhooks.get(world.admin, created.uid)).toEqual(disabled)

          for (const [body, field] of [
            [{ name: "" }, "name"],
            [{ enabled: "no" }, "enabled"],
            [{ delivery_id_header: "a b" }, "delivery_id_header"]
          ] as const) {
            expectInvalid(yield* failureOf(patch(world.admin, created.uid, body)), field)
          }
          expect(yield* webhooks.get(world.admin, created.uid)).toEqual(disabled)
        }))

      it.effect("names are unique within a team (409), not across teams", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          yield* create(world.admin, { name: "deploys" })
          const second = yield* create(world.admin, { name: "builds" })
          const taken = yield* failureOf(create(world.admin, { name: " deploys " }))
          expect(taken._tag).toBe("Conflict")
          expect(taken.message).toContain("deploys")
          const rename = yield* failureOf(patch(world.admin, second.uid, { name: "deploys" }))
          expect(rename._tag).toBe("Conflict")
          expect(yield* names(world)).toEqual(["builds", "deploys"])
          yield* create(other.admin, { name: "deploys" })
        }))

      it.effect("a team has at most 20 webhooks: the 21st is a 409 and stores nothing; deleting frees a place", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const webhooks = yield* Webhooks
          const created = yield* Effect.forEach(
            Array.from({ length: MAX_WEBHOOKS_PER_TEAM }, (_, i) => `hook ${String(i).padStart(2, "0")}`),
            (name) => create(world.admin, { name })
          )
          const error = yield* failureOf(create(world.admin, { name: "one too many" }))
          expect(error._tag).toBe("Conflict")
          expect(error.message).toContain("20")
          expect((yield* names(world))).toHaveLength(MAX_WEBHOOKS_PER_TEAM)
          expect(yield* names(world)).not.toContain("one too many")
          // Other teams are not limited by this one.
          const other = yield* seedWorld()
          yield* create(other.admin, { name: "one too many" })
          yield* webhooks.remove(world.admin, created[0]!.uid)
          yield* create(world.admin, { name: "one too many" })
          expect(yield* names(world)).toHaveLength(MAX_WEBHOOKS_PER_TEAM)
        }))

      it.effect("only admins change webhooks (403); members and viewers read them; other teams get 404", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const webhooks = yield* Webhooks
          const created = yield* create(world.admin, { name: "guarded" })
          for (const viewer of [world.alice, world.viewer]) {
            expect((yield* failureOf(create(viewer, { name: "mine" })))._tag).toBe("NotAuthorized")
            expect((yield* failureOf(patch(viewer, created.uid, { enabled: false })))._tag).toBe("NotAuthorized")
            expect((yield* failureOf(webhooks.rotateSecret(viewer, created.uid)))._tag).toBe("NotAuthorized")
            expect((yield* failureOf(webhooks.remove(viewer, created.uid)))._tag).toBe("NotAuthorized")
            expect((yield* webhooks.get(viewer, created.uid)).name).toBe("guarded")
            expect((yield* webhooks.list(viewer)).webhooks).toHaveLength(1)
            expect((yield* webhooks.deliveries(viewer, created.uid)).deliveries).toEqual([])
          }
          for (const viewer of [other.admin, other.alice]) {
            expect((yield* failureOf(webhooks.get(viewer, created.uid)))._tag).toBe("ResourceNotFound")
            expect((yield* failureOf(patch(viewer, created.uid, { enabled: false })))._tag).toBe("ResourceNotFound")
            expect((yield* failureOf(webhooks.rotateSecret(viewer, created.uid)))._tag).toBe("ResourceNotFound")
            expect((yield* failureOf(webhooks.remove(viewer, created.uid)))._tag).toBe("ResourceNotFound")
            expect((yield* failureOf(webhooks.deliveries(viewer, created.uid)))._tag).toBe("ResourceNotFound")
            expect((yield* webhooks.list(viewer)).webhooks).toEqual([])
          }
          const unknown = yield* failureOf(webhooks.get(world.admin, WebhookUid.make(uid())))
          expect(unknown._tag).toBe("ResourceNotFound")
          const after = yield* webhooks.get(world.admin, created.uid)
          expect(after.enabled).toBe(true)
          expect(after.updated_at).toEqual(created.updated_at)
          expect(yield* storedSecret(created.uid)).toEqual(Option.some(created.secret))
          expect(yield* names(world)).toEqual(["guarded"])
        }))

      it.effect("rotate: a new secret shown once, the old one gone at once; a secret_name webhook cannot rotate", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const webhooks = yield* Webhooks
          const token = yield* create(world.admin, { name: "t", auth_mode: "url_token" })
          const rotated = yield* webhooks.rotateSecret(world.admin, token.uid)
          expect(rotated.secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
          expect(rotated.secret).not.toBe(token.secret)
          expect(rotated.ingress_url).toBe(`${ingressOf(token.uid)}/${rotated.secret}`)
          expect(yield* storedSecret(token.uid)).toEqual(Option.some(rotated.secret))
          const state = yield* Effect.flatMap(WebhookStore, (s) => s.get(token.uid))
          expect(Option.map(state, (w) => w.state)).toEqual(Option.some({ status: "enabled", secretVersion: 2 }))
          expect(wire(yield* webhooks.get(world.admin, token.uid))).not.toContain(rotated.secret)

          const signed = yield* create(world.admin, {
            name: "s",
            auth_mode: "signature",
            signature_scheme: "standard_webhooks",
            enabled: false
          })
          const again = yield* webhooks.rotateSecret(world.admin, signed.uid)
          expect(again.secret).toMatch(/^whsec_/)
          expect(again.secret).not.toBe(signed.secret)
          expect(again.enabled).toBe(false)
          expect(yield* storedSecret(signed.uid)).toEqual(Option.some(again.secret))

          yield* putSecret(world.admin, "SHARED", "shared-value")
          const named = yield* create(world.admin, { name: "n", secret_name: "SHARED" })
          const refused = yield* failureOf(webhooks.rotateSecret(world.admin, named.uid))
          expect(refused._tag).toBe("OperationNotSupported")
          expect(refused.message).toContain("SHARED")
          expect(yield* storedSecret(named.uid)).toEqual(Option.some("shared-value"))
        }))

      it.effect("delete: gone for every operation (404), its delivery log kept in the store", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const webhooks = yield* Webhooks
          const store = yield* WebhookStore
          const created = yield* create(world.admin, { name: "doomed" })
          const kept = yield* create(world.admin, { name: "kept" })
          const logged = delivery(T)
          yield* store.logDelivery(created.uid, logged)
          yield* webhooks.remove(world.admin, created.uid)
          expect(yield* names(world)).toEqual(["kept"])
          expect(yield* store.get(created.uid)).toEqual(Option.none())
          for (
            const attempt of [
              webhooks.get(world.admin, created.uid).pipe(Effect.asVoid),
              patch(world.admin, created.uid, { enabled: true }),
              webhooks.rotateSecret(world.admin, created.uid),
              webhooks.remove(world.admin, created.uid),
              webhooks.deliveries(world.admin, created.uid),
              webhooks.delivery(world.admin, created.uid, logged.delivery_id)
            ]
          ) {
            expect((yield* failureOf(attempt as Effect.Effect<unknown, { readonly _tag: string }, Webhooks>))._tag)
              .toBe("ResourceNotFound")
          }
          expect((yield* store.deliveries(created.uid, 10, null)).deliveries.map((d) => d.delivery_id)).toEqual([
            logged.delivery_id
          ])
          expect((yield* webhooks.get(world.admin, kept.uid)).name).toBe("kept")
        }))

      it.effect("the delivery log: newest first, cursor-paginated, each delivery readable; bad limit or cursor is a 400", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const webhooks = yield* Webhooks
          const store = yield* WebhookStore
          const hook = yield* create(world.admin, { name: "log" })
          const otherHook = yield* create(world.admin, { name: "other" })
          const seeded = [
            delivery(T + 1_000),
            delivery(T + 2_000, "REJECTED_AUTH"),
            delivery(T + 2_000, "DUPLICATE"),
            delivery(T + 2_000),
            delivery(T + 3_000, "REJECTED_INVALID_JSON"),
            delivery(T + 4_000, "REJECTED_TOO_LARGE"),
            delivery(T + 5_000)
          ]
          for (const d of seeded) yield* store.logDelivery(hook.uid, d)
          const foreign = delivery(T + 9_000)
          yield* store.logDelivery(otherHook.uid, foreign)
          const expected = [...seeded]
            .sort((a, b) =>
              DateTime.toEpochMillis(b.received_at) - DateTime.toEpochMillis(a.received_at) ||
              (a.delivery_id < b.delivery_id ? 1 : -1)
            )
            .map((d) => d.delivery_id)

          const all = yield* webhooks.deliveries(world.viewer, hook.uid)
          expect(all.deliveries.map((d) => d.delivery_id)).toEqual(expected)
          expect(all.page_info).toEqual({ has_next_page: false })

          const seen: Array<string> = []
          const sizes: Array<number> = []
          let cursor: string | undefined
          for (;;) {
            const page = yield* webhooks.deliveries(world.alice, hook.uid, { limit: 3, cursor })
            seen.push(...page.deliveries.map((d) => d.delivery_id))
            sizes.push(page.deliveries.length)
            if (!page.page_info.has_next_page) {
              expect(page.page_info.next_cursor).toBeUndefined()
              break
            }
            cursor = page.page_info.next_cursor
            expect(cursor).toBeDefined()
          }
          expect(sizes).toEqual([3, 3, 1])
          expect(seen).toEqual(expected)

          const first = yield* webhooks.deliveries(world.admin, hook.uid, { limit: 2 })
          for (const limit of [0, DELIVERY_PAGE_LIMIT.max + 1, 1.5, -1, Number.NaN]) {
            expectInvalid(yield* failureOf(webhooks.deliveries(world.admin, hook.uid, { limit })), "limit")
          }
          const good = first.page_info.next_cursor!
          for (const bad of ["nope", `${good}x`, good.slice(0, -2), "!!!"]) {
            expectInvalid(yield* failureOf(webhooks.deliveries(world.admin, hook.uid, { cursor: bad })), "cursor")
          }
          const crossed = yield* failureOf(webhooks.deliveries(world.admin, otherHook.uid, { cursor: good }))
          expectInvalid(crossed, "cursor")
          expect((yield* webhooks.deliveries(world.admin, hook.uid, { limit: DELIVERY_PAGE_LIMIT.max })).deliveries)
            .toHaveLength(seeded.length)

          const accepted = yield* webhooks.delivery(world.viewer, hook.uid, seeded[6]!.delivery_id)
          expect(accepted.outcome).toBe("ACCEPTED")
          expect(accepted.payload).toEqual({ n: T + 5_000 })
          const rejected = yield* webhooks.delivery(world.viewer, hook.uid, seeded[1]!.delivery_id)
          expect(rejected.outcome).toBe("REJECTED_AUTH")
          expect("payload" in rejected).toBe(false)
          const missing = yield* failureOf(webhooks.delivery(world.admin, hook.uid, DeliveryId.make(uid())))
          expect(missing._tag).toBe("ResourceNotFound")
          const elsewhere = yield* failureOf(webhooks.delivery(world.admin, hook.uid, foreign.delivery_id))
          expect(elsewhere._tag).toBe("ResourceNotFound")
          const other = yield* seedWorld()
          const hidden = yield* failureOf(webhooks.delivery(other.admin, hook.uid, seeded[0]!.delivery_id))
          expect(hidden._tag).toBe("ResourceNotFound")
        }))
    })
  })
}
