/**
 * The ingress's cached reads (docs/webhooks.md, "Cached reads"), attacked: a webhook and its
 * automations are read (and so cached) by deliveries on one replica, then the webhook's secret is
 * rotated, the webhook disabled or deleted, an automation created, disabled or removed through
 * another replica's services; the first replica must follow far within the cache's TTL (a minute
 * here): the old secret refused, the disabled or deleted webhook unknown, the runs started as the
 * automations now say.
 *
 * `replicas(ttlMs)` is the one of the token cache's suite (TokenCacheSuite.ts). Call
 * `webhookCacheSuite(name, replicas)` inside a vitest file.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Either, Layer, Schedule } from "effect"
import type { Scope } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import { CreateAutomationRequest, UpdateAutomationRequest } from "../src/domain/Automation.js"
import { decodeRequest } from "../src/domain/Common.js"
import { type AutomationId, IdsLive, type WebhookUid } from "../src/domain/Ids.js"
import { CreateWebhookRequest, PatchWebhookRequest } from "../src/domain/Webhook.js"
import { Automations } from "../src/services/Automations.js"
import { Ingress, IngressLimitsTag } from "../src/services/Ingress.js"
import type { BodyRead, IngressReceipt } from "../src/services/Ingress.js"
import { Runs } from "../src/services/Runs.js"
import { webhookIngressSettings, Webhooks } from "../src/services/Webhooks.js"
import { memoryBlobStore } from "./ConversationsServiceSuite.js"
import type { Stores } from "./Stores.js"
import { LONG_TTL_MS, type CacheReplicas } from "./TokenCacheSuite.js"
import { seedWorld } from "./World.js"

/** How long a change may take to reach the other replica (its notification), far below `LONG_TTL_MS`. */
const NOTIFIED_WITHIN = Duration.seconds(10)

type Services = Ingress | Webhooks | Automations

const servicesOf = (stores: Context.Context<Stores>) =>
  Layer.build(
    Layer.mergeAll(Ingress.Default, Webhooks.Default, Automations.Default).pipe(
      Layer.provideMerge(Runs.Default),
      Layer.provideMerge(
        Layer.mergeAll(Layer.succeedContext(stores), IdsLive, memoryBlobStore, IngressLimitsTag.layer(), webhookIngressSettings("http://x"))
      )
    )
  )

const decodeWebhook = decodeRequest(CreateWebhookRequest)
const decodePatch = decodeRequest(PatchWebhookRequest)
const decodeAutomation = decodeRequest(CreateAutomationRequest)
const decodeUpdate = decodeRequest(UpdateAutomationRequest)

/** Every delivery its own body (so none is a duplicate) and sender (so no rate limit or budget stops the retries). */
let sent = 0

/** A delivery to `uid` with a bearer token, on `replica`: its receipt, or the failure's tag. */
const deliverOn = (replica: Context.Context<Services>, uid: WebhookUid, token: string) =>
  Effect.suspend(() => {
    const n = ++sent
    const bytes = new TextEncoder().encode(JSON.stringify({ n }))
    return Context.get(replica, Ingress).receive({
      uid,
      token: undefined,
      headers: { authorization: `Bearer ${token}` },
      client: `client-${n}`,
      readBody: (): Effect.Effect<BodyRead> => Effect.succeed({ _tag: "Complete", bytes })
    })
  }).pipe(Effect.either, Effect.map(Either.mapLeft((e) => e._tag)))

/** Delivers on `replica` until `done` holds (or fails after `NOTIFIED_WITHIN`). */
const eventually = (
  replica: Context.Context<Services>,
  uid: WebhookUid,
  token: string,
  done: (outcome: Either.Either<IngressReceipt, string>) => boolean
) =>
  deliverOn(replica, uid, token).pipe(
    Effect.filterOrFail(done, () => "not yet"),
    Effect.retry(Schedule.spaced("20 millis")),
    Effect.timeoutFail({ duration: NOTIFIED_WITHIN, onTimeout: () => new Error("the other replica still reads the old webhook") })
  )

const startedRuns = (n: number) => (o: Either.Either<IngressReceipt, string>) => Either.isRight(o) && o.right.run_ids.length === n

export const webhookCacheSuite = <E>(
  name: string,
  replicas: (ttlMs: number) => Effect.Effect<CacheReplicas, E, Scope.Scope>
) =>
  describe(`webhook cache (${name})`, () => {
    /** Two replicas' services, a team, and a token webhook delivered to (so cached) on the second. */
    const setup = Effect.gen(function*() {
      const { stores: [first, second] } = yield* replicas(LONG_TTL_MS)
      const changer = yield* servicesOf(first)
      const checker = yield* servicesOf(second)
      const world = yield* seedWorld().pipe(Effect.provide(first))
      const admin: Viewer = world.admin
      const hook = yield* Context.get(changer, Webhooks).create(admin, yield* decodeWebhook({ name: "Deploys" }))
      const uid = hook.uid as WebhookUid
      const secret = hook.secret!
      const first_ = yield* deliverOn(checker, uid, secret)
      expect(Either.getOrThrow(first_)).toMatchObject({ outcome: "ACCEPTED", run_ids: [] })
      return { admin, changer, checker, secret, uid }
    })

    it.scopedLive("a rotated secret, a disabled and a deleted webhook are refused by the replica that cached the webhook", () =>
      Effect.gen(function*() {
        const { admin, changer, checker, secret, uid } = yield* setup
        const webhooks = Context.get(changer, Webhooks)
        const rotated = (yield* webhooks.rotateSecret(admin, uid)).secret!
        expect(yield* eventually(checker, uid, secret, Either.isLeft)).toEqual(Either.left("AuthenticationRequired"))
        expect(Either.isRight(yield* deliverOn(checker, uid, rotated))).toBe(true)
        yield* webhooks.patch(admin, uid, yield* decodePatch({ enabled: false }))
        expect(yield* eventually(checker, uid, rotated, Either.isLeft)).toEqual(Either.left("ResourceNotFound"))
        yield* webhooks.patch(admin, uid, yield* decodePatch({ enabled: true }))
        yield* eventually(checker, uid, rotated, Either.isRight)
        yield* webhooks.remove(admin, uid)
        expect(yield* eventually(checker, uid, rotated, Either.isLeft)).toEqual(Either.left("ResourceNotFound"))
      }))

    it.scopedLive("automations created, disabled or removed on one replica change what a delivery on the other starts", () =>
      Effect.gen(function*() {
        const { admin, changer, checker, secret, uid } = yield* setup
        const automations = Context.get(changer, Automations)
        const spec = {
          name: "Deploy",
          prompt: "deploy it",
          trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [uid] } }
        }
        const created = yield* automations.create(admin, yield* decodeAutomation(spec))
        const id = created.id as AutomationId
        yield* eventually(checker, uid, secret, startedRuns(1))
        yield* automations.update(admin, id, yield* decodeUpdate({ ...spec, enabled: false }))
        yield* eventually(checker, uid, secret, startedRuns(0))
        yield* automations.update(admin, id, yield* decodeUpdate({ ...spec, enabled: true }))
        yield* eventually(checker, uid, secret, startedRuns(1))
        yield* automations.remove(admin, id)
        yield* eventually(checker, uid, secret, startedRuns(0))
      }))
  })
