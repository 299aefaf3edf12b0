/**
 * The webhooks application service (docs/webhooks.md): create, list, get, patch, delete and rotate the secret of a
 * team's custom webhooks, and read their delivery logs. The ingress that receives deliveries is
 * not here. HTTP status codes belong to packages/http; this module fails with `Errors.ts`.
 *
 * Decisions:
 * - Access: webhooks belong to a team (no User scope). Every member of the team, viewers
 *   included, may list and get its webhooks and read their delivery logs (the automation editor
 *   shows them to everyone); only admins create, patch, rotate and delete (403 otherwise). A
 *   webhook of another team, or a deleted one, is a 404, checked before the role (so a change
 *   by a non-admin to a webhook it cannot see is a 404, one it can see a 403).
 * - Credentials, shown once in the create and rotate responses (`secret`):
 *   - `token` and `url_token`: generated, 32 random bytes from `globalThis.crypto` as base64url
 *     (43 URL-safe characters).
 *   - `signature`: the caller's `secret` (surrounding whitespace trimmed: providers never issue
 *     secrets with it, pastes often add it), else generated in the Standard Webhooks form
 *     `whsec_<base64 of 32 random bytes>`, whatever the scheme. A supplied `standard_webhooks`
 *     secret must be base64, with or without the `whsec_` prefix (400 naming `secret`).
 *   - `secret_name`: the credential is the named team secret's value, which must exist (400
 *     naming `secret_name`) and suit the mode: URL-safe for `url_token`, visible ASCII without
 *     spaces for `token` (it travels in a header), base64 (optionally `whsec_`) for
 *     `standard_webhooks`. The value is never returned: such a webhook's create response carries
 *     `secret: ""` (returning it would let any admin read any team secret).
 * - The webhook keeps its own sealed copy of its credential (`StoredWebhook.secret`). For a
 *   `secret_name` webhook the ingress checks the team secret's current value, so a changed team
 *   secret takes effect at the next delivery (a deliberate difference from the specification,
 *   which waits for the next toggle: docs/http.md); the copy (the value read at creation and
 *   re-read each time the webhook goes from disabled to enabled) serves only while the team
 *   secret is gone. Re-enabling when the team secret is gone or no longer suits the mode is a
 *   409 naming it. A PATCH that repeats `enabled: true` re-reads nothing.
 * - `checkSecret` answers whether a team secret would do as a `secret_name` credential (the
 *   create checks and words, nothing stored; admins only): secret values are never returned, so
 *   the definitions applier asks it before it applies anything.
 * - Rotating a `secret_name` webhook is a 422 `operation_not_supported`: its credential is the
 *   team secret; replace that instead (it takes effect at the next delivery). Rotation generates a new secret
 *   for every other webhook (a `signature` one gets a new `whsec_` secret, even for schemes whose
 *   provider issues secrets: to use a provider-issued secret again, recreate the webhook or keep
 *   the secret in a team secret). The old secret stops at once: the stored copy is replaced
 *   under the next secret version, compare-and-set on the version read.
 * - `ingress_url` is `{base}/webhooks/w/{uid}`, for `url_token` `{base}/webhooks/w/{uid}/{token}`
 *   with the literal `{token}` placeholder; only the create and rotate responses of a webhook
 *   with a shown secret put the real token in the URL. `{base}` is `WebhookIngressSettings.baseUrl`
 *   (trailing slashes dropped), applied when presenting, so a changed base URL shows at once; the
 *   stored copy never contains a token.
 * - Names are trimmed and unique within the team (409 otherwise), since definition files and the
 *   automation editor name webhooks; the 21st live webhook of a team is a 409. Both are checked
 *   by reading then writing: concurrent creates may pass the checks together.
 * - Validation order of create: 403 (not an admin), 400 (credential), 409 (limit, then name).
 *   Nothing is stored when a request is refused.
 * - PATCH changes only the keys given; a PATCH that changes nothing writes nothing and keeps
 *   `updated_at`. Enable/Disable go through WebhookStateMachine.
 * - Delete moves the webhook to `deleted` (its row is kept, invisible, its secret copy erased)
 *   and keeps its delivery log and the automations that select it (they stop firing).
 * - A write that loses a race (a concurrent rotate or delete) re-reads and decides once more,
 *   then answers 409, retryable.
 * - Delivery log pages: `limit` 1–100 (default 20), newest first by (received_at, delivery_id);
 *   `cursor` is the previous page's opaque `next_cursor`, bound to the webhook (one from another
 *   webhook, or edited, is a 400 naming `cursor`). Parameters are checked before the webhook.
 * - A storage failure is a 503 `resource_unavailable` (retryable).
 */
import { Clock, Context, DateTime, Effect, Either, Encoding, Layer, Option, Redacted } from "effect"
import { canManageFactory } from "../domain/Access.js"
import type { Viewer } from "../domain/Access.js"
import { decodeTimeCursor, encodeKeysetCursor, fingerprint } from "../domain/Cursor.js"
import { Conflict, InvalidRequest, NotAuthorized, OperationNotSupported, ResourceNotFound } from "../domain/Errors.js"
import { Ids, WebhookUid } from "../domain/Ids.js"
import type { DeliveryId, TeamUid } from "../domain/Ids.js"
import { SecretStore } from "../ports/SecretStore.js"
import { StaleWrite, type StorageError } from "../ports/Storage.js"
import { WebhookStore } from "../ports/WebhookStore.js"
import type { StoredWebhook } from "../ports/WebhookStore.js"
import { noSuchSecret, type SecretName } from "../domain/Secret.js"
import {
  CheckWebhookSecretResponse,
  ListDeliveriesResponse,
  ListWebhooksResponse,
  MAX_WEBHOOKS_PER_TEAM,
  Webhook,
  WebhookWithSecret
} from "../domain/Webhook.js"
import type {
  AuthMode,
  CheckWebhookSecretRequest,
  CreateWebhookRequest,
  PatchWebhookRequest,
  SignatureScheme
} from "../domain/Webhook.js"
import { createdWebhookState, transition, WebhookEvent } from "../domain/WebhookStateMachine.js"
import type { WebhookState } from "../domain/WebhookStateMachine.js"
import { storageUnavailable } from "../internal/Services.js"
import { Audit } from "./Audit.js"

/** Where senders post: the base URL of the webhook ingress, provided by the server. */
export class WebhookIngressSettings extends Context.Tag("@agent-runs/core/WebhookIngressSettings")<
  WebhookIngressSettings,
  {
    /** e.g. `https://hooks.example.com`; `/webhooks/w/{uid}` is appended. */
    readonly baseUrl: string
  }
>() {}

/** The settings layer for a base URL. */
export const webhookIngressSettings = (baseUrl: string): Layer.Layer<WebhookIngressSettings> =>
  Layer.succeed(WebhookIngressSettings, { baseUrl })

/** The placeholder a `url_token` webhook's ingress URL shows instead of its token. */
export const TOKEN_PLACEHOLDER = "{token}"

/** The ingress URL of a webhook; a `url_token` one ends with `token` (default: the placeholder). */
export const ingressUrl = (baseUrl: string, uid: WebhookUid, authMode: AuthMode, token = TOKEN_PLACEHOLDER): string => {
  const base = `${baseUrl.replace(/\/+$/, "")}/webhooks/w/${uid}`
  return authMode === "url_token" ? `${base}/${token}` : base
}

/** Random bytes in a generated credential. */
export const SECRET_BYTES = 32

const randomBytes = (n: number): Uint8Array => globalThis.crypto.getRandomValues(new Uint8Array(n))

/** A generated token: 32 random bytes, base64url (URL-safe, no padding). */
export const generateToken = (): string => Encoding.encodeBase64Url(randomBytes(SECRET_BYTES))

/** The prefix of Standard Webhooks secrets. */
export const STANDARD_WEBHOOKS_PREFIX = "whsec_"

/** A generated signing secret, Standard Webhooks style: `whsec_` and 32 random bytes in base64. */
export const generateSigningSecret = (): string =>
  `${STANDARD_WEBHOOKS_PREFIX}${Encoding.encodeBase64(randomBytes(SECRET_BYTES))}`

/** The key bytes of a Standard Webhooks secret (base64, `whsec_` optional), if it is one. */
export const standardWebhooksKey = (secret: string): Uint8Array | undefined => {
  const body = secret.startsWith(STANDARD_WEBHOOKS_PREFIX) ? secret.slice(STANDARD_WEBHOOKS_PREFIX.length) : secret
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) return undefined
  const decoded = Encoding.decodeBase64(body)
  return Either.isRight(decoded) && decoded.right.length > 0 ? decoded.right : undefined
}

const urlSafe = /^[A-Za-z0-9._~-]+$/
const headerToken = /^[\x21-\x7e]+$/

/** Why a credential does not suit a webhook's mode, or undefined when it does. */
export const credentialProblem = (
  authMode: AuthMode,
  scheme: SignatureScheme | null | undefined,
  credential: string
): string | undefined => {
  if (credential === "") return "must not be empty"
  switch (authMode) {
    case "url_token":
      return urlSafe.test(credential)
        ? undefined
        : "must be URL-safe (letters, digits, '-', '.', '_', '~') for a url_token webhook"
    case "token":
      return headerToken.test(credential)
        ? undefined
        : "must be visible ASCII without spaces for a token webhook (it is sent in the Authorization header)"
    case "signature":
      return scheme === "standard_webhooks" && standardWebhooksKey(credential) === undefined
        ? "must be a Standard Webhooks secret: base64, optionally prefixed whsec_"
        : undefined
  }
}

/**
 * The value of the team secret `name` when it suits a credential of this mode (`credentialProblem`),
 * else the problem, in words (an absent secret included).
 */
const suitableTeamSecret = (
  secrets: Context.Tag.Service<SecretStore>,
  team: TeamUid,
  name: SecretName,
  authMode: AuthMode,
  scheme: SignatureScheme | null | undefined
): Effect.Effect<Either.Either<Redacted.Redacted<string>, string>, StorageError> =>
  Effect.map(secrets.get(team, name), (value) => {
    if (Option.isNone(value)) return Either.left(noSuchSecret(name))
    const problem = credentialProblem(authMode, scheme, Redacted.value(value.value))
    return problem === undefined ? Either.right(value.value) : Either.left(`the value of team secret ${name} ${problem}`)
  })

/** Delivery log page sizes. */
export const DELIVERY_PAGE_LIMIT = { min: 1, max: 100, default: 20 } as const

/** The fingerprint delivery-log cursors of a webhook are bound to. */
const deliveriesFingerprint = (uid: WebhookUid) => fingerprint({ list: "deliveries", webhook_uid: uid })

/** The query of a delivery-log page: `limit` and the previous page's `next_cursor`. */
export interface DeliveriesQuery {
  readonly cursor?: string | undefined
  readonly limit?: number | undefined
}

/** A delivery-log page's `limit`, the default when absent; a 400 naming `limit` when out of range. */
export const parseLimit = (limit: number | undefined): Either.Either<number, InvalidRequest> =>
  limit === undefined
    ? Either.right(DELIVERY_PAGE_LIMIT.default)
    : Number.isInteger(limit) && limit >= DELIVERY_PAGE_LIMIT.min && limit <= DELIVERY_PAGE_LIMIT.max
    ? Either.right(limit)
    : Either.left(
      InvalidRequest.forField(
        "limit",
        `must be an integer from ${DELIVERY_PAGE_LIMIT.min} to ${DELIVERY_PAGE_LIMIT.max}; got ${limit}`
      )
    )

const parseCursor = (uid: WebhookUid, cursor: string | undefined) =>
  Either.mapBoth(decodeTimeCursor(cursor, deliveriesFingerprint(uid)), {
    onLeft: (problem) => InvalidRequest.forField("cursor", problem),
    onRight: (position) => position === null ? null : { received_at: position.key, delivery_id: position.id as DeliveryId }
  })

const isStaleWrite = (e: unknown): e is StaleWrite => e instanceof StaleWrite

const ADMINS_ONLY = "only team admins can manage webhooks"

/** The webhooks service: managing a team's custom webhooks and reading their delivery logs. */
/** A webhook as an audited resource. */
const resource = (uid: WebhookUid | null) => ({ type: "webhook", id: uid })

export class Webhooks extends Effect.Service<Webhooks>()("@agent-runs/core/Webhooks", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function* () {
    const audit = yield* Audit
    const store = yield* WebhookStore
    const secrets = yield* SecretStore
    const ids = yield* Ids
    const settings = yield* WebhookIngressSettings

    /** A webhook as read and listed: never its secret; the ingress URL from the current base. */
    const present = (w: StoredWebhook): Webhook =>
      new Webhook({ ...w.item, ingress_url: ingressUrl(settings.baseUrl, w.item.uid, w.item.auth_mode) })

    /** The create and rotate response: the secret shown once (and in a url_token's URL). */
    const presentWithSecret = (w: StoredWebhook, shown: string): WebhookWithSecret =>
      new WebhookWithSecret({
        ...w.item,
        ingress_url: ingressUrl(settings.baseUrl, w.item.uid, w.item.auth_mode, shown === "" ? TOKEN_PLACEHOLDER : shown),
        secret: shown
      })

    /** A live webhook of the viewer's team, else 404 (unknown, deleted and foreign alike). */
    const requireWebhook = (viewer: Viewer, uid: WebhookUid) =>
      Effect.flatMap(
        store.get(uid),
        Option.match({
          onNone: () => Effect.fail(ResourceNotFound.of("webhook", uid)),
          onSome: (w: StoredWebhook) =>
            w.team_uid === viewer.team_uid ? Effect.succeed(w) : Effect.fail(ResourceNotFound.of("webhook", uid))
        })
      )

    const requireAdmin = (viewer: Viewer) =>
      canManageFactory(viewer) ? Effect.void : Effect.fail(new NotAuthorized({ message: ADMINS_ONLY }))

    /** A webhook of the viewer's team that the viewer may change: 404, then 403. */
    const requireChangeable = (viewer: Viewer, uid: WebhookUid) =>
      Effect.tap(requireWebhook(viewer, uid), () => requireAdmin(viewer))

    /** The value of a team secret that suits the mode, or `onProblem(problem)`. */
    const teamCredential = <E>(
      viewer: Viewer,
      name: SecretName,
      authMode: AuthMode,
      scheme: SignatureScheme | null | undefined,
      onProblem: (problem: string) => E
    ) =>
      Effect.flatMap(
        suitableTeamSecret(secrets, viewer.team_uid, name, authMode, scheme),
        Either.match({ onLeft: (problem) => Effect.fail(onProblem(problem)), onRight: Effect.succeed })
      )

    /** The credential of a new webhook and what the response shows of it. */
    const initialCredential = (viewer: Viewer, request: CreateWebhookRequest) =>
      Effect.gen(function* () {
        if (request.secret_name !== undefined) {
          const value = yield* teamCredential(
            viewer,
            request.secret_name,
            request.auth_mode,
            request.signature_scheme,
            (problem) => InvalidRequest.forField("secret_name", problem)
          )
          return { stored: value, shown: "" }
        }
        const supplied = request.auth_mode === "signature" ? request.secret?.trim() ?? "" : ""
        if (supplied === "") {
          const generated = request.auth_mode === "signature" ? generateSigningSecret() : generateToken()
          return { stored: Redacted.make(generated), shown: generated }
        }
        const problem = credentialProblem(request.auth_mode, request.signature_scheme, supplied)
        if (problem !== undefined) return yield* InvalidRequest.forField("secret", problem)
        return { stored: Redacted.make(supplied), shown: supplied }
      })

    const nameTaken = (team: ReadonlyArray<StoredWebhook>, name: string, except?: WebhookUid) =>
      team.some((w) => w.item.name === name && w.item.uid !== except)

    /**
     * Stores `next` over `current` (compare-and-set on the secret version), recording `action` in
     * the same transaction.
     */
    const write = (viewer: Viewer, action: string, current: StoredWebhook, next: StoredWebhook) =>
      audit.recording(viewer, store.update(next, current.state.secretVersion), () => ({ action, resource: resource(current.item.uid) }))

    /** Runs a read-decide-write once more when it loses a race, then answers 409 retryable. */
    const retryingStale = <A, E, R>(attempt: Effect.Effect<A, E | StaleWrite, R>) =>
      attempt.pipe(
        Effect.catchIf(isStaleWrite, () => attempt),
        Effect.catchIf(
          isStaleWrite,
          () => Effect.fail(new Conflict({ message: "the webhook changed meanwhile; try again", retryable: true }))
        )
      )

    /** Creates a webhook; its secret is in the response, and never shown again. */
    const create = Effect.fn("Webhooks.create")(
      function* (viewer: Viewer, request: CreateWebhookRequest) {
        yield* requireAdmin(viewer)
        const credential = yield* initialCredential(viewer, request)
        const name = request.name.trim()
        const existing = yield* store.list(viewer.team_uid)
        if (existing.length >= MAX_WEBHOOKS_PER_TEAM) {
          return yield* new Conflict({
            message: `the team already has ${MAX_WEBHOOKS_PER_TEAM} webhooks, the most allowed; delete one first`
          })
        }
        if (nameTaken(existing, name)) {
          return yield* new Conflict({ message: `name: the team already has a webhook named ${JSON.stringify(name)}` })
        }
        const uid = WebhookUid.make(yield* ids.uid22)
        const at = DateTime.unsafeMake(yield* Clock.currentTimeMillis)
        const scheme = request.auth_mode === "signature" ? request.signature_scheme ?? null : null
        const stored: StoredWebhook = {
          item: new Webhook({
            uid,
            name,
            auth_mode: request.auth_mode,
            signature_scheme: scheme,
            ...(request.secret_name === undefined ? {} : { secret_name: request.secret_name }),
            ...(request.delivery_id_header === undefined ? {} : { delivery_id_header: request.delivery_id_header }),
            enabled: request.enabled,
            ingress_url: ingressUrl(settings.baseUrl, uid, request.auth_mode),
            created_at: at,
            updated_at: at
          }),
          team_uid: viewer.team_uid,
          creator_uid: viewer.principal_uid,
          state: createdWebhookState(request.enabled),
          secret: credential.stored
        }
        yield* audit.recording(viewer, store.create(stored), () => ({ action: "webhook.create", resource: resource(uid) }))
        return presentWithSecret(stored, credential.shown)
      },
      storageUnavailable,
      audit.refusals("webhook.create", () => resource(null))
    )

    /** The team's live webhooks, by name, without secrets. */
    const list = Effect.fn("Webhooks.list")(
      function* (viewer: Viewer) {
        const webhooks = yield* store.list(viewer.team_uid)
        return new ListWebhooksResponse({ webhooks: webhooks.map(present) })
      },
      storageUnavailable
    )

    /** One webhook of the viewer's team, without its secret. */
    const get = Effect.fn("Webhooks.get")(
      function* (viewer: Viewer, uid: WebhookUid) {
        return present(yield* requireWebhook(viewer, uid))
      },
      storageUnavailable
    )

    const patchOnce = (viewer: Viewer, uid: WebhookUid, request: PatchWebhookRequest) =>
      Effect.gen(function* () {
        const current = yield* requireChangeable(viewer, uid)
        const { delivery_id_header: _header, ...rest } = current.item
        let name = current.item.name
        if (request.name !== undefined && request.name.trim() !== name) {
          name = request.name.trim()
          if (nameTaken(yield* store.list(viewer.team_uid), name, uid)) {
            return yield* new Conflict({ message: `name: the team already has a webhook named ${JSON.stringify(name)}` })
          }
        }
        const header = request.delivery_id_header === undefined
          ? current.item.delivery_id_header
          : request.delivery_id_header ?? undefined
        let state: WebhookState = current.state
        let secret = current.secret
        if (request.enabled !== undefined) {
          const moved = transition(current.state, request.enabled ? WebhookEvent.Enable() : WebhookEvent.Disable())
          if (Either.isLeft(moved)) return yield* moved.left.toResourceNotFound(uid)
          state = moved.right.to
          const secretName = current.item.secret_name
          if (moved.right.changed && state.status === "enabled" && secretName !== undefined) {
            secret = yield* teamCredential(
              viewer,
              secretName,
              current.item.auth_mode,
              current.item.signature_scheme,
              (problem) => new Conflict({ message: `enabled: cannot enable the webhook: ${problem}` })
            )
          }
        }
        const changed = name !== current.item.name || header !== current.item.delivery_id_header ||
          state.status !== current.state.status || secret !== current.secret
        if (!changed) {
          yield* audit.recording(viewer, Effect.void, () => ({ action: "webhook.update", resource: resource(uid) }))
          return present(current)
        }
        const next: StoredWebhook = {
          ...current,
          state,
          secret,
          item: new Webhook({
            ...rest,
            name,
            ...(header === undefined ? {} : { delivery_id_header: header }),
            enabled: state.status === "enabled",
            updated_at: DateTime.unsafeMake(yield* Clock.currentTimeMillis)
          })
        }
        yield* write(viewer, "webhook.update", current, next)
        return present(next)
      })

    /** Changes a webhook's name, enabled flag or delivery id header (admins only). */
    const patch = Effect.fn("Webhooks.patch")(
      function* (viewer: Viewer, uid: WebhookUid, request: PatchWebhookRequest) {
        return yield* retryingStale(patchOnce(viewer, uid, request))
      },
      storageUnavailable,
      audit.refusals("webhook.update", (uid: WebhookUid) => resource(uid))
    )

    const removeOnce = (viewer: Viewer, uid: WebhookUid) =>
      Effect.gen(function* () {
        const current = yield* requireChangeable(viewer, uid)
        const moved = transition(current.state, WebhookEvent.Delete())
        if (Either.isLeft(moved)) return yield* moved.left.toResourceNotFound(uid)
        yield* write(viewer, "webhook.delete", current, {
          ...current,
          state: moved.right.to,
          secret: null,
          item: new Webhook({
            ...current.item,
            enabled: false,
            updated_at: DateTime.unsafeMake(yield* Clock.currentTimeMillis)
          })
        })
      })

    /** Deletes a webhook: senders get 404 at once; its log and automations stay (admins only). */
    const remove = Effect.fn("Webhooks.remove")(
      function* (viewer: Viewer, uid: WebhookUid) {
        yield* retryingStale(removeOnce(viewer, uid))
      },
      storageUnavailable,
      audit.refusals("webhook.delete", (uid: WebhookUid) => resource(uid))
    )

    const rotateOnce = (viewer: Viewer, uid: WebhookUid) =>
      Effect.gen(function* () {
        const current = yield* requireChangeable(viewer, uid)
        if (current.item.secret_name !== undefined) {
          return yield* new OperationNotSupported({
            message: `the webhook's secret is team secret ${current.item.secret_name}: ` +
              `replace that secret (PUT /agent/secrets/${current.item.secret_name}); the next delivery is checked against the new value`
          })
        }
        const moved = transition(current.state, WebhookEvent.RotateSecret())
        if (Either.isLeft(moved)) return yield* moved.left.toResourceNotFound(uid)
        const generated = current.item.auth_mode === "signature" ? generateSigningSecret() : generateToken()
        const next: StoredWebhook = {
          ...current,
          state: moved.right.to,
          secret: Redacted.make(generated),
          item: new Webhook({ ...current.item, updated_at: DateTime.unsafeMake(yield* Clock.currentTimeMillis) })
        }
        yield* write(viewer, "webhook.rotate_secret", current, next)
        return presentWithSecret(next, generated)
      })

    /** Replaces a webhook's secret: the new one is shown once, the old one stops at once (admins only). */
    const rotateSecret = Effect.fn("Webhooks.rotateSecret")(
      function* (viewer: Viewer, uid: WebhookUid) {
        return yield* retryingStale(rotateOnce(viewer, uid))
      },
      storageUnavailable,
      audit.refusals("webhook.rotate_secret", (uid: WebhookUid) => resource(uid))
    )

    /**
     * Whether a team secret would do as a webhook's credential (`secret_name`), with the same
     * checks and words as create; stores nothing (admins only, like the secrets themselves).
     */
    const checkSecret = Effect.fn("Webhooks.checkSecret")(
      function* (viewer: Viewer, request: CheckWebhookSecretRequest) {
        yield* requireAdmin(viewer)
        const problem = yield* teamCredential(
          viewer,
          request.secret_name,
          request.auth_mode,
          request.signature_scheme,
          (problem) => ({ _tag: "Unsuitable" as const, problem })
        ).pipe(
          Effect.as<string | undefined>(undefined),
          Effect.catchTag("Unsuitable", (unsuitable) => Effect.succeed(unsuitable.problem))
        )
        return new CheckWebhookSecretResponse({
          secret_name: request.secret_name,
          suitable: problem === undefined,
          ...(problem === undefined ? {} : { problem })
        })
      },
      storageUnavailable
    )

    /** A page of a webhook's delivery log, newest first. */
    const deliveries = Effect.fn("Webhooks.deliveries")(
      function* (viewer: Viewer, uid: WebhookUid, query: DeliveriesQuery = {}) {
        const limit = yield* parseLimit(query.limit)
        const before = yield* parseCursor(uid, query.cursor)
        yield* requireWebhook(viewer, uid)
        const page = yield* store.deliveries(uid, limit, before)
        const counts = yield* store.deliveryCounts(uid)
        const next = page.next
        return new ListDeliveriesResponse({
          deliveries: page.deliveries,
          counts,
          page_info: next === null
            ? { has_next_page: false }
            : {
              has_next_page: true,
              next_cursor: encodeKeysetCursor(
                { key: DateTime.toEpochMillis(next.received_at), id: next.delivery_id },
                deliveriesFingerprint(uid)
              )
            }
        })
      },
      storageUnavailable
    )

    /** One logged delivery of a webhook of the viewer's team (with its payload when ACCEPTED). */
    const delivery = Effect.fn("Webhooks.delivery")(
      function* (viewer: Viewer, uid: WebhookUid, deliveryId: DeliveryId) {
        yield* requireWebhook(viewer, uid)
        const found = yield* store.delivery(uid, deliveryId)
        if (Option.isNone(found)) return yield* ResourceNotFound.of("delivery", deliveryId)
        return found.value
      },
      storageUnavailable
    )

    return { create, list, get, patch, remove, rotateSecret, checkSecret, deliveries, delivery } as const
  })
}) {}
