/**
 * The automations application service (docs/webhooks.md): create,
 * list, get, replace (PUT) and delete a team's automations, and test a trigger's filter against
 * a stored delivery. Starting runs from deliveries belongs to the ingress, not here. HTTP status
 * codes belong to packages/http; this module fails with the tagged errors of `Errors.ts`.
 *
 * Decisions:
 * - Access: automations belong to a team (no User scope). Every member, viewers included, may
 *   list and get them and run test-filter (it changes nothing); only admins create, replace and
 *   delete (403). An automation of another team is a 404, checked before the role.
 * - `trigger.filter.webhook_ids` must name live webhooks of the caller's team: otherwise a 400
 *   naming `trigger.filter.webhook_ids[i]` (unknown, deleted and foreign alike). A repeated uid is
 *   kept once (first position). On replace, uids the automation already selects stay accepted
 *   even if their webhook was deleted since (such automations "stay visible but stop firing";
 *   editing one must not force dropping the uid).
 * - `trigger.filter.payload` is parsed with PayloadFilter: a malformed filter is a 400 naming the
 *   offending path under `trigger.filter.payload` (e.g. `trigger.filter.payload.action.in`). The
 *   filter is stored as given (not canonicalised), so reads show what was written.
 * - `agent_config.environment_id` must be an environment of the team (an admin sees them all),
 *   else 400 naming it; `agent_config.agent_identity_uid` must be a principal of the team, else
 *   400 naming it. The runs an automation starts are checked again when they are created.
 * - Names are trimmed and unique within the team (409 otherwise): definition files
 *   (`automations/<name>.yaml`) are keyed by name. Checked by reading then writing.
 * - Validation order: 404 (replace/delete of an unknown automation), 403 (not an admin), 413 (a
 *   `prompt` or `agent_config.base_prompt` over the quota, Quotas.ts), 400 (webhooks, filter,
 *   references), 409 (name). Nothing is stored when a request is refused.
 * - PUT replaces every field but `agent_config`, which is kept when omitted; `created_at` stays,
 *   `updated_at` becomes now. Delete keeps the runs the automation started.
 * - test-filter finds the delivery in the logs of the live webhooks the trigger selects, then of
 *   the team's other live webhooks; not found in any (a deleted webhook's included): 404. The verdict is WOULD_TRIGGER when the
 *   delivery came from a selected webhook, was ACCEPTED and its payload matches the filter; every
 *   failed condition is a reason (each filter mismatch names its path under `payload`). A
 *   delivery that is not ACCEPTED has no stored payload and would start nothing: it is
 *   WOULD_NOT_TRIGGER with a reason naming its outcome (not an error, so an editor can test any
 *   logged delivery). A WOULD_TRIGGER verdict has one reason saying why. The verdict is about the
 *   trigger only: whether the automation or the webhook is enabled does not change it.
 * - test-filter also takes a pasted `payload` (any JSON value) instead of a `delivery_id`: exactly
 *   one of them (400 naming `payload` when both are sent, `delivery_id` when neither is). The
 *   payload is read as an accepted delivery of a selected webhook would be: only the filter
 *   decides (`PayloadFilter.explain`, what the ingress evaluates), its mismatches the reasons. It
 *   is bounded like a delivery's body: its JSON over the ingress's limit (`MAX_DELIVERY_BYTES`,
 *   256 KiB) is a 413 naming `payload`.
 * - A storage failure is a 503 `resource_unavailable` (retryable).
 */
import { Clock, DateTime, Effect, Either, Option } from "effect"
import { actAsProblem, canManageFactory, canSee, shaperOf } from "../domain/Access.js"
import { budgetEscapeProblem } from "../domain/BudgetAccess.js"
import type { Viewer } from "../domain/Access.js"
import {
  Automation,
  ListAutomationsResponse,
  TestFilterResult
} from "../domain/Automation.js"
import type {
  AutomationTrigger,
  CreateAutomationRequest,
  TestFilterRequest,
  UpdateAutomationRequest
} from "../domain/Automation.js"
import { Conflict, InvalidRequest, NotAuthorized, ResourceNotFound } from "../domain/Errors.js"
import { AutomationId, Ids } from "../domain/Ids.js"
import type { DeliveryId, WebhookUid } from "../domain/Ids.js"
import * as PayloadFilter from "../domain/PayloadFilter.js"
import { AutomationStore } from "../ports/AutomationStore.js"
import type { StoredAutomation } from "../ports/AutomationStore.js"
import { EnvironmentStore } from "../ports/EnvironmentStore.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { WebhookStore } from "../ports/WebhookStore.js"
import { checkPromptSizes, checkSize, Quotas } from "../domain/Quotas.js"
import { MAX_DELIVERY_BYTES } from "./Ingress.js"
import type { AgentConfig } from "../domain/Run.js"
import type { Delivery } from "../domain/Webhook.js"
import { activeMemberships } from "../domain/Identity.js"
import { storageUnavailable } from "../internal/Services.js"
import { Audit } from "./Audit.js"

/** Where payload filter paths start in validation errors. */
export const FILTER_FIELD = "trigger.filter.payload"

/** What a test-filter verdict is computed from. */
export interface FilterTest {
  readonly trigger: AutomationTrigger
  readonly webhook: WebhookUid
  readonly delivery: Delivery
}

const parsedFilter = (trigger: AutomationTrigger) =>
  trigger.filter.payload === undefined
    ? undefined
    : Either.getOrThrow(PayloadFilter.parse(trigger.filter.payload, { root: FILTER_FIELD }))

/** The verdict from the reasons found: any reason is a WOULD_NOT_TRIGGER; none, one reason why it would trigger. */
const verdictOf = (filter: PayloadFilter.PayloadFilter | undefined, reasons: ReadonlyArray<string>): TestFilterResult =>
  reasons.length > 0
    ? new TestFilterResult({ result: "WOULD_NOT_TRIGGER", reasons })
    : new TestFilterResult({
      result: "WOULD_TRIGGER",
      reasons: [
        filter === undefined
          ? "no payload filter: every accepted delivery of the selected webhooks starts a run"
          : "the payload matches every condition of the filter"
      ]
    })

/**
 * The verdict of a trigger on a pasted payload, read as the body of an accepted delivery of a
 * selected webhook: each filter mismatch as a reason, or one reason why it would trigger.
 */
export const payloadVerdict = (trigger: AutomationTrigger, payload: unknown): TestFilterResult => {
  const filter = parsedFilter(trigger)
  return verdictOf(filter, PayloadFilter.explain(filter, payload).reasons)
}

/**
 * The verdict of a trigger on a logged delivery of `webhook`: every failed condition as a reason
 * (not selected, not accepted, each filter mismatch), or one reason why it would trigger.
 */
export const verdict = ({ delivery, trigger, webhook }: FilterTest): TestFilterResult => {
  const reasons: Array<string> = []
  const filter = parsedFilter(trigger)
  if (!trigger.filter.webhook_ids.includes(webhook)) {
    reasons.push(
      `delivery ${delivery.delivery_id} was received by webhook ${webhook}, which trigger.filter.webhook_ids does not select`
    )
  }
  if (delivery.outcome !== "ACCEPTED") {
    reasons.push(
      `delivery ${delivery.delivery_id} was not accepted (${delivery.outcome}): only accepted deliveries start runs, ` +
        "and it has no stored payload to test"
    )
  } else {
    reasons.push(...PayloadFilter.explain(filter, delivery.payload).reasons)
  }
  return verdictOf(filter, reasons)
}

const ADMINS_ONLY = "only team admins can manage automations"

/** The automations service: a team's webhook automations, managed by its admins. */
/** An automation as an audited resource. */
const resource = (id: AutomationId | null) => ({ type: "automation", id })

export class Automations extends Effect.Service<Automations>()("@agent-runs/core/Automations", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function* () {
    const audit = yield* Audit
    const store = yield* AutomationStore
    const webhooks = yield* WebhookStore
    const environments = yield* EnvironmentStore
    const identities = yield* IdentityStore
    const ids = yield* Ids
    const quotas = yield* Quotas

    /** A team admin, and not the agent of a run with a budget (its automations' runs would not draw on it). */
    const requireAdmin = (viewer: Viewer) => {
      const escapes = budgetEscapeProblem(viewer, "manage automations")
      if (escapes !== undefined) return Effect.fail(new NotAuthorized({ message: escapes }))
      return canManageFactory(viewer) ? Effect.void : Effect.fail(new NotAuthorized({ message: ADMINS_ONLY }))
    }

    /** An automation of the viewer's team, else 404. */
    const requireAutomation = (viewer: Viewer, id: AutomationId) =>
      Effect.flatMap(
        store.get(id),
        Option.match({
          onNone: () => Effect.fail(ResourceNotFound.of("automation", id)),
          onSome: (a: StoredAutomation) =>
            a.team_uid === viewer.team_uid ? Effect.succeed(a) : Effect.fail(ResourceNotFound.of("automation", id))
        })
      )

    /** The trigger as stored: webhooks checked and deduplicated, the payload filter parsed. */
    const checkTrigger = (viewer: Viewer, trigger: AutomationTrigger, kept: ReadonlyArray<WebhookUid>) =>
      Effect.gen(function* () {
        const live = new Set<string>((yield* webhooks.list(viewer.team_uid)).map((w) => w.item.uid))
        const selected: Array<WebhookUid> = []
        for (const [i, uid] of trigger.filter.webhook_ids.entries()) {
          if (!live.has(uid) && !kept.includes(uid)) {
            return yield* InvalidRequest.forField(`trigger.filter.webhook_ids[${i}]`, `no webhook ${uid} in this team`)
          }
          if (!selected.includes(uid)) selected.push(uid)
        }
        if (trigger.filter.payload !== undefined) {
          yield* PayloadFilter.parseOrInvalidRequest(trigger.filter.payload, { root: FILTER_FIELD })
        }
        const checked: AutomationTrigger = {
          ...trigger,
          filter: { ...trigger.filter, webhook_ids: selected }
        }
        return checked
      })

    /** The agent configuration's references must be of the team. */
    const checkConfig = (viewer: Viewer, config: AgentConfig) =>
      Effect.gen(function* () {
        if (config.environment_id !== undefined) {
          const env = yield* environments.get(config.environment_id)
          const ok = Option.isSome(env) &&
            canSee(viewer, { team_uid: env.value.team_uid, creator_uid: env.value.creator_uid, scope: env.value.item.scope })
          if (!ok) {
            return yield* InvalidRequest.forField(
              "agent_config.environment_id",
              `no environment ${config.environment_id} in this team`
            )
          }
        }
        if (config.agent_identity_uid !== undefined) {
          const principal = yield* identities.getPrincipal(config.agent_identity_uid)
          if (Option.isNone(principal) || !activeMemberships(principal.value).some((m) => m.team_uid === viewer.team_uid)) {
            return yield* InvalidRequest.forField(
              "agent_config.agent_identity_uid",
              `no principal ${config.agent_identity_uid} in this team`
            )
          }
          const problem = actAsProblem(viewer, principal.value)
          if (problem !== undefined) return yield* new NotAuthorized({ message: `agent_config.agent_identity_uid: ${problem}` })
        }
      })

    const requireFreeName = (viewer: Viewer, name: string, except?: AutomationId) =>
      Effect.gen(function* () {
        const team = yield* store.list(viewer.team_uid)
        if (team.some((a) => a.item.name === name && a.item.id !== except)) {
          return yield* new Conflict({ message: `name: the team already has an automation named ${JSON.stringify(name)}` })
        }
      })

    /** Creates an automation (admins only). */
    const create = Effect.fn("Automations.create")(
      function* (viewer: Viewer, request: CreateAutomationRequest) {
        yield* requireAdmin(viewer)
        yield* checkPromptSizes(quotas, request.prompt, request.agent_config)
        const trigger = yield* checkTrigger(viewer, request.trigger, [])
        const agentConfig = request.agent_config ?? {}
        yield* checkConfig(viewer, agentConfig)
        const name = request.name.trim()
        yield* requireFreeName(viewer, name)
        const at = DateTime.unsafeMake(yield* Clock.currentTimeMillis)
        const item = new Automation({
          id: AutomationId.make(yield* ids.uid22),
          name,
          enabled: request.enabled,
          prompt: request.prompt,
          agent_config: agentConfig,
          trigger,
          created_at: at,
          updated_at: at
        })
        const stored = { item, team_uid: viewer.team_uid, creator_uid: viewer.principal_uid, editor: shaperOf(viewer) }
        yield* audit.recording(viewer, store.create(stored), () => ({ action: "automation.create", resource: resource(item.id) }))
        return item
      },
      storageUnavailable,
      audit.refusals("automation.create", () => resource(null))
    )

    /** The team's automations, by name. */
    const list = Effect.fn("Automations.list")(
      function* (viewer: Viewer) {
        const automations = yield* store.list(viewer.team_uid)
        return new ListAutomationsResponse({ automations: automations.map((a) => a.item) })
      },
      storageUnavailable
    )

    /** One automation of the viewer's team. */
    const get = Effect.fn("Automations.get")(
      function* (viewer: Viewer, id: AutomationId) {
        return (yield* requireAutomation(viewer, id)).item
      },
      storageUnavailable
    )

    /** Replaces an automation; `agent_config` is kept when omitted (admins only). */
    const update = Effect.fn("Automations.update")(
      function* (viewer: Viewer, id: AutomationId, request: UpdateAutomationRequest) {
        const current = yield* requireAutomation(viewer, id)
        yield* requireAdmin(viewer)
        yield* checkPromptSizes(quotas, request.prompt, request.agent_config)
        const trigger = yield* checkTrigger(viewer, request.trigger, current.item.trigger.filter.webhook_ids)
        const agentConfig = request.agent_config ?? current.item.agent_config
        yield* checkConfig(viewer, agentConfig)
        const name = request.name.trim()
        yield* requireFreeName(viewer, name, id)
        const item = new Automation({
          ...current.item,
          name,
          enabled: request.enabled,
          prompt: request.prompt,
          agent_config: agentConfig,
          trigger,
          updated_at: DateTime.unsafeMake(yield* Clock.currentTimeMillis)
        })
        const stored = { ...current, item, editor: shaperOf(viewer) }
        yield* audit.recording(viewer, store.update(stored), () => ({ action: "automation.update", resource: resource(id) }))
        return item
      },
      storageUnavailable,
      audit.refusals("automation.update", (id: AutomationId) => resource(id))
    )

    /** Deletes an automation; the runs it started stay (admins only). */
    const remove = Effect.fn("Automations.remove")(
      function* (viewer: Viewer, id: AutomationId) {
        yield* requireAutomation(viewer, id)
        yield* requireAdmin(viewer)
        const removal = Effect.filterOrFail(store.remove(id), (removed) => removed, () => ResourceNotFound.of("automation", id))
        yield* audit.recording(viewer, removal, () => ({ action: "automation.delete", resource: resource(id) }))
      },
      storageUnavailable,
      audit.refusals("automation.delete", (id: AutomationId) => resource(id))
    )

    /** Finds a delivery in the selected webhooks' logs, then in the team's other webhooks'. */
    const findDelivery = (viewer: Viewer, automation: StoredAutomation, deliveryId: DeliveryId) =>
      Effect.gen(function* () {
        // Only live webhooks: a deleted webhook's log may outlive it, but nothing can arrive there.
        const live = (yield* webhooks.list(viewer.team_uid)).map((w) => w.item.uid)
        const selected = automation.item.trigger.filter.webhook_ids.filter((uid) => live.includes(uid))
        const others = live.filter((uid) => !selected.includes(uid))
        for (const webhook of [...selected, ...others]) {
          const found = yield* webhooks.delivery(webhook, deliveryId)
          if (Option.isSome(found)) return { webhook, delivery: found.value }
        }
        return yield* ResourceNotFound.of("delivery", deliveryId)
      })

    /** Would this automation's trigger start a run for a stored delivery, or a pasted payload, and why (not)? */
    const testFilter = Effect.fn("Automations.testFilter")(
      function* (viewer: Viewer, id: AutomationId, request: TestFilterRequest) {
        const automation = yield* requireAutomation(viewer, id)
        if (request.delivery_id !== undefined && "payload" in request) {
          return yield* InvalidRequest.forField("payload", "send either delivery_id (a logged delivery) or payload, not both")
        }
        if ("payload" in request) {
          yield* checkSize("payload", JSON.stringify(request.payload), MAX_DELIVERY_BYTES)
          return payloadVerdict(automation.item.trigger, request.payload)
        }
        if (request.delivery_id === undefined) {
          return yield* InvalidRequest.forField("delivery_id", "is required: send delivery_id (a logged delivery) or payload (a body to test)")
        }
        const { delivery, webhook } = yield* findDelivery(viewer, automation, request.delivery_id)
        return verdict({ trigger: automation.item.trigger, webhook, delivery })
      },
      storageUnavailable
    )

    return { create, list, get, update, remove, testFilter } as const
  })
}) {}
