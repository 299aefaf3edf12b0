/**
 * The outbound webhooks service (docs/outbound-webhooks.md): a team's admins register endpoints
 * that hear of the team's runs, rotate their signing secrets, read their delivery logs and queue
 * deliveries again. Everything here is for team admins (an endpoint hears of every run of the team,
 * private ones included); another team's endpoint is a 404.
 *
 * Decisions:
 * - A URL is checked when it is saved as well as at each delivery: one the sender would refuse
 *   (a private address, or a host name that resolves to one or to nothing) is a 400 naming `url`.
 * - Turning an endpoint off fails its pending deliveries; turning it on clears `disabled_reason`.
 * - Rotating keeps the old secret signing beside the new one for `overlap_seconds` (a day unless
 *   asked), so receivers can switch without losing a delivery.
 * - The signing secret is generated (and shown once) unless `secret_name` names a team secret
 *   holding a Standard Webhooks secret: its value is copied then (never shown), so definitions as
 *   code can set it; a later change of the team secret is not re-read (rotate to take it).
 * - A name is optional, trimmed, and unique within the team (409 naming `name`), checked by
 *   reading then writing like the endpoint limit; once set it can be changed but not removed.
 */
import { Clock, DateTime, Effect, Either, Option, Redacted } from "effect"
import { canManageFactory, type Viewer } from "../domain/Access.js"
import { decodeTimeCursor, encodeKeysetCursor, fingerprint } from "../domain/Cursor.js"
import { Conflict, InvalidRequest, NotAuthorized, ResourceNotFound } from "../domain/Errors.js"
import { Ids, isUid22, type OutboundDeliveryId, OutboundWebhookUid } from "../domain/Ids.js"
import {
  type CheckOutboundWebhookRequest,
  CheckOutboundWebhookResponse,
  type CreateOutboundWebhookRequest,
  EndpointHealth,
  OutboundHealthResponse,
  ListOutboundDeliveriesResponse,
  ListOutboundWebhooksResponse,
  MAX_OUTBOUND_WEBHOOKS_PER_TEAM,
  MIN_SIGNING_KEY_BYTES,
  type OutboundDeliveryState,
  OutboundWebhook,
  OutboundWebhookWithSecret,
  type PatchOutboundWebhookRequest,
  RedeliverResponse,
  type RotateOutboundSecretRequest
} from "../domain/OutboundWebhook.js"
import { storageUnavailable } from "../internal/Services.js"
import { noSuchSecret, type SecretName } from "../domain/Secret.js"
import { OutboundSender } from "../ports/OutboundSender.js"
import { SecretStore } from "../ports/SecretStore.js"
import { OutboundWebhookStore, type StoredOutboundWebhook } from "../ports/OutboundWebhookStore.js"
import { Audit } from "./Audit.js"
import { credentialProblem, generateSigningSecret, parseLimit, standardWebhooksKey } from "./Webhooks.js"

const ADMINS_ONLY = "only team admins can manage outbound webhooks"
const HOUR_MS = 3_600_000

/** Why a turned-off endpoint's pending deliveries failed. */
export const TURNED_OFF = "the endpoint was turned off"

/** An endpoint as an audited resource. */
const resource = (uid: OutboundWebhookUid | null) => ({ type: "outbound_webhook", id: uid })

/** The query of a delivery-log page. */
export interface OutboundDeliveriesQuery {
  readonly cursor?: string | undefined
  readonly limit?: number | undefined
  readonly state?: OutboundDeliveryState | undefined
}

const pageFingerprint = (uid: OutboundWebhookUid, state: OutboundDeliveryState | undefined) =>
  fingerprint({ list: "outbound_deliveries", webhook_uid: uid, state: state ?? null })

const parseCursor = (cursor: string | undefined, queryFingerprint: string) =>
  Either.mapBoth(decodeTimeCursor(cursor, queryFingerprint), {
    onLeft: (problem) => InvalidRequest.forField("cursor", problem),
    onRight: (position) => position?.key ?? null
  })

/**
 * Why the value of the team secret `name` (undefined: there is none) cannot sign an endpoint's
 * deliveries: it must be a Standard Webhooks secret (base64, `whsec_` optional) of at least
 * `MIN_SIGNING_KEY_BYTES` bytes once decoded. Undefined when it can.
 */
export const signingSecretProblem = (name: SecretName, value: string | undefined): string | undefined => {
  if (value === undefined) return noSuchSecret(name)
  const problem = credentialProblem("signature", "standard_webhooks", value)
  if (problem !== undefined) return `the value of team secret ${name} ${problem}`
  const bytes = standardWebhooksKey(value)?.length ?? 0
  return bytes >= MIN_SIGNING_KEY_BYTES ? undefined : `the value of team secret ${name} is ${bytes} bytes once decoded; ` +
    `a signing secret needs at least ${MIN_SIGNING_KEY_BYTES} (whsec_ and 32 random bytes in base64)`
}

export class OutboundWebhooks extends Effect.Service<OutboundWebhooks>()("@agent-runs/core/OutboundWebhooks", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* OutboundWebhookStore
    const sender = yield* OutboundSender
    const ids = yield* Ids
    const secrets = yield* SecretStore

    const requireAdmin = (viewer: Viewer) =>
      canManageFactory(viewer) ? Effect.void : Effect.fail(new NotAuthorized({ message: ADMINS_ONLY }))

    /** An endpoint of the viewer's team (404 otherwise), for an admin (403 otherwise). */
    const requireEndpoint = (viewer: Viewer, uid: string) =>
      Effect.gen(function*() {
        yield* requireAdmin(viewer)
        const found = isUid22(uid) ? yield* store.get(viewer.team_uid, uid as OutboundWebhookUid) : Option.none()
        if (Option.isNone(found)) return yield* ResourceNotFound.of("outbound webhook", uid)
        return found.value
      })

    /** A URL the sender would deliver to now, else 400 naming `url`. */
    const requireReachable = (url: string) =>
      Effect.mapError(sender.check(url), (e) => InvalidRequest.forField("url", e.message))

    const now = Effect.map(Clock.currentTimeMillis, (ms) => DateTime.unsafeMake(ms))

    /** The value of the team secret `name` when it is a Standard Webhooks secret of at least 24 bytes, else the problem. */
    const teamSigningSecret = (viewer: Viewer, name: SecretName) =>
      Effect.map(secrets.get(viewer.team_uid, name), (value) => {
        const problem = signingSecretProblem(name, Option.getOrUndefined(Option.map(value, Redacted.value)))
        return problem === undefined && Option.isSome(value) ? Either.right(value.value) : Either.left(problem ?? noSuchSecret(name))
      })

    /**
     * The signing secret to store and what the response shows of it: the value of the team
     * secret `name` (never shown; a 400 naming `secret_name` unless it is a Standard Webhooks
     * secret of 24 bytes or more), or a generated one (shown this once).
     */
    const signingSecret = (viewer: Viewer, name: SecretName | undefined) =>
      Effect.gen(function*() {
        if (name === undefined) {
          const generated = generateSigningSecret()
          return { stored: Redacted.make(generated), shown: generated, secret_name: null }
        }
        const value = yield* teamSigningSecret(viewer, name)
        if (Either.isLeft(value)) return yield* InvalidRequest.forField("secret_name", value.left)
        return { stored: value.right, shown: "", secret_name: name }
      })

    /** Whether a URL and a team secret would do for an endpoint, as create checks them; creates nothing (admins only). */
    const check = Effect.fn("OutboundWebhooks.check")(
      function*(viewer: Viewer, request: CheckOutboundWebhookRequest) {
        yield* requireAdmin(viewer)
        const url = request.url === undefined
          ? null
          : yield* Effect.match(sender.check(request.url), { onFailure: (e) => e.message, onSuccess: () => null })
        const secret = request.secret_name === undefined
          ? null
          : Option.getOrNull(Either.getLeft(yield* teamSigningSecret(viewer, request.secret_name)))
        return new CheckOutboundWebhookResponse({ url_problem: url, secret_name_problem: secret })
      },
      storageUnavailable
    )

    /** A 409 naming `name` when another endpoint of the team has it. */
    const requireFreeName = (team: ReadonlyArray<StoredOutboundWebhook>, name: string, except?: OutboundWebhookUid) =>
      team.some((w) => w.item.name === name && w.item.uid !== except)
        ? Effect.fail(new Conflict({ message: `name: the team already has an outbound webhook named ${JSON.stringify(name)}` }))
        : Effect.void

    const create = Effect.fn("OutboundWebhooks.create")(
      function*(viewer: Viewer, request: CreateOutboundWebhookRequest) {
        yield* requireAdmin(viewer)
        yield* requireReachable(request.url)
        const secret = yield* signingSecret(viewer, request.secret_name)
        const team = yield* store.list(viewer.team_uid)
        if (team.length >= MAX_OUTBOUND_WEBHOOKS_PER_TEAM) {
          return yield* new Conflict({
            message: `the team already has ${MAX_OUTBOUND_WEBHOOKS_PER_TEAM} outbound webhooks, the most allowed; delete one first`
          })
        }
        const name = request.name?.trim() ?? null
        if (name !== null) yield* requireFreeName(team, name)
        const at = yield* now
        const item = new OutboundWebhook({
          uid: OutboundWebhookUid.make(yield* ids.uid22),
          name,
          url: request.url,
          description: request.description,
          events: request.events,
          filters: request.filters,
          enabled: request.enabled,
          disabled_reason: null,
          disabled_at: null,
          previous_secret_expires_at: null,
          secret_name: secret.secret_name,
          created_at: at,
          updated_at: at
        })
        const stored: StoredOutboundWebhook = { item, team_uid: viewer.team_uid, creator_uid: viewer.principal_uid }
        yield* audit.recording(viewer, store.create(stored, secret.stored), () => ({
          action: "outbound_webhook.create",
          resource: resource(item.uid)
        }))
        return new OutboundWebhookWithSecret({ ...item, secret: secret.shown })
      },
      storageUnavailable
    )

    const list = Effect.fn("OutboundWebhooks.list")(
      function*(viewer: Viewer) {
        yield* requireAdmin(viewer)
        const all = yield* store.list(viewer.team_uid)
        return new ListOutboundWebhooksResponse({ outbound_webhooks: all.map((w) => w.item) })
      },
      storageUnavailable
    )

    const get = Effect.fn("OutboundWebhooks.get")(
      function*(viewer: Viewer, uid: string) {
        return (yield* requireEndpoint(viewer, uid)).item
      },
      storageUnavailable
    )

    /** Writes `item` over the endpoint, audited; 404 when it went meanwhile. */
    const write = (viewer: Viewer, action: string, current: StoredOutboundWebhook, item: OutboundWebhook) =>
      Effect.gen(function*() {
        const written = yield* audit.recording(viewer, store.update({ ...current, item }, TURNED_OFF), () => ({
          action,
          resource: resource(item.uid)
        }))
        if (!written) return yield* ResourceNotFound.of("outbound webhook", item.uid)
        return item
      })

    const patch = Effect.fn("OutboundWebhooks.patch")(
      function*(viewer: Viewer, uid: string, request: PatchOutboundWebhookRequest) {
        const current = yield* requireEndpoint(viewer, uid)
        if (request.url !== undefined && request.url !== current.item.url) yield* requireReachable(request.url)
        const name = request.name?.trim() ?? current.item.name
        if (name !== null && name !== current.item.name) {
          yield* requireFreeName(yield* store.list(viewer.team_uid), name, current.item.uid)
        }
        const turnedOn = request.enabled === true && !current.item.enabled
        const item = new OutboundWebhook({
          ...current.item,
          name,
          url: request.url ?? current.item.url,
          description: request.description ?? current.item.description,
          events: request.events ?? current.item.events,
          filters: request.filters ?? current.item.filters,
          enabled: request.enabled ?? current.item.enabled,
          ...(turnedOn ? { disabled_reason: null, disabled_at: null } : {}),
          updated_at: yield* now
        })
        return yield* write(viewer, "outbound_webhook.update", current, item)
      },
      storageUnavailable
    )

    const remove = Effect.fn("OutboundWebhooks.remove")(
      function*(viewer: Viewer, uid: string) {
        const current = yield* requireEndpoint(viewer, uid)
        yield* audit.recording(viewer, store.remove(viewer.team_uid, current.item.uid), () => ({
          action: "outbound_webhook.delete",
          resource: resource(current.item.uid)
        }))
      },
      storageUnavailable
    )

    const rotateSecret = Effect.fn("OutboundWebhooks.rotateSecret")(
      function*(viewer: Viewer, uid: string, request: RotateOutboundSecretRequest) {
        const current = yield* requireEndpoint(viewer, uid)
        const secret = yield* signingSecret(viewer, request.secret_name)
        const at = yield* now
        const until = DateTime.toEpochMillis(at) + request.overlap_seconds * 1000
        const item = new OutboundWebhook({
          ...current.item,
          previous_secret_expires_at: request.overlap_seconds === 0 ? null : DateTime.unsafeMake(until),
          secret_name: secret.secret_name,
          updated_at: at
        })
        const written = yield* audit.recording(viewer, store.rotate({ ...current, item }, secret.stored, until), () => ({
          action: "outbound_webhook.rotate_secret",
          resource: resource(item.uid)
        }))
        if (!written) return yield* ResourceNotFound.of("outbound webhook", item.uid)
        return new OutboundWebhookWithSecret({ ...item, secret: secret.shown })
      },
      storageUnavailable
    )

    const deliveries = Effect.fn("OutboundWebhooks.deliveries")(
      function*(viewer: Viewer, uid: string, query: OutboundDeliveriesQuery) {
        const endpoint = yield* requireEndpoint(viewer, uid)
        const queryFingerprint = pageFingerprint(endpoint.item.uid, query.state)
        const after = yield* parseCursor(query.cursor, queryFingerprint)
        const limit = yield* parseLimit(query.limit)
        const page = yield* store.deliveries(viewer.team_uid, endpoint.item.uid, { limit, after, state: query.state })
        const last = page.deliveries[page.deliveries.length - 1]
        return new ListOutboundDeliveriesResponse({
          deliveries: page.deliveries,
          page_info: page.next === null || last === undefined
            ? { has_next_page: false }
            : { has_next_page: true, next_cursor: encodeKeysetCursor({ key: page.next, id: last.delivery_id }, queryFingerprint) }
        })
      },
      storageUnavailable
    )

    const redeliver = Effect.fn("OutboundWebhooks.redeliver")(
      function*(viewer: Viewer, uid: string, deliveryId: string) {
        const endpoint = yield* requireEndpoint(viewer, uid)
        const at = yield* Clock.currentTimeMillis
        const queued = yield* audit.recording(
          viewer,
          store.redeliver(viewer.team_uid, endpoint.item.uid, deliveryId as OutboundDeliveryId, at),
          () => ({ action: "outbound_webhook.redeliver", resource: resource(endpoint.item.uid) })
        )
        if (queued === "missing") return yield* ResourceNotFound.of("outbound delivery", deliveryId)
        return new RedeliverResponse({ redelivered: queued === "queued" ? 1 : 0 })
      },
      storageUnavailable
    )

    const redeliverFailed = Effect.fn("OutboundWebhooks.redeliverFailed")(
      function*(viewer: Viewer, uid: string, since: DateTime.Utc) {
        const endpoint = yield* requireEndpoint(viewer, uid)
        const at = yield* Clock.currentTimeMillis
        const redelivered = yield* audit.recording(
          viewer,
          store.redeliverFailed(viewer.team_uid, endpoint.item.uid, DateTime.toEpochMillis(since), at),
          () => ({ action: "outbound_webhook.redeliver", resource: resource(endpoint.item.uid) })
        )
        return new RedeliverResponse({ redelivered })
      },
      storageUnavailable
    )

    /** Each endpoint's deliveries created in the last `hours` hours, by their state now (the Overview's chart). */
    const health = Effect.fn("OutboundWebhooks.health")(
      function*(viewer: Viewer, hours: number) {
        yield* requireAdmin(viewer)
        const since = (yield* Clock.currentTimeMillis) - hours * HOUR_MS
        const endpoints = yield* store.list(viewer.team_uid)
        const counts = yield* store.health(viewer.team_uid, since)
        const countOf = (uid: string, state: OutboundDeliveryState) =>
          counts.find((c) => c.webhook_uid === uid && c.state === state)?.count ?? 0
        return new OutboundHealthResponse({
          since: DateTime.unsafeMake(since),
          hours,
          endpoints: endpoints.map(({ item }) =>
            new EndpointHealth({
              uid: item.uid,
              url: item.url,
              enabled: item.enabled,
              disabled_reason: item.disabled_reason,
              delivered: countOf(item.uid, "delivered"),
              failed: countOf(item.uid, "failed"),
              pending: countOf(item.uid, "pending")
            })
          )
        })
      },
      storageUnavailable
    )

    return { create, check, list, get, patch, remove, rotateSecret, deliveries, redeliver, redeliverFailed, health } as const
  })
}) {}
