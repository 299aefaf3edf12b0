/** Definitions as code (Definitions.ts): `plan`, the steps that make a team match the definitions. */
import { Either, Schema } from "effect"
import type { Automation } from "./Automation.js"
import type { GitHubConnection } from "./GitHub.js"
import { AutomationTrigger, CreateAutomationRequest, UpdateAutomationRequest } from "./Automation.js"
import type { WebhookUid } from "./Ids.js"
import { AgentConfig } from "./Run.js"
import type { SecretName } from "./Secret.js"
import type { Webhook , AuthMode, SignatureScheme } from "./Webhook.js"
import { CheckWebhookSecretRequest, CreateWebhookRequest, MAX_WEBHOOKS_PER_TEAM, PatchWebhookRequest } from "./Webhook.js"
import { DefinitionError } from "./DefinitionFiles.js"
import type { AutomationDefinition, OutboundWebhookDefinition, Parsed, Report, WebhookDefinition } from "./DefinitionFiles.js"
import { outboundByName, type OutboundProblems, type OutboundWebhookStep, planOutboundWebhook } from "./DefinitionsOutbound.js"
import { MAX_OUTBOUND_WEBHOOKS_PER_TEAM, type OutboundWebhook } from "./OutboundWebhook.js"
import { gitHubSecretOf, type GitHubStep, planGitHub } from "./DefinitionsGitHub.js"
import { TRIGGER_FILTER } from "./DefinitionsParse.js"
import { join } from "./DefinitionsValues.js"


// ---------------------------------------------------------------------------------------------
// plan
// ---------------------------------------------------------------------------------------------

/** What the team has now (its GitHub connection, live webhooks and automations, as listed). */
export interface Current {
  readonly github: GitHubConnection | null
  readonly webhooks: ReadonlyArray<Webhook>
  readonly automations: ReadonlyArray<Automation>
  readonly outboundWebhooks: ReadonlyArray<OutboundWebhook>
}

/** The team secret a webhook definition needs, and the mode its value must suit. */
export interface WebhookSecretCheck {
  readonly _tag: "WebhookSecret"
  readonly secretName: SecretName
  readonly authMode: AuthMode
  readonly signatureScheme: SignatureScheme | null
}

/** The team secret the GitHub connection names: it must exist (the host judges its value when connecting). */
export interface GitHubSecretCheck {
  readonly _tag: "GitHubSecret"
  readonly secretName: SecretName
}

/** A team secret a definition needs. */
export type SecretCheck = WebhookSecretCheck | GitHubSecretCheck

const webhookSecretCheck = (w: WebhookDefinition): WebhookSecretCheck =>
  ({ _tag: "WebhookSecret", secretName: w.secretName, authMode: w.authMode, signatureScheme: w.signatureScheme })

/** The server's check of a webhook's team secret (`POST /agent/webhooks/check-secret`). */
export const checkWebhookSecretRequest = (check: WebhookSecretCheck): CheckWebhookSecretRequest =>
  new CheckWebhookSecretRequest({
    secret_name: check.secretName,
    auth_mode: check.authMode,
    ...(check.signatureScheme === null ? {} : { signature_scheme: check.signatureScheme })
  })

const gitHubSecretCheck = (secretName: SecretName): GitHubSecretCheck => ({ _tag: "GitHubSecret", secretName })

/** A stable key of a secret check (the same secret for the same use is checked once). */
export const secretCheckKey = (check: SecretCheck): string =>
  check._tag === "GitHubSecret"
    ? `${check._tag}\u0000${check.secretName}`
    : `${check._tag}\u0000${check.secretName}\u0000${check.authMode}\u0000${check.signatureScheme ?? ""}`

/** The distinct secret checks the definitions need (every apply checks every one). */
export const secretChecks = (parsed: Pick<Parsed, "github" | "webhooks">): ReadonlyArray<SecretCheck> => {
  const checks = new Map<string, SecretCheck>()
  const all = [
    ...(parsed.github === null ? [] : [gitHubSecretCheck(gitHubSecretOf(parsed.github)[1])]),
    ...parsed.webhooks.map(webhookSecretCheck)
  ]
  for (const check of all) checks.set(secretCheckKey(check), check)
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

/**
 * What applying the files does, in order (`steps`): the GitHub connection first (the host may
 * still refuse the credential, the one check that needs the write itself), then webhooks (the
 * automations may select new ones), then automations, then outbound webhooks.
 */
export interface Plan {
  /** Null when there is no `github.yaml`: the connection is left alone. */
  readonly github: GitHubStep | null
  readonly webhooks: ReadonlyArray<WebhookStep>
  readonly automations: ReadonlyArray<AutomationStep>
  readonly outboundWebhooks: ReadonlyArray<OutboundWebhookStep>
}

/** One step of a plan. */
export type Step = GitHubStep | WebhookStep | AutomationStep | OutboundWebhookStep

/** The steps of a plan, in the order they are applied. */
export const steps = (plan: Plan): ReadonlyArray<Step> =>
  [...(plan.github === null ? [] : [plan.github]), ...plan.webhooks, ...plan.automations, ...plan.outboundWebhooks]

/** The steps of a plan that change something (none: applying changes nothing). */
export const changes = (plan: Plan): ReadonlyArray<Step> => steps(plan).filter((s) => !s._tag.startsWith("Keep"))

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

/** Reports a problem of a file's key. */
type Reporter = (path: string) => Report

/** What planning the files of one kind of named, secret-holding definition needs. */
interface NamedKind<D extends { readonly path: string; readonly name: string }, C, S> {
  readonly definitions: ReadonlyArray<D>
  /** What the team has, by name. */
  readonly existing: ReadonlyMap<string, C>
  /** How many the team has, and may have. */
  readonly live: number
  readonly limit: number
  /** What one is called in the limit's error. */
  readonly noun: string
  /** What the server found wrong with a definition's values (its secret, its URL), as [file key, problem]. */
  readonly problemsOf: (d: D) => ReadonlyArray<readonly [string, string]>
  readonly step: (d: D, current: C | undefined, report: Report) => S | undefined
}

/** The steps of one kind's files: each file's values checked, creations counted against the team's limit. */
const planNamed = <D extends { readonly path: string; readonly name: string }, C, S>(
  kind: NamedKind<D, C, S>,
  reporter: Reporter
): ReadonlyArray<S> => {
  const planned: Array<S> = []
  let live = kind.live
  for (const d of kind.definitions) {
    const report = reporter(d.path)
    const problems = kind.problemsOf(d)
    for (const [key, problem] of problems) report(key, problem)
    const current = kind.existing.get(d.name)
    const step = kind.step(d, current, report)
    if (step !== undefined && current === undefined && ++live > kind.limit) {
      report("", `would be the team's ${kind.noun} number ${live}; a team has at most ${kind.limit}`)
    } else if (step !== undefined && problems.length === 0) {
      planned.push(step)
    }
  }
  return planned
}

/** `[key, problem]` when there is a problem. */
const problemAt = (key: string, problem: string | undefined): ReadonlyArray<readonly [string, string]> =>
  problem === undefined ? [] : [[key, problem]]

const planWebhooks = (
  parsed: Parsed,
  current: Current,
  secretProblem: (check: SecretCheck) => string | undefined,
  reporter: Reporter
): ReadonlyArray<WebhookStep> =>
  planNamed({
    definitions: parsed.webhooks,
    existing: new Map(current.webhooks.map((w) => [w.name, w])),
    live: current.webhooks.length,
    limit: MAX_WEBHOOKS_PER_TEAM,
    noun: "webhook",
    problemsOf: (d) => problemAt("secretName", secretProblem(webhookSecretCheck(d))),
    step: planWebhook
  }, reporter)

const planAutomations = (parsed: Parsed, current: Current, reporter: Reporter): ReadonlyArray<AutomationStep> => {
  const team = new Map(current.webhooks.map((w) => [w.uid as string, w]))
  const byName = new Map<string, WebhookRef>(current.webhooks.map((w) => [w.name, { _tag: "Existing", uid: w.uid }]))
  for (const d of parsed.webhooks) {
    if (!byName.has(d.name)) byName.set(d.name, { _tag: "Planned", name: d.name })
  }
  const unknownNames = new Set(parsed.invalidWebhookNames)
  const automationsByName = new Map(current.automations.map((a) => [a.name, a]))
  const planned: Array<AutomationStep> = []
  for (const d of parsed.automations) {
    const step = planAutomation(d, automationsByName.get(d.name), team, byName, unknownNames, reporter(d.path))
    if (step !== undefined) planned.push(step)
  }
  return planned
}

const planOutboundWebhooks = (
  parsed: Parsed,
  current: Current,
  outboundProblems: (d: OutboundWebhookDefinition) => OutboundProblems,
  reporter: Reporter
): ReadonlyArray<OutboundWebhookStep> =>
  planNamed({
    definitions: parsed.outboundWebhooks,
    existing: outboundByName(current),
    live: current.outboundWebhooks.length,
    limit: MAX_OUTBOUND_WEBHOOKS_PER_TEAM,
    noun: "outbound webhook",
    problemsOf: (d) => {
      const problems = outboundProblems(d)
      return [...problemAt("url", problems.url), ...problemAt("secretName", problems.secretName)]
    },
    step: planOutboundWebhook
  }, reporter)

/**
 * Compares the definitions with what the team has. `secretProblem` says why a team secret does
 * not suit its use (undefined: it does), for each of `secretChecks(parsed)`; `outboundProblems`
 * what the server found wrong with an outbound webhook's new URL or team secret (`outboundChecks`). The result is the
 * plan, or every error, by file: the parse errors, and those found against the team's state
 * (unchangeable keys, unknown webhooks, secrets, the webhook and outbound webhook limits).
 */
export const plan = (
  parsed: Parsed,
  current: Current,
  secretProblem: (check: SecretCheck) => string | undefined,
  outboundProblems: (d: OutboundWebhookDefinition) => OutboundProblems = () => ({})
): Either.Either<Plan, ReadonlyArray<DefinitionError>> => {
  const errors: Array<DefinitionError> = [...parsed.errors]
  const reporter: Reporter = (path) => (key, problem) => errors.push(new DefinitionError({ path, key, problem }))
  const d = parsed.github
  const github = d === null
    ? null
    : planGitHub(d, current.github, (name) => secretProblem(gitHubSecretCheck(name)), reporter(d.path)) ?? null
  const webhooks = planWebhooks(parsed, current, secretProblem, reporter)
  const automations = planAutomations(parsed, current, reporter)
  const outboundWebhooks = planOutboundWebhooks(parsed, current, outboundProblems, reporter)
  if (errors.length === 0) return Either.right({ github, webhooks, automations, outboundWebhooks })
  // Grouped by file (a stable sort keeps each file's errors in the order found).
  return Either.left(errors.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)))
}
