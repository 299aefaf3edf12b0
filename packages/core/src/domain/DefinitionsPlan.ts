/** Definitions as code (Definitions.ts): `plan`, the steps that make a team match the definitions. */
import { Either, Schema } from "effect"
import type { Automation } from "./Automation.js"
import { AutomationTrigger, CreateAutomationRequest, UpdateAutomationRequest } from "./Automation.js"
import type { WebhookUid } from "./Ids.js"
import { AgentConfig } from "./Run.js"
import type { SecretName } from "./Secret.js"
import type { Webhook , AuthMode, SignatureScheme } from "./Webhook.js"
import { CreateWebhookRequest, MAX_WEBHOOKS_PER_TEAM, PatchWebhookRequest } from "./Webhook.js"
import { DefinitionError } from "./DefinitionFiles.js"
import type { AutomationDefinition, Parsed, Report, WebhookDefinition } from "./DefinitionFiles.js"
import { join, TRIGGER_FILTER } from "./DefinitionsParse.js"


// ---------------------------------------------------------------------------------------------
// plan
// ---------------------------------------------------------------------------------------------

/** What the team has now (live webhooks and automations, as listed). */
export interface Current {
  readonly webhooks: ReadonlyArray<Webhook>
  readonly automations: ReadonlyArray<Automation>
}

/** The team secret a webhook definition needs, and the mode it must suit. */
export interface SecretCheck {
  readonly secretName: SecretName
  readonly authMode: AuthMode
  readonly signatureScheme: SignatureScheme | null
}

/** A stable key of a secret check (the same secret for the same mode is checked once). */
export const secretCheckKey = (check: SecretCheck): string =>
  `${check.secretName}\u0000${check.authMode}\u0000${check.signatureScheme ?? ""}`

/** The distinct secret checks the webhook definitions need (every apply checks every one). */
export const secretChecks = (parsed: Pick<Parsed, "webhooks">): ReadonlyArray<SecretCheck> => {
  const checks = new Map<string, SecretCheck>()
  for (const w of parsed.webhooks) {
    const check = { secretName: w.secretName, authMode: w.authMode, signatureScheme: w.signatureScheme }
    checks.set(secretCheckKey(check), check)
  }
  return [...checks.values()]
}

/** A webhook an automation selects: one the team has, or one this plan creates. */
export type WebhookRef =
  | { readonly _tag: "Existing"; readonly uid: WebhookUid }
  | { readonly _tag: "Planned"; readonly name: string }

/** One step of a plan for a webhook file. */
export type WebhookStep =
  | { readonly _tag: "CreateWebhook"; readonly definition: WebhookDefinition; readonly request: CreateWebhookRequest }
  | {
    readonly _tag: "UpdateWebhook"
    readonly definition: WebhookDefinition
    readonly current: Webhook
    readonly request: PatchWebhookRequest
    /** The file keys that change. */
    readonly changed: ReadonlyArray<string>
  }
  | { readonly _tag: "KeepWebhook"; readonly definition: WebhookDefinition; readonly current: Webhook }

/** One step of a plan for an automation file. */
export type AutomationStep =
  | { readonly _tag: "CreateAutomation"; readonly definition: AutomationDefinition; readonly webhooks: ReadonlyArray<WebhookRef> }
  | {
    readonly _tag: "UpdateAutomation"
    readonly definition: AutomationDefinition
    readonly current: Automation
    readonly webhooks: ReadonlyArray<WebhookRef>
    /** The file keys that change. */
    readonly changed: ReadonlyArray<string>
  }
  | { readonly _tag: "KeepAutomation"; readonly definition: AutomationDefinition; readonly current: Automation }

/** What applying the files does: webhook steps first (automations may select new webhooks). */
export interface Plan {
  readonly webhooks: ReadonlyArray<WebhookStep>
  readonly automations: ReadonlyArray<AutomationStep>
}

/** The steps of a plan that change something (none: applying changes nothing). */
export const changes = (plan: Plan): ReadonlyArray<WebhookStep | AutomationStep> =>
  [...plan.webhooks, ...plan.automations].filter((s) => !s._tag.startsWith("Keep"))

const webhookCreateRequest = (d: WebhookDefinition): CreateWebhookRequest =>
  new CreateWebhookRequest({
    name: d.name,
    auth_mode: d.authMode,
    ...(d.signatureScheme === null ? {} : { signature_scheme: d.signatureScheme }),
    secret_name: d.secretName,
    ...(d.deliveryIdHeader === null ? {} : { delivery_id_header: d.deliveryIdHeader }),
    enabled: d.enabled
  })

/** The trigger an automation definition stores, once its webhooks are uids. */
export const triggerOf = (d: AutomationDefinition, uids: ReadonlyArray<WebhookUid>): AutomationTrigger => ({
  provider: "webhook",
  event: "received",
  filter: { webhook_ids: [...new Set(uids)], ...(d.payload === null ? {} : { payload: d.payload }) }
})

/** The create request of an automation definition, once its webhooks are uids. */
export const automationCreateRequest = (d: AutomationDefinition, uids: ReadonlyArray<WebhookUid>): CreateAutomationRequest =>
  new CreateAutomationRequest({
    name: d.name,
    prompt: d.prompt,
    trigger: triggerOf(d, uids),
    agent_config: d.agentConfig,
    enabled: d.enabled
  })

/** The replace (PUT) request of an automation definition: every key, `agent_config` included. */
export const automationUpdateRequest = (d: AutomationDefinition, uids: ReadonlyArray<WebhookUid>): UpdateAutomationRequest =>
  new UpdateAutomationRequest({
    name: d.name,
    prompt: d.prompt,
    trigger: triggerOf(d, uids),
    agent_config: d.agentConfig,
    enabled: d.enabled
  })

const sameTrigger = Schema.equivalence(AutomationTrigger)
const sameAgentConfig = Schema.equivalence(AgentConfig)

const planWebhook = (
  d: WebhookDefinition,
  current: Webhook | undefined,
  report: Report
): WebhookStep | undefined => {
  if (current === undefined) return { _tag: "CreateWebhook", definition: d, request: webhookCreateRequest(d) }
  const fixed = "cannot change on an existing webhook (its URL and senders depend on it); delete the webhook " +
    `${current.uid} to recreate it, or give the file another name`
  let ok = true
  if (current.auth_mode !== d.authMode) {
    report("authMode", `is ${d.authMode} here but ${current.auth_mode} on the server: ${fixed}`)
    ok = false
  }
  if (current.signature_scheme !== d.signatureScheme && d.authMode === current.auth_mode) {
    report("signatureScheme", `is ${d.signatureScheme} here but ${current.signature_scheme} on the server: ${fixed}`)
    ok = false
  }
  if (current.secret_name !== d.secretName) {
    report(
      "secretName",
      current.secret_name === undefined
        ? `the webhook ${JSON.stringify(d.name)} (${current.uid}) has its own secret, not a team secret: ${fixed}`
        : `is ${d.secretName} here but ${current.secret_name} on the server: ${fixed}`
    )
    ok = false
  }
  if (!ok) return undefined
  const changed: Array<string> = []
  if (current.enabled !== d.enabled) changed.push("enabled")
  if ((current.delivery_id_header ?? null) !== d.deliveryIdHeader) changed.push("deliveryIdHeader")
  if (changed.length === 0) return { _tag: "KeepWebhook", definition: d, current }
  return {
    _tag: "UpdateWebhook",
    definition: d,
    current,
    changed,
    request: new PatchWebhookRequest({
      ...(changed.includes("enabled") ? { enabled: d.enabled } : {}),
      ...(changed.includes("deliveryIdHeader") ? { delivery_id_header: d.deliveryIdHeader } : {})
    })
  }
}

const planAutomation = (
  d: AutomationDefinition,
  current: Automation | undefined,
  team: ReadonlyMap<string, Webhook>,
  byName: ReadonlyMap<string, WebhookRef>,
  unknownNames: ReadonlySet<string>,
  report: Report
): AutomationStep | undefined => {
  const refs: Array<WebhookRef> = []
  let ok = true
  const kept = current?.trigger.filter.webhook_ids ?? []
  d.webhookIds.forEach((uid, i) => {
    // Like Automations.update: uids the automation already selects stay accepted (their webhook
    // may have been deleted since; such automations stay visible but stop firing).
    if (!team.has(uid) && !kept.includes(uid)) {
      report(join(`${TRIGGER_FILTER}.webhookIds`, i), `no webhook ${uid} in this team`)
      ok = false
    } else {
      refs.push({ _tag: "Existing", uid })
    }
  })
  d.webhookNames.forEach((name, i) => {
    const ref = byName.get(name)
    if (ref !== undefined) refs.push(ref)
    else if (!unknownNames.has(name)) {
      report(join(`${TRIGGER_FILTER}.webhookNames`, i), `no webhook named ${JSON.stringify(name)} in this team or in webhooks/`)
      ok = false
    } else ok = false
  })
  if (!ok) return undefined
  if (current === undefined) return { _tag: "CreateAutomation", definition: d, webhooks: refs }
  const changed: Array<string> = []
  if (current.prompt !== d.prompt) changed.push("prompt")
  if (current.enabled !== d.enabled) changed.push("enabled")
  const resolved = refs.every((r) => r._tag === "Existing")
  if (!resolved || !sameTrigger(current.trigger, triggerOf(d, refs.map((r) => (r as { uid: WebhookUid }).uid)))) {
    changed.push("trigger")
  }
  if (!sameAgentConfig(current.agent_config, d.agentConfig)) changed.push("agentConfig")
  if (changed.length === 0) return { _tag: "KeepAutomation", definition: d, current }
  return { _tag: "UpdateAutomation", definition: d, current, webhooks: refs, changed }
}

/**
 * Compares the definitions with what the team has. `secretProblem` says why a webhook's team
 * secret does not suit it (undefined: it does), for each of `secretChecks(parsed)`. The result is
 * the plan, or every error, by file: the parse errors, and those found against the team's
 * state (unchangeable keys, unknown webhooks, secrets, the webhook limit).
 */
export const plan = (
  parsed: Parsed,
  current: Current,
  secretProblem: (check: SecretCheck) => string | undefined
): Either.Either<Plan, ReadonlyArray<DefinitionError>> => {
  const errors: Array<DefinitionError> = [...parsed.errors]
  const reporter = (path: string): Report => (key, problem) => errors.push(new DefinitionError({ path, key, problem }))

  const teamByName = new Map(current.webhooks.map((w) => [w.name, w]))
  const webhookSteps: Array<WebhookStep> = []
  let live = current.webhooks.length
  for (const d of parsed.webhooks) {
    const report = reporter(d.path)
    const problem = secretProblem(d)
    if (problem !== undefined) report("secretName", problem)
    const step = planWebhook(d, teamByName.get(d.name), report)
    if (step?._tag === "CreateWebhook" && ++live > MAX_WEBHOOKS_PER_TEAM) {
      report("", `would be the team's webhook number ${live}; a team has at most ${MAX_WEBHOOKS_PER_TEAM}`)
    } else if (step !== undefined && problem === undefined) {
      webhookSteps.push(step)
    }
  }

  const team = new Map(current.webhooks.map((w) => [w.uid as string, w]))
  const byName = new Map<string, WebhookRef>(current.webhooks.map((w) => [w.name, { _tag: "Existing", uid: w.uid }]))
  for (const d of parsed.webhooks) {
    if (!teamByName.has(d.name)) byName.set(d.name, { _tag: "Planned", name: d.name })
  }
  const unknownNames = new Set(parsed.invalidWebhookNames)
  const automationsByName = new Map(current.automations.map((a) => [a.name, a]))
  const automationSteps: Array<AutomationStep> = []
  for (const d of parsed.automations) {
    const step = planAutomation(d, automationsByName.get(d.name), team, byName, unknownNames, reporter(d.path))
    if (step !== undefined) automationSteps.push(step)
  }
  if (errors.length === 0) return Either.right({ webhooks: webhookSteps, automations: automationSteps })
  // Grouped by file (a stable sort keeps each file's errors in the order found).
  return Either.left(errors.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)))
}
