/**
 * Definitions as code (Definitions.ts): what applying did, or (in a dry run) would do, to each
 * file, and the line that says it (`webhooks/ci.yaml: created webhook "ci" (uid)`,
 * `github.yaml: would connect GitHub (https://github.com, token secret GH_TOKEN)`).
 */
import { describeConnection, type GitHubStep } from "./DefinitionsGitHub.js"
import type { Plan, Step } from "./DefinitionsPlan.js"
import { steps } from "./DefinitionsPlan.js"

/** What applying did (or, in a dry run, would do) to one file's definition. */
export interface Outcome {
  readonly kind: "github" | "webhook" | "automation" | "outbound_webhook"
  readonly path: string
  /** The webhook's, automation's or outbound webhook's name; the connection in a few words for GitHub. */
  readonly name: string
  readonly action: "created" | "updated" | "unchanged"
  /** The uid or id of what the file defines (absent for a creation in a dry run, and for GitHub). */
  readonly id: string | undefined
  /** The file keys that changed (updates only). */
  readonly changed: ReadonlyArray<string>
}

const gitHub = (step: GitHubStep) =>
  ({ kind: "github" as const, path: step.definition.path, name: describeConnection(step.definition), id: undefined })

const named = (kind: Exclude<Outcome["kind"], "github">, definition: { readonly path: string; readonly name: string }) =>
  ({ kind, path: definition.path, name: definition.name })

/** The outcome of a step before it is applied. */
const outcomeOf = (step: Step): Outcome => {
  switch (step._tag) {
    case "ConnectGitHub":
      return { ...gitHub(step), action: step.current === null ? "created" : "updated", changed: step.changed }
    case "KeepGitHub":
      return { ...gitHub(step), action: "unchanged", changed: [] }
    case "CreateWebhook":
      return { ...named("webhook", step.definition), id: undefined, action: "created", changed: [] }
    case "UpdateWebhook":
      return { ...named("webhook", step.definition), id: step.current.uid, action: "updated", changed: step.changed }
    case "KeepWebhook":
      return { ...named("webhook", step.definition), id: step.current.uid, action: "unchanged", changed: [] }
    case "CreateAutomation":
      return { ...named("automation", step.definition), id: undefined, action: "created", changed: [] }
    case "UpdateAutomation":
      return { ...named("automation", step.definition), id: step.current.id, action: "updated", changed: step.changed }
    case "KeepAutomation":
      return { ...named("automation", step.definition), id: step.current.id, action: "unchanged", changed: [] }
    case "CreateOutboundWebhook":
      return { ...named("outbound_webhook", step.definition), id: undefined, action: "created", changed: [] }
    case "UpdateOutboundWebhook":
      return { ...named("outbound_webhook", step.definition), id: step.current.uid, action: "updated", changed: step.changed }
    case "KeepOutboundWebhook":
      return { ...named("outbound_webhook", step.definition), id: step.current.uid, action: "unchanged", changed: [] }
  }
}

/** The outcomes of a plan before anything is done (what a dry run reports), in the order of its steps. */
export const planned = (plan: Plan): ReadonlyArray<Outcome> => steps(plan).map(outcomeOf)

/** The words of each kind and action: what was done, and what a dry run would do. */
const WORDS: Record<Outcome["kind"], Record<Outcome["action"], { readonly done: string; readonly planned: string }>> = {
  github: {
    created: { done: "connected GitHub", planned: "would connect GitHub" },
    updated: { done: "reconnected GitHub", planned: "would reconnect GitHub" },
    unchanged: { done: "unchanged GitHub connection", planned: "unchanged GitHub connection" }
  },
  webhook: {
    created: { done: "created webhook", planned: "would create webhook" },
    updated: { done: "updated webhook", planned: "would update webhook" },
    unchanged: { done: "unchanged webhook", planned: "unchanged webhook" }
  },
  automation: {
    created: { done: "created automation", planned: "would create automation" },
    updated: { done: "updated automation", planned: "would update automation" },
    unchanged: { done: "unchanged automation", planned: "unchanged automation" }
  },
  outbound_webhook: {
    created: { done: "created outbound webhook", planned: "would create outbound webhook" },
    updated: { done: "updated outbound webhook", planned: "would update outbound webhook" },
    unchanged: { done: "unchanged outbound webhook", planned: "unchanged outbound webhook" }
  }
}

const line = (o: Outcome, words: string): string => {
  const what = o.kind === "github" ? `(${o.name})` : `${JSON.stringify(o.name)}${o.id === undefined ? "" : ` (${o.id})`}`
  const changed = o.changed.length === 0 ? "" : `: ${o.changed.join(", ")}`
  return `${o.path}: ${words} ${what}${changed}`
}

/** One line saying what was done to a file. */
export const describeOutcome = (o: Outcome): string => line(o, WORDS[o.kind][o.action].done)

/** One line saying what a dry run would do to a file. */
export const describePlanned = (o: Outcome): string => line(o, WORDS[o.kind][o.action].planned)
