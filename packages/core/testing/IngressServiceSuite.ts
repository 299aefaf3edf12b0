/**
 * The webhook ingress service against one storage adapter, on the TestClock: the rate-limit
 * windows sliding by (which real time would make slow), signature timestamp windows, the log
 * pruned to what it keeps (and duplicate detection with it), and automations that cannot start.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Option, Redacted, TestClock } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import { Automations } from "../src/services/Automations.js"
import { CreateAutomationRequest } from "../src/domain/Automation.js"
import { decodeRequest } from "../src/domain/Common.js"
import { IdsLive } from "../src/domain/Ids.js"
import type { WebhookUid } from "../src/domain/Ids.js"
import { Ingress, IngressLimitsTag } from "../src/services/Ingress.js"
import type { BodyRead, IngressLimits, IngressRequest } from "../src/services/Ingress.js"
import { EnvironmentStore } from "../src/ports/EnvironmentStore.js"
import { AutomationStore } from "../src/ports/AutomationStore.js"
import { RunStore } from "../src/ports/RunStore.js"
import { WebhookStore } from "../src/ports/WebhookStore.js"
import { SecretStore } from "../src/ports/SecretStore.js"
import type { SecretName } from "../src/domain/Secret.js"
import { Runs } from "../src/services/Runs.js"
import { sign, TIMESTAMP_TOLERANCE_MS } from "../src/domain/Signatures.js"
import { CreateWebhookRequest } from "../src/domain/Webhook.js"
import { webhookIngressSettings, Webhooks } from "../src/services/Webhooks.js"
import { makeEnvironment } from "./CatalogConformance.js"
import { memoryBlobStore } from "./ConversationsServiceSuite.js"
import type { Stores } from "./Stores.js"
import { failureOf, seedWorld } from "./World.js"

const decodeWebhook = decodeRequest(CreateWebhookRequest)
const decodeAutomation = decodeRequest(CreateAutomationRequest)

const createWebhook = (viewer: Viewer, body: Record<string, unknown>) =>
  Effect.flatMap(decodeWebhook({ name: `hook ${Math.random()}`, ...body }), (r) =>
    Effect.flatMap(Webhooks, (w) => w.create(viewer, r)))

const createAutomation = (viewer: Viewer, webhook: WebhookUid, extra: Record<string, unknown> = {}) =>
  Effect.flatMap(
    decodeAutomation({
      name: `automation ${Math.random()}`,
      prompt: "act",
      trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [webhook] } },
      ...extra
    }),
    (r) => Effect.flatMap(Automations, (a) => a.create(viewer, r))
  )

const bytes = (text: string) => new TextEncoder().encode(text)

/** A delivery from `client` with `body` and headers. */
const request = (
  uid: string,
  body: string,
  headers: Record<string, string> = {},
  client = "192.0.2.1"
): IngressRequest => ({
  uid,
  token: undefined,
  headers,
  client,
  readBody: (): Effect.Effect<BodyRead> => Effect.succeed({ _tag: "Complete", bytes: bytes(body) })
})

const receive = (r: IngressRequest) => Effect.flatMap(Ingress, (i) => i.receive(r))

const outcomes = (uid: WebhookUid) =>
  Effect.flatMap(WebhookStore, (s) => s.deliveries(uid, 100, null)).pipe(
    Effect.map((page) => page.deliveries.map((d) => d.outcome))
  )

const counts = (uid: WebhookUid) => Effect.flatMap(WebhookStore, (s) => s.deliveryCounts(uid))

/** Registers the suite against one adapter. */
export const ingressServiceSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const servicesWith = (limits: Partial<IngressLimits>) =>
    Layer.mergeAll(Ingress.Default, Webhooks.Default, Automations.Default).pipe(
      Layer.provideMerge(Runs.Default),
      Layer.provideMerge(
        Layer.mergeAll(storage, IdsLive, memoryBlobStore, IngressLimitsTag.layer(limits), webhookIngressSettings("http://x"))
      )
    )
  const services = servicesWith({ pruneEvery: 1, logKeep: 3, logDays: 7 })
  const bounded = servicesWith({ pruneEvery: 1, logKeep: 2, logDays: 7, logMax: 4, logRejected: 2 })

  describe(`ingress service (${name})`, () => {
    layer(services, { timeout: "60 seconds" })("Ingress", (it) => {
      it.effect("the delivery rate slides: 60 a minute, Retry-After until the oldest leaves the window", () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 23, 12))
          const world = yield* seedWorld()
          const hook = yield* createWebhook(world.admin, {})
          const auth = { authorization: `Bearer ${hook.secret}` }
          for (let i = 0; i < 60; i++) {
            yield* receive(request(hook.uid, `{"i":${i}}`, auth))
            yield* TestClock.adjust("500 millis")
          }
          // 30 s after the first: 30 s to wait.
          const over = yield* failureOf(receive(request(hook.uid, `{"i":60}`, auth)))
          expect(over._tag).toBe("RateLimited")
          expect(over._tag === "RateLimited" && over.retryAfterSeconds).toBe(30)
          // Another sender has its own window.
          yield* receive(request(hook.uid, `{"i":61}`, auth, "198.51.100.7"))
          yield* TestClock.adjust("30 seconds")
          // The first delivery has left the window: one more goes through, then the next waits.
          yield* receive(request(hook.uid, `{"i":62}`, auth))
          const again = yield* failureOf(receive(request(hook.uid, `{"i":63}`, auth)))
          expect(again._tag === "RateLimited" && again.retryAfterSeconds).toBe(1)
          yield* TestClock.adjust("1 minute")
          yield* receive(request(hook.uid, `{"i":64}`, auth))
        }))

      it.effect("a secret_name webhook checks the team secret's current value: a changed secret takes effect at the next delivery, and its run starts", () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 23, 15))
          const world = yield* seedWorld()
          const secrets = yield* SecretStore
          const name = "HOOK_TOKEN" as SecretName
          yield* secrets.put(world.team, name, Redacted.make("first-value"), Date.UTC(2026, 10, 23, 15))
          const hook = yield* createWebhook(world.admin, { secret_name: name })
          yield* createAutomation(world.admin, hook.uid)
          const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
          expect((yield* receive(request(hook.uid, `{"n":1}`, bearer("first-value")))).outcome).toBe("ACCEPTED")
          // The secret changes; the webhook is not toggled.
          yield* secrets.put(world.team, name, Redacted.make("second-value"), Date.UTC(2026, 10, 23, 15))
          const old = yield* failureOf(receive(request(hook.uid, `{"n":2}`, bearer("first-value"))))
          expect(old._tag).toBe("AuthenticationRequired")
          const accepted = yield* receive(request(hook.uid, `{"n":3}`, bearer("second-value")))
          expect(accepted.outcome).toBe("ACCEPTED")
          expect(accepted.run_ids.length).toBe(1)
          // A deleted team secret: the value the webhook read last still works.
          yield* secrets.remove(world.team, name)
          expect((yield* receive(request(hook.uid, `{"n":4}`, bearer("first-value")))).outcome).toBe("ACCEPTED")
        }))

      it.effect("the authentication-failure budget: 10 a minute, then 429 even when authenticated, until it recovers", () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 23, 13))
          const world = yield* seedWorld()
          const hook = yield* createWebhook(world.admin, {})
          for (let i = 0; i < 10; i++) {
            const refused = yield* failureOf(receive(request(hook.uid, `{"i":${i}}`, { authorization: "Bearer bad" })))
            expect(refused._tag).toBe("AuthenticationRequired")
            yield* TestClock.adjust("1 second")
          }
          const spent = yield* failureOf(receive(request(hook.uid, "{}", { authorization: `Bearer ${hook.secret}` })))
          expect(spent._tag === "RateLimited" && spent.retryAfterSeconds).toBe(50)
          yield* TestClock.adjust("50 seconds")
          // The first failure left the window: one more attempt is allowed (and a good one passes).
          const ok = yield* receive(request(hook.uid, `{"ok":1}`, { authorization: `Bearer ${hook.secret}` }))
          expect(ok.outcome).toBe("ACCEPTED")
        }))

      it.effect("signature timestamps: just inside the five minutes passes, just outside is a 401", () =>
        Effect.gen(function* () {
          const t = Date.UTC(2026, 10, 23, 14)
          yield* TestClock.setTime(t)
          const world = yield* seedWorld()
          for (const scheme of ["standard_webhooks", "stripe", "slack"] as const) {
            const hook = yield* createWebhook(world.admin, { auth_mode: "signature", signature_scheme: scheme })
            const inside = yield* sign(scheme, { secret: hook.secret, body: bytes(`{"s":1}`), now: t - TIMESTAMP_TOLERANCE_MS + 1000 })
            const outside = yield* sign(scheme, { secret: hook.secret, body: bytes(`{"s":2}`), now: t - TIMESTAMP_TOLERANCE_MS - 1000 })
            const future = yield* sign(scheme, { secret: hook.secret, body: bytes(`{"s":3}`), now: t + TIMESTAMP_TOLERANCE_MS + 1000 })
            expect((yield* receive(request(hook.uid, `{"s":1}`, inside))).outcome).toBe("ACCEPTED")
            expect((yield* failureOf(receive(request(hook.uid, `{"s":2}`, outside))))._tag).toBe("AuthenticationRequired")
            if (scheme === "standard_webhooks") {
              expect((yield* failureOf(receive(request(hook.uid, `{"s":3}`, future))))._tag).toBe("AuthenticationRequired")
            }
          }
        }))

      it.effect("the log keeps the newest 3 and 7 days here; an identity pruned with its delivery is new again", () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 1))
          const world = yield* seedWorld()
          const hook = yield* createWebhook(world.admin, {})
          const auth = { authorization: `Bearer ${hook.secret}` }
          const first = yield* receive(request(hook.uid, `{"n":1}`, { ...auth, "x-service-delivery-id": "one" }))
          expect(first.outcome).toBe("ACCEPTED")
          expect((yield* receive(request(hook.uid, `{"n":1}`, { ...auth, "x-service-delivery-id": "one" }))).outcome)
            .toBe("DUPLICATE")
          yield* TestClock.adjust("8 days")
          for (let i = 2; i <= 4; i++) yield* receive(request(hook.uid, `{"n":${i}}`, { ...auth, "x-service-delivery-id": `id-${i}` }))
          // The first delivery is older than 7 days and not among the newest 3 ACCEPTED. Its duplicate
          // is ranked among the DUPLICATE entries (so that replays never push out what they duplicate):
          // it is still among the newest 3 of those.
          expect(yield* outcomes(hook.uid)).toEqual(["ACCEPTED", "ACCEPTED", "ACCEPTED", "DUPLICATE"])
          expect((yield* receive(request(hook.uid, `{"n":1}`, { ...auth, "x-service-delivery-id": "one" }))).outcome)
            .toBe("ACCEPTED")
          // Within 7 days nothing is pruned (up to the cap, 10,000 here).
          for (let i = 5; i <= 8; i++) yield* receive(request(hook.uid, `{"n":${i}}`, { ...auth, "x-service-delivery-id": `id-${i}` }))
          expect((yield* outcomes(hook.uid)).length).toBe(9)
          expect((yield* receive(request(hook.uid, `{"n":2}`, { ...auth, "x-service-delivery-id": "id-2" }))).outcome)
            .toBe("DUPLICATE")
        }))

      it.effect("an automation that cannot start a run is left out; the delivery is accepted with the others", () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 23, 15))
          const world = yield* seedWorld()
          const hook = yield* createWebhook(world.admin, {})
          const kept = yield* createAutomation(world.admin, hook.uid)
          // Another automation runs in an environment that is deleted since.
          const environments = yield* EnvironmentStore
          const env = makeEnvironment({ team: world.team, creator: world.admin.principal_uid, teamScope: true })
          yield* environments.create(env)
          yield* createAutomation(world.admin, hook.uid, { agent_config: { environment_id: env.item.uid } })
          yield* environments.remove(env.item.uid)
          const receipt = yield* receive(request(hook.uid, `{"go":1}`, { authorization: `Bearer ${hook.secret}` }))
          expect(receipt.outcome).toBe("ACCEPTED")
          expect(receipt.run_ids.length).toBe(1)
          const run = Option.getOrThrow(yield* Effect.flatMap(RunStore, (s) => s.get(receipt.run_ids[0]!)))
          expect(run.item.metadata).toMatchObject({ automation_id: kept.id, webhook_uid: hook.uid })
          expect(run.item.source).toBe("WEBHOOK")
          expect(run.item.scope.type).toBe("Team")
        }))

      it.effect("an automation's last editor shapes its runs: recorded with each run, with the role it edited with", () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 23, 15))
          const world = yield* seedWorld()
          const hook = yield* createWebhook(world.admin, {})
          const automation = yield* createAutomation(world.admin, hook.uid)
          // As if last changed by a run token acting for the admin with a member's role.
          const store = yield* AutomationStore
          const stored = Option.getOrThrow(yield* store.get(automation.id))
          yield* store.update({ ...stored, editor: { uid: world.admin.principal_uid, role: "member" } })
          const receipt = yield* receive(request(hook.uid, `{"go":1}`, { authorization: `Bearer ${hook.secret}` }))
          expect(receipt.run_ids.length).toBe(1)
          const shapers = yield* Effect.flatMap(RunStore, (s) => s.shapers(receipt.run_ids))
          expect(shapers).toEqual([{ uid: world.admin.principal_uid, role: "member" }])
        }))

      it.effect("replays of signed bytes under new ids are duplicates; tokens and signed ids keep different events apart", () =>
        Effect.gen(function* () {
          const t = Date.UTC(2026, 10, 23, 16)
          yield* TestClock.setTime(t)
          const world = yield* seedWorld()
          const body = `{"id":"evt_1","type":"charge.succeeded"}`
          for (const scheme of ["github", "stripe", "slack", "shopify", "linear", "pagerduty"] as const) {
            const hook = yield* createWebhook(world.admin, { auth_mode: "signature", signature_scheme: scheme, secret: `s-${scheme}` })
            const signed = yield* sign(scheme, { secret: hook.secret, body: bytes(body), now: t, id: "d-1" })
            expect((yield* receive(request(hook.uid, body, signed))).outcome).toBe("ACCEPTED")
            for (const extra of [{ "x-github-delivery": "d-2", "linear-delivery": "d-2", "x-shopify-webhook-id": "d-2" }, {
              "x-service-delivery-id": "fresh"
            }]) {
              const replay = yield* receive(request(hook.uid, body, { ...signed, ...extra }, "203.0.113.9"))
              expect([scheme, replay.outcome]).toEqual([scheme, "DUPLICATE"])
            }
          }
          // Standard Webhooks signs its id: the same body under two ids is two events.
          const standard = yield* createWebhook(world.admin, { auth_mode: "signature", signature_scheme: "standard_webhooks" })
          for (const id of ["msg_1", "msg_2"]) {
            const headers = yield* sign("standard_webhooks", { secret: standard.secret, body: bytes(body), now: t, id })
            expect((yield* receive(request(standard.uid, body, headers))).outcome).toBe("ACCEPTED")
          }
          // A token signs nothing: the sender's ids tell its events apart.
          const token = yield* createWebhook(world.admin, {})
          for (const id of ["a", "b"]) {
            const headers = { authorization: `Bearer ${token.secret}`, "x-service-delivery-id": id }
            expect((yield* receive(request(token.uid, body, headers))).outcome).toBe("ACCEPTED")
          }
        }))

      it.effect("a body that does not arrive within the timeout is dropped and counts in the failure budget", () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 23, 17))
          const world = yield* seedWorld()
          const hook = yield* createWebhook(world.admin, {})
          const auth = { authorization: `Bearer ${hook.secret}` }
          const timeouts: Array<number> = []
          const slow: IngressRequest = {
            ...request(hook.uid, "{}", auth),
            readBody: (_limit, timeoutMs) => Effect.sync((): BodyRead => (timeouts.push(timeoutMs), { _tag: "TimedOut" }))
          }
          for (let i = 0; i < 10; i++) expect((yield* failureOf(receive(slow)))._tag).toBe("BodyTimedOut")
          // The transport is asked to stop waiting after the ingress's body timeout.
          expect(timeouts).toEqual(timeouts.map(() => 10_000))
          const spent = yield* failureOf(receive(request(hook.uid, `{"ok":1}`, auth)))
          expect(spent._tag).toBe("RateLimited")
          // Nothing was logged: a dropped body has no outcome.
          expect(yield* outcomes(hook.uid)).toEqual([])
        }))
    })

    layer(bounded, { timeout: "60 seconds" })("Ingress with a bounded log", (it) => {
      it.effect("rejected deliveries are counted; only the newest few stay in the log", () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 24, 12))
          const world = yield* seedWorld()
          const hook = yield* createWebhook(world.admin, {})
          for (let i = 0; i < 30; i++) {
            // From as many senders, so that no budget stops them.
            const refused = yield* failureOf(receive(request(hook.uid, `{"i":${i}}`, { authorization: "Bearer no" }, `10.0.0.${i}`)))
            expect(refused._tag).toBe("AuthenticationRequired")
            yield* TestClock.adjust("1 second")
          }
          const invalid = yield* failureOf(receive(request(hook.uid, "{", { authorization: `Bearer ${hook.secret}` })))
          expect(invalid._tag).toBe("InvalidRequest")
          expect(yield* outcomes(hook.uid)).toEqual(["REJECTED_INVALID_JSON", "REJECTED_AUTH"])
          expect(yield* counts(hook.uid)).toEqual({
            ACCEPTED: 0,
            DUPLICATE: 0,
            REJECTED_AUTH: 30,
            REJECTED_INVALID_JSON: 1,
            REJECTED_TOO_LARGE: 0
          })
        }))

      it.effect("ACCEPTED and DUPLICATE entries are capped each apart: a flood of replays never evicts the original", () =>
        Effect.gen(function* () {
          const t = Date.UTC(2026, 10, 24, 13)
          yield* TestClock.setTime(t)
          const world = yield* seedWorld()
          const hook = yield* createWebhook(world.admin, { auth_mode: "signature", signature_scheme: "github", secret: "gh" })
          const body = `{"action":"opened","number":1}`
          const signed = yield* sign("github", { secret: "gh", body: bytes(body), now: t, id: "g-0" })
          const original = yield* receive(request(hook.uid, body, signed))
          expect(original.outcome).toBe("ACCEPTED")
          for (let i = 1; i <= 20; i++) {
            yield* TestClock.adjust("1 second")
            const replay = yield* receive(request(hook.uid, body, { ...signed, "x-github-delivery": `g-${i}` }, `10.1.0.${i}`))
            expect(replay.outcome).toBe("DUPLICATE")
          }
          const log = yield* outcomes(hook.uid)
          expect(log.filter((o) => o === "DUPLICATE").length).toBe(4)
          expect(log.filter((o) => o === "ACCEPTED").length).toBe(1)
          expect((yield* receive(request(hook.uid, body, { ...signed, "x-github-delivery": "g-99" }))).outcome).toBe("DUPLICATE")
          expect((yield* counts(hook.uid)).DUPLICATE).toBe(21)
          // Newer genuine deliveries do push it out, past the cap of 4.
          for (let i = 1; i <= 4; i++) {
            yield* TestClock.adjust("1 second")
            const next = `{"action":"opened","number":${i + 1}}`
            const headers = yield* sign("github", { secret: "gh", body: bytes(next), now: t, id: `n-${i}` })
            expect((yield* receive(request(hook.uid, next, headers, "10.2.0.1"))).outcome).toBe("ACCEPTED")
          }
          expect((yield* outcomes(hook.uid)).filter((o) => o === "ACCEPTED").length).toBe(4)
          expect((yield* receive(request(hook.uid, body, signed, "10.2.0.2"))).outcome).toBe("ACCEPTED")
        }))
    })
  })
}
