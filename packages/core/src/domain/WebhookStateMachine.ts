/**
 * The lifecycle of a custom webhook (docs/webhooks.md) as a
 * pure function `transition(state, event)`.
 *
 * - A webhook is `enabled`, `disabled` or `deleted`, and has a secret version (1 at creation).
 * - Disable and Enable set the status; repeating the current one is accepted and changes nothing
 *   (a PATCH that resends `enabled` is not an error).
 * - Delete moves enabled or disabled to `deleted`, which is final: every event on a deleted
 *   webhook, Delete included, is rejected with `WebhookDeleted`, which the service answers as 404
 *   (a deleted webhook is as invisible as an unknown one).
 * - RotateSecret keeps the status (a disabled webhook may rotate too) and bumps the secret version:
 *   only the newest version authenticates, so the old secret stops at once, with no overlap.
 * - Only an enabled webhook accepts deliveries; senders of a disabled or deleted one get 404.
 * - No transition touches automations or the delivery log: automations selecting a disabled or
 *   deleted webhook stay (they stop firing), and the delivery history is kept.
 */
import { Data, Either, Schema } from "effect"
import { ResourceNotFound } from "./Errors.js"

export const WebhookStatus = Schema.Literal("enabled", "disabled", "deleted")
export type WebhookStatus = typeof WebhookStatus.Type

/** What the state machine tracks of a webhook: its status and current secret version. */
export const WebhookState = Schema.Struct({
  status: WebhookStatus,
  secretVersion: Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))
})
export type WebhookState = typeof WebhookState.Type

/** The secret version of a new webhook. */
export const INITIAL_SECRET_VERSION = 1

/** The state of a webhook just created (enabled unless created disabled). */
export const createdWebhookState = (enabled = true): WebhookState => ({
  status: enabled ? "enabled" : "disabled",
  secretVersion: INITIAL_SECRET_VERSION
})

/** What can happen to a webhook. */
export type WebhookEvent = Data.TaggedEnum<{
  Disable: Record<never, never>
  Enable: Record<never, never>
  Delete: Record<never, never>
  /** The service generates and stores the new secret under the version the transition names. */
  RotateSecret: Record<never, never>
}>
export const WebhookEvent = Data.taggedEnum<WebhookEvent>()
export type WebhookEventTag = WebhookEvent["_tag"]

/** One allowed move: from a status, on an event, to a status. */
export interface TransitionRule {
  readonly from: WebhookStatus
  readonly event: WebhookEventTag
  readonly to: WebhookStatus
}

/** Every allowed move; an event with no rule for the current status is rejected. */
export const WebhookTransitionTable: ReadonlyArray<TransitionRule> = [
  { from: "enabled", event: "Disable", to: "disabled" },
  { from: "disabled", event: "Disable", to: "disabled" },
  { from: "disabled", event: "Enable", to: "enabled" },
  { from: "enabled", event: "Enable", to: "enabled" },
  { from: "enabled", event: "Delete", to: "deleted" },
  { from: "disabled", event: "Delete", to: "deleted" },
  { from: "enabled", event: "RotateSecret", to: "enabled" },
  { from: "disabled", event: "RotateSecret", to: "disabled" }
]

/** What the service must do besides storing the new state. */
export type WebhookEffect = Data.TaggedEnum<{
  /** Senders get 404 from now on. */
  StopDeliveries: Record<never, never>
  /** Deliveries are accepted again. */
  ResumeDeliveries: Record<never, never>
  /** Generate a secret under `secretVersion`, show it once; `revokedVersion` stops authenticating. */
  IssueSecret: { readonly secretVersion: number; readonly revokedVersion: number }
}>
export const WebhookEffect = Data.taggedEnum<WebhookEffect>()

/** An accepted event: the states before and after, and the effects to carry out. */
export interface WebhookTransition {
  readonly from: WebhookState
  readonly to: WebhookState
  readonly event: WebhookEvent
  /** False when the event repeats the current status (nothing to store). */
  readonly changed: boolean
  readonly effects: ReadonlyArray<WebhookEffect>
}

/** The only rejection: the webhook is deleted. The service answers 404 (`toResourceNotFound`). */
export class WebhookDeleted extends Data.TaggedError("WebhookDeleted")<{
  readonly event: WebhookEventTag
}> {
  /** The 404 the service answers with, for the webhook `uid`. */
  toResourceNotFound(uid?: string): ResourceNotFound {
    return ResourceNotFound.of("webhook", uid)
  }
}

/** Whether senders' deliveries are accepted: only when enabled (otherwise 404). */
export const acceptsDeliveries = (state: WebhookState): boolean => state.status === "enabled"

/** Whether a credential of this secret version authenticates: only the newest, never once deleted. */
export const acceptsSecretVersion = (state: WebhookState, secretVersion: number): boolean =>
  state.status !== "deleted" && secretVersion === state.secretVersion

/** The rule for a status and event, if the move is allowed. */
export const findRule = (from: WebhookStatus, event: WebhookEventTag): TransitionRule | undefined =>
  WebhookTransitionTable.find((rule) => rule.from === from && rule.event === event)

/** Applies an event to a webhook: the transition, or `WebhookDeleted` when nothing may move. */
export const transition = (state: WebhookState, event: WebhookEvent): Either.Either<WebhookTransition, WebhookDeleted> => {
  const rule = findRule(state.status, event._tag)
  if (rule === undefined) return Either.left(new WebhookDeleted({ event: event._tag }))
  const rotates = event._tag === "RotateSecret"
  const to: WebhookState = {
    status: rule.to,
    secretVersion: rotates ? state.secretVersion + 1 : state.secretVersion
  }
  const effects: Array<WebhookEffect> = []
  const before = acceptsDeliveries(state)
  const after = acceptsDeliveries(to)
  if (before && !after) effects.push(WebhookEffect.StopDeliveries())
  if (!before && after) effects.push(WebhookEffect.ResumeDeliveries())
  if (rotates) {
    effects.push(WebhookEffect.IssueSecret({ secretVersion: to.secretVersion, revokedVersion: state.secretVersion }))
  }
  return Either.right({
    from: state,
    to,
    event,
    changed: to.status !== state.status || to.secretVersion !== state.secretVersion,
    effects
  })
}
