/**
 * The automations service (`Automations`) over a real storage adapter: create, list, get,
 * replace and delete with their validation (webhooks of the team, payload filters, referenced
 * environment and principal) and access checks, and test-filter against deliveries seeded through
 * `WebhookStore.logDelivery`. Each test makes fresh teams of its own. Call
 * `automationsServiceSuite(name, layer)` inside a vitest file.
 */
import { describe, expect, layer } from "@effect/vitest"
import { DateTime, Effect, Layer } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import { CreateAutomationRequest, TestFilterRequest, UpdateAutomationRequest } from "../src/domain/Automation.js"
import { Automations } from "../src/services/Automations.js"
import { decodeRequest } from "../src/domain/Common.js"
import type { InvalidRequest } from "../src/domain/Errors.js"
import { type AutomationId, type DeliveryId, IdsLive, type WebhookUid } from "../src/domain/Ids.js"
import { AutomationStore } from "../src/ports/AutomationStore.js"
import { EnvironmentStore } from "../src/ports/EnvironmentStore.js"
import { WebhookStore } from "../src/ports/WebhookStore.js"
import { CreateWebhookRequest, Delivery, type DeliveryOutcome } from "../src/domain/Webhook.js"
import { webhookIngressSettings, Webhooks } from "../src/services/Webhooks.js"
import { makeEnvironment } from "./CatalogConformance.js"
import { uid } from "./RunStoreConformance.js"
import type { Stores } from "./Stores.js"
import { failureOf, seedWorld, type World } from "./World.js"

const decodeCreate = decodeRequest(CreateAutomationRequest)
const decodeUpdate = decodeRequest(UpdateAutomationRequest)
const decodeTest = decodeRequest(TestFilterRequest)
const decodeWebhook = decodeRequest(CreateWebhookRequest)

const create = (viewer: Viewer, body: unknown) =>
  Effect.flatMap(decodeCreate(body), (request) => Effect.flatMap(Automations, (a) => a.create(viewer, request)))

const update = (viewer: Viewer, id: AutomationId, body: unknown) =>
  Effect.flatMap(decodeUpdate(body), (request) => Effect.flatMap(Automations, (a) => a.update(viewer, id, request)))

const testFilter = (viewer: Viewer, id: AutomationId, deliveryId: string) =>
  Effect.flatMap(
    decodeTest({ delivery_id: deliveryId }),
    (request) => Effect.flatMap(Automations, (a) => a.testFilter(viewer, id, request))
  )

/** test-filter with any body (a pasted payload, both fields, neither). */
const testBody = (viewer: Viewer, id: AutomationId, body: unknown) =>
  Effect.flatMap(decodeTest(body), (request) => Effect.flatMap(Automations, (a) => a.testFilter(viewer, id, request)))

const webhookOf = (world: World, name: string) =>
  Effect.flatMap(decodeWebhook({ name }), (request) => Effect.flatMap(Webhooks, (w) => w.create(world.admin, request)))
    .pipe(Effect.map((w) => w.uid))

const trigger = (webhook_ids: ReadonlyArray<string>, payload?: unknown) => ({
  provider: "webhook",
  event: "received",
  filter: { webhook_ids, ...(payload === undefined ? {} : { payload }) }
})

/** The names of the team's automations, as its admin lists them. */
const names = (world: World) =>
  Effect.flatMap(Automations, (a) => a.list(world.admin)).pipe(Effect.map((r) => r.automations.map((x) => x.name)))

const expectInvalid = (error: unknown, field: string) => {
  expect((error as InvalidRequest)._tag).toBe("InvalidRequest")
  expect((error as InvalidRequest).field).toBe(field)
  expect((error as InvalidRequest).message.startsWith(`${field}: `)).toBe(true)
}

const logDelivery = (webhook: WebhookUid, outcome: DeliveryOutcome, payload?: unknown) =>
  Effect.gen(function* () {
    const id = uid<DeliveryId>()
    yield* (yield* WebhookStore).logDelivery(
      webhook,
      new Delivery({
        delivery_id: id,
        received_at: DateTime.unsafeMake(Date.UTC(2026, 10, 3)),
        size_bytes: 40,
        identity: `identity-${id}`,
        outcome,
        run_ids: [],
        ...(outcome === "ACCEPTED" ? { payload: payload as never } : {})
      })
    )
    return id
  })

/** Registers the automations service suite against one storage adapter's layer. */
export const automationsServiceSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const services = Layer.mergeAll(Automations.Default, Webhooks.Default).pipe(
    Layer.provideMerge(Layer.mergeAll(storage, IdsLive, webhookIngressSettings("http://127.0.0.1:8080")))
  )

  describe(`automations service (${name})`, () => {
    layer(services, { excludeTestServices: true, timeout: "60 seconds" })("Automations", (it) => {
      it.effect("creates an automation with defaults; every member reads it", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const automations = yield* Automations
          const push = yield* webhookOf(world, "push")
          const pr = yield* webhookOf(world, "pr")
          const created = yield* create(world.admin, {
            name: "  Review PRs ",
            prompt: "Review the pull request",
            trigger: trigger([push, pr, push], { action: ["opened"], pull_request: { draft: { not_in: [true] } } }),
            unknown: 1
          })
          expect(created.name).toBe("Review PRs")
          expect(created.enabled).toBe(true)
          expect(created.agent_config).toEqual({})
          expect(created.trigger).toEqual(
            trigger([push, pr], { action: ["opened"], pull_request: { draft: { not_in: [true] } } })
          )
          expect(created.created_at).toEqual(created.updated_at)
          for (const viewer of [world.admin, world.alice, world.viewer]) {
            expect(yield* automations.get(viewer, created.id)).toEqual(created)
            expect((yield* automations.list(viewer)).automations).toEqual([created])
          }
          const second = yield* create(world.admin, {
            name: "A disabled one",
            prompt: "p",
            enabled: false,
            agent_config: { model_id: "m" },
            trigger: trigger([push])
          })
          expect(second.enabled).toBe(false)
          expect(second.agent_config).toEqual({ model_id: "m" })
          expect(yield* names(world)).toEqual(["A disabled one", "Review PRs"])
        }))

      it.effect("webhook_ids must be live webhooks of the team: a 400 naming the index, nothing stored", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const ours = yield* webhookOf(world, "ours")
          const deleted = yield* webhookOf(world, "deleted")
          yield* Effect.flatMap(Webhooks, (w) => w.remove(world.admin, deleted))
          const theirs = yield* webhookOf(other, "theirs")
          for (const bad of [uid(), theirs, deleted]) {
            const error = yield* failureOf(create(world.admin, { name: "x", prompt: "p", trigger: trigger([ours, bad]) }))
            expectInvalid(error, "trigger.filter.webhook_ids[1]")
            expect(error.message).toContain(bad)
          }
          expectInvalid(
            yield* failureOf(create(world.admin, { name: "x", prompt: "p", trigger: trigger([]) })),
            "trigger.filter.webhook_ids"
          )
          expectInvalid(
            yield* failureOf(create(world.admin, { name: "x", prompt: "p", trigger: trigger(["short"]) })),
            "trigger.filter.webhook_ids[0]"
          )
          expect(yield* names(world)).toEqual([])
        }))

      it.effect("rejects malformed bodies and payload filters with a 400 naming the path, storing nothing", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const hook = yield* webhookOf(world, "h")
          const cases: ReadonlyArray<readonly [unknown, string]> = [
            [{ prompt: "p", trigger: trigger([hook]) }, "name"],
            [{ name: "x", prompt: " ", trigger: trigger([hook]) }, "prompt"],
            [{ name: "x", prompt: "p" }, "trigger"],
            [{ name: "x", prompt: "p", trigger: { ...trigger([hook]), provider: "cron" } }, "trigger.provider"],
            [{ name: "x", prompt: "p", trigger: trigger([hook], "opened") }, "trigger.filter.payload"],
            [{ name: "x", prompt: "p", trigger: trigger([hook], { action: "opened" }) }, "trigger.filter.payload.action"],
            [{ name: "x", prompt: "p", trigger: trigger([hook], { action: { in: "opened" } }) }, "trigger.filter.payload.action.in"],
            [{ name: "x", prompt: "p", trigger: trigger([hook], { a: { b: {} } }) }, "trigger.filter.payload.a.b"],
            [{ name: "x", prompt: "p", trigger: trigger([hook], { a: { in: [1], nin: [2] } }) }, "trigger.filter.payload.a.nin"],
            [{ name: "x", prompt: "p", trigger: trigger([hook], { a: { exists: "yes" } }) }, "trigger.filter.payload.a.exists"],
            [{ name: "x", prompt: "p", trigger: trigger([hook]), agent_config: { model_id: 3 } }, "agent_config.model_id"],
            [{ name: "x", prompt: "p", trigger: trigger([hook]), enabled: "no" }, "enabled"]
          ]
          for (const [body, field] of cases) {
            expectInvalid(yield* failureOf(create(world.admin, body)), field)
          }
          expect(yield* names(world)).toEqual([])
        }))

      it.effect("agent_config must reference an environment and a principal of the team (400 naming them)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const hook = yield* webhookOf(world, "h")
          const environments = yield* EnvironmentStore
          const ours = makeEnvironment({ team: world.team, creator: world.bob.principal_uid })
          const theirs = makeEnvironment({ team: other.team, creator: other.alice.principal_uid, teamScope: true })
          yield* environments.create(ours)
          yield* environments.create(theirs)
          const base = { name: "x", prompt: "p", trigger: trigger([hook]) }
          for (const env of [theirs.item.uid, uid()]) {
            expectInvalid(
              yield* failureOf(create(world.admin, { ...base, agent_config: { environment_id: env } })),
              "agent_config.environment_id"
            )
          }
          for (const principal of [other.alice.principal_uid, uid()]) {
            expectInvalid(
              yield* failureOf(create(world.admin, { ...base, agent_config: { agent_identity_uid: principal } })),
              "agent_config.agent_identity_uid"
            )
          }
          expect(yield* names(world)).toEqual([])
          // Bob's private environment: the admin sees every environment of the team.
          const ok = yield* create(world.admin, {
            ...base,
            agent_config: { environment_id: ours.item.uid, agent_identity_uid: world.robot.principal_uid }
          })
          expect(ok.agent_config).toEqual({ environment_id: ours.item.uid, agent_identity_uid: world.robot.principal_uid })
          // Another user of the team: an automation never acts as someone else (403).
          const asBob = yield* failureOf(create(world.admin, { ...base, name: "y", agent_config: { agent_identity_uid: world.bob.principal_uid } }))
          expect(asBob._tag).toBe("NotAuthorized")
          expect(asBob.message).toContain("agent_config.agent_identity_uid")
        }))

      it.effect("names are unique within a team (409)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const hook = yield* webhookOf(world, "h")
          yield* create(world.admin, { name: "one", prompt: "p", trigger: trigger([hook]) })
          const two = yield* create(world.admin, { name: "two", prompt: "p", trigger: trigger([hook]) })
          expect((yield* failureOf(create(world.admin, { name: "one ", prompt: "p", trigger: trigger([hook]) })))._tag)
            .toBe("Conflict")
          const renamed = yield* failureOf(update(world.admin, two.id, {
            name: "one",
            prompt: "p",
            enabled: true,
            trigger: trigger([hook])
          }))
          expect(renamed._tag).toBe("Conflict")
          expect(yield* names(world)).toEqual(["one", "two"])
          // Keeping its own name is no conflict.
          yield* update(world.admin, two.id, { name: "two", prompt: "q", enabled: true, trigger: trigger([hook]) })
        }))

      it.effect("PUT replaces every field, keeps agent_config when omitted and created_at always", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const automations = yield* Automations
          const a = yield* webhookOf(world, "a")
          const b = yield* webhookOf(world, "b")
          const created = yield* create(world.admin, {
            name: "before",
            prompt: "old prompt",
            agent_config: { model_id: "m1" },
            trigger: trigger([a], { action: ["opened"] })
          })
          yield* Effect.sleep("5 millis")
          const updated = yield* update(world.admin, created.id, {
            name: "after",
            prompt: "new prompt",
            enabled: false,
            trigger: trigger([b])
          })
          expect(updated.id).toBe(created.id)
          expect(updated.name).toBe("after")
          expect(updated.prompt).toBe("new prompt")
          expect(updated.enabled).toBe(false)
          expect(updated.agent_config).toEqual({ model_id: "m1" })
          expect(updated.trigger).toEqual(trigger([b]))
          expect(updated.created_at).toEqual(created.created_at)
          expect(DateTime.toEpochMillis(updated.updated_at)).toBeGreaterThan(DateTime.toEpochMillis(created.updated_at))
          expect(yield* automations.get(world.viewer, created.id)).toEqual(updated)
          const replacedConfig = yield* update(world.admin, created.id, {
            name: "after",
            prompt: "new prompt",
            enabled: true,
            agent_config: { model_id: "m2" },
            trigger: trigger([b])
          })
          expect(replacedConfig.agent_config).toEqual({ model_id: "m2" })

          // A PUT that fails validation changes nothing.
          expectInvalid(
            yield* failureOf(update(world.admin, created.id, {
              name: "broken",
              prompt: "p",
              enabled: true,
              trigger: trigger([b], { x: {} })
            })),
            "trigger.filter.payload.x"
          )
          expect(yield* automations.get(world.admin, created.id)).toEqual(replacedConfig)
        }))

      it.effect("PUT keeps a webhook it already selects after that webhook is deleted, but cannot add one", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const a = yield* webhookOf(world, "a")
          const b = yield* webhookOf(world, "b")
          const c = yield* webhookOf(world, "c")
          const created = yield* create(world.admin, { name: "x", prompt: "p", trigger: trigger([a, b]) })
          yield* Effect.flatMap(Webhooks, (w) => Effect.zipRight(w.remove(world.admin, b), w.remove(world.admin, c)))
          const kept = yield* update(world.admin, created.id, { name: "x", prompt: "p", enabled: false, trigger: trigger([a, b]) })
          expect(kept.trigger.filter.webhook_ids).toEqual([a, b])
          expect(kept.enabled).toBe(false)
          expectInvalid(
            yield* failureOf(update(world.admin, created.id, { name: "x", prompt: "p", enabled: true, trigger: trigger([a, b, c]) })),
            "trigger.filter.webhook_ids[2]"
          )
        }))

      it.effect("only admins change automations (403); other teams get 404 for everything", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const automations = yield* Automations
          const hook = yield* webhookOf(world, "h")
          const delivered = yield* logDelivery(hook, "ACCEPTED", { action: "opened" })
          const created = yield* create(world.admin, { name: "x", prompt: "p", trigger: trigger([hook]) })
          const body = { name: "changed", prompt: "p", enabled: false, trigger: trigger([hook]) }
          for (const viewer of [world.alice, world.viewer]) {
            expect((yield* failureOf(create(viewer, { name: "mine", prompt: "p", trigger: trigger([hook]) })))._tag)
              .toBe("NotAuthorized")
            expect((yield* failureOf(update(viewer, created.id, body)))._tag).toBe("NotAuthorized")
            expect((yield* failureOf(automations.remove(viewer, created.id)))._tag).toBe("NotAuthorized")
            expect((yield* testFilter(viewer, created.id, delivered)).result).toBe("WOULD_TRIGGER")
          }
          for (const viewer of [other.admin, other.viewer]) {
            expect((yield* failureOf(automations.get(viewer, created.id)))._tag).toBe("ResourceNotFound")
            expect((yield* failureOf(update(viewer, created.id, body)))._tag).toBe("ResourceNotFound")
            expect((yield* failureOf(automations.remove(viewer, created.id)))._tag).toBe("ResourceNotFound")
            expect((yield* failureOf(testFilter(viewer, created.id, delivered)))._tag).toBe("ResourceNotFound")
            expect((yield* automations.list(viewer)).automations).toEqual([])
          }
          expect(yield* automations.get(world.admin, created.id)).toEqual(created)
          expect(yield* names(world)).toEqual(["x"])
        }))

      it.effect("test-filter finds nothing in a deleted webhook's log (404)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const hook = yield* webhookOf(world, "h")
          const delivered = yield* logDelivery(hook, "ACCEPTED", { action: "opened" })
          const created = yield* create(world.admin, { name: "x", prompt: "p", trigger: trigger([hook]) })
          expect((yield* testFilter(world.admin, created.id, delivered)).result).toBe("WOULD_TRIGGER")
          yield* Effect.flatMap(Webhooks, (w) => w.remove(world.admin, hook))
          expect((yield* failureOf(testFilter(world.admin, created.id, delivered)))._tag).toBe("ResourceNotFound")
        }))

      it.effect("delete removes an automation (then 404)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const automations = yield* Automations
          const hook = yield* webhookOf(world, "h")
          const doomed = yield* create(world.admin, { name: "doomed", prompt: "p", trigger: trigger([hook]) })
          yield* create(world.admin, { name: "kept", prompt: "p", trigger: trigger([hook]) })
          yield* automations.remove(world.admin, doomed.id)
          expect(yield* names(world)).toEqual(["kept"])
          expect((yield* failureOf(automations.get(world.admin, doomed.id)))._tag).toBe("ResourceNotFound")
          expect((yield* failureOf(automations.remove(world.admin, doomed.id)))._tag).toBe("ResourceNotFound")
          const firing = yield* Effect.flatMap(AutomationStore, (store) => store.forWebhook(hook))
          expect(firing.map((a) => a.item.name)).toEqual(["kept"])
        }))

      it.effect("test-filter: WOULD_TRIGGER when a selected webhook's accepted payload matches, with reasons otherwise", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const selected = yield* webhookOf(world, "selected")
          const unselected = yield* webhookOf(world, "unselected")
          const filtered = yield* create(world.admin, {
            name: "opened PRs",
            prompt: "p",
            trigger: trigger([selected], { action: ["opened", "reopened"], pull_request: { draft: { exists: false } } })
          })
          const unfiltered = yield* create(world.admin, { name: "all", prompt: "p", trigger: trigger([selected]) })

          const matching = yield* logDelivery(selected, "ACCEPTED", { action: "opened", pull_request: { id: 7 } })
          const yes = yield* testFilter(world.admin, filtered.id, matching)
          expect(yes.result).toBe("WOULD_TRIGGER")
          expect(yes.reasons).toHaveLength(1)

          const closed = yield* logDelivery(selected, "ACCEPTED", { action: "closed", pull_request: { draft: true } })
          const no = yield* testFilter(world.admin, filtered.id, closed)
          expect(no.result).toBe("WOULD_NOT_TRIGGER")
          expect(no.reasons).toHaveLength(2)
          expect(no.reasons[0]).toContain("payload.action")
          expect(no.reasons[0]).toContain("closed")
          expect(no.reasons[1]).toContain("payload.pull_request.draft")
          expect((yield* testFilter(world.admin, unfiltered.id, closed)).result).toBe("WOULD_TRIGGER")

          const scalar = yield* logDelivery(selected, "ACCEPTED", "just a string")
          expect((yield* testFilter(world.admin, filtered.id, scalar)).result).toBe("WOULD_NOT_TRIGGER")
          expect((yield* testFilter(world.admin, unfiltered.id, scalar)).result).toBe("WOULD_TRIGGER")

          for (const outcome of ["REJECTED_AUTH", "DUPLICATE", "REJECTED_INVALID_JSON", "REJECTED_TOO_LARGE"] as const) {
            const rejected = yield* logDelivery(selected, outcome)
            const verdict = yield* testFilter(world.admin, unfiltered.id, rejected)
            expect(verdict.result).toBe("WOULD_NOT_TRIGGER")
            expect(verdict.reasons).toHaveLength(1)
            expect(verdict.reasons[0]).toContain(outcome)
          }

          const elsewhere = yield* logDelivery(unselected, "ACCEPTED", { action: "opened" })
          const notSelected = yield* testFilter(world.admin, filtered.id, elsewhere)
          expect(notSelected.result).toBe("WOULD_NOT_TRIGGER")
          expect(notSelected.reasons.some((r) => r.includes(unselected) && r.includes("does not select"))).toBe(true)

          // A disabled automation still tests its trigger.
          yield* update(world.admin, unfiltered.id, { name: "all", prompt: "p", enabled: false, trigger: trigger([selected]) })
          expect((yield* testFilter(world.admin, unfiltered.id, matching)).result).toBe("WOULD_TRIGGER")

          const unknown = yield* failureOf(testFilter(world.admin, filtered.id, uid()))
          expect(unknown._tag).toBe("ResourceNotFound")
          const other = yield* seedWorld()
          const foreignHook = yield* webhookOf(other, "theirs")
          const foreign = yield* logDelivery(foreignHook, "ACCEPTED", { action: "opened" })
          expect((yield* failureOf(testFilter(world.admin, filtered.id, foreign)))._tag).toBe("ResourceNotFound")
          expect((yield* failureOf(testFilter(world.admin, uid(), matching)))._tag).toBe("ResourceNotFound")
          expectInvalid(yield* failureOf(testFilter(world.admin, filtered.id, "not-an-id")), "delivery_id")
        }))

      it.effect("test-filter: a pasted payload is judged as a logged accepted delivery with that body would be", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const selected = yield* webhookOf(world, "selected")
          const filtered = yield* create(world.admin, {
            name: "opened PRs",
            prompt: "p",
            trigger: trigger([selected], { action: ["opened", "reopened"], pull_request: { draft: { exists: false } } })
          })
          const unfiltered = yield* create(world.admin, { name: "all", prompt: "p", trigger: trigger([selected]) })
          const payloads: ReadonlyArray<unknown> = [
            { action: "opened", pull_request: { id: 7 } },
            { action: "closed", pull_request: { draft: true } },
            { action: "reopened", pull_request: { draft: null } },
            "just a string",
            null,
            [1, 2],
            {}
          ]
          for (const payload of payloads) {
            const logged = yield* logDelivery(selected, "ACCEPTED", payload)
            for (const automation of [filtered, unfiltered]) {
              // A viewer may test too: it changes nothing.
              const pasted = yield* testBody(world.viewer, automation.id, { payload })
              expect(pasted).toEqual(yield* testFilter(world.admin, automation.id, logged))
            }
          }
          const no = yield* testBody(world.admin, filtered.id, { payload: { action: "closed" } })
          expect(no.result).toBe("WOULD_NOT_TRIGGER")
          expect(no.reasons[0]).toContain("payload.action")
          expect((yield* testBody(world.admin, filtered.id, { payload: { action: "opened" } })).result).toBe("WOULD_TRIGGER")

          // Exactly one of delivery_id and payload.
          const logged = yield* logDelivery(selected, "ACCEPTED", { action: "opened" })
          expectInvalid(yield* failureOf(testBody(world.admin, filtered.id, { delivery_id: logged, payload: {} })), "payload")
          expectInvalid(yield* failureOf(testBody(world.admin, filtered.id, {})), "delivery_id")
          expectInvalid(yield* failureOf(testBody(world.admin, filtered.id, { headers: { a: "b" } })), "delivery_id")

          // Bounded like a delivery's body (256 KiB of JSON): 413 naming payload.
          const big = { text: "x".repeat(256 * 1024) }
          const tooLarge = yield* failureOf(testBody(world.admin, filtered.id, { payload: big }))
          expect(tooLarge._tag).toBe("PayloadTooLarge")
          expect((tooLarge as { message: string }).message.startsWith("payload: ")).toBe(true)
          const fits = { text: "x".repeat(256 * 1024 - 20) }
          expect((yield* testBody(world.admin, unfiltered.id, { payload: fits })).result).toBe("WOULD_TRIGGER")

          // Another team's automation is a 404 whatever the body.
          const other = yield* seedWorld()
          expect((yield* failureOf(testBody(other.admin, filtered.id, { payload: {} })))._tag).toBe("ResourceNotFound")
        }))
    })
  })
}
