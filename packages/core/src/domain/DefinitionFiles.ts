/** Definitions as code (Definitions.ts): the files, their errors, and the definitions they hold. */
import { Data } from "effect"
import type { JsonObject } from "./Common.js"
import type { GitHubAuth } from "./GitHub.js"
import type { WebhookUid } from "./Ids.js"
import type { OutboundEventType, OutboundFilters } from "./OutboundWebhook.js"
import type { AgentConfig } from "./Run.js"
import type { SecretName } from "./Secret.js"
import type { AuthMode, SignatureScheme } from "./Webhook.js"


// ---------------------------------------------------------------------------------------------
// Files and errors
// ---------------------------------------------------------------------------------------------

/** A definition file, already read: `path` relative to the definitions directory. */
export interface DefinitionFile {
  readonly path: string
  readonly text: string
}

/** The kinds of named definitions, and the directory each lives in. */
export const DEFINITION_DIRECTORIES = ["webhooks", "automations", "outbound-webhooks"] as const
export type DefinitionKind = (typeof DEFINITION_DIRECTORIES)[number]

/** The extension of definition files. */
export const DEFINITION_EXTENSION = ".yaml"

/** The file, at the directory's root, of the team's GitHub connection. */
export const GITHUB_FILE = "github.yaml"

/** What a definition file's path says it holds: a named webhook or automation, or the GitHub connection. */
export type DefinitionPlace =
  | { readonly kind: DefinitionKind; readonly name: string }
  | { readonly kind: "github" }

/**
 * What is wrong with a definition: the file, the key (a path such as `trigger.filter.payload`;
 * empty for the file as a whole), and the problem.
 */
export class DefinitionError extends Data.Class<{
  readonly path: string
  readonly key: string
  readonly problem: string
}> {
  /** `webhooks/github.yaml: signatureScheme: is required when authMode is signature` */
  get message(): string {
    return this.key === "" ? `${this.path}: ${this.problem}` : `${this.path}: ${this.key}: ${this.problem}`
  }
}

// ---------------------------------------------------------------------------------------------
// Definitions
// ---------------------------------------------------------------------------------------------

/** A webhook as a file defines it. */
export interface WebhookDefinition {
  readonly path: string
  readonly name: string
  readonly authMode: AuthMode
  readonly signatureScheme: SignatureScheme | null
  readonly secretName: SecretName
  readonly deliveryIdHeader: string | null
  readonly enabled: boolean
}

/** An automation as a file defines it (the trigger is always `webhook` / `received`). */
export interface AutomationDefinition {
  readonly path: string
  readonly name: string
  readonly prompt: string
  readonly enabled: boolean
  /** Webhook uids, as written. */
  readonly webhookIds: ReadonlyArray<WebhookUid>
  /** Webhook names, resolved to uids when applied. */
  readonly webhookNames: ReadonlyArray<string>
  /** The payload filter as written (JSON), or null for none. */
  readonly payload: JsonObject | null
  /** The agent configuration in its API form (snake_case keys). */
  readonly agentConfig: AgentConfig
}

/** An outbound webhook as a file defines it (in the API's form). */
export interface OutboundWebhookDefinition {
  readonly path: string
  readonly name: string
  readonly url: string
  readonly events: ReadonlyArray<OutboundEventType>
  readonly filters: OutboundFilters
  readonly description: string
  readonly enabled: boolean
  /** The team secret holding its Standard Webhooks signing secret. */
  readonly secretName: SecretName
}

/** The team's GitHub connection as `github.yaml` defines it (in the API's form). */
export interface GitHubDefinition {
  readonly path: string
  /** The host's base URL, without a trailing slash. */
  readonly baseUrl: string
  readonly auth: GitHubAuth
}

/** What `parse` found: the valid definitions, and the errors of the others. */
export interface Parsed {
  /** The GitHub connection, or null when there is no (valid) `github.yaml`. */
  readonly github: GitHubDefinition | null
  readonly webhooks: ReadonlyArray<WebhookDefinition>
  readonly automations: ReadonlyArray<AutomationDefinition>
  readonly outboundWebhooks: ReadonlyArray<OutboundWebhookDefinition>
  /** Names of webhook files that have errors (automations may name them without a second error). */
  readonly invalidWebhookNames: ReadonlyArray<string>
  readonly errors: ReadonlyArray<DefinitionError>
}

/** The keys of a webhook file. */
export const WEBHOOK_KEYS = ["authMode", "signatureScheme", "secretName", "deliveryIdHeader", "enabled"] as const
/** The keys of an automation file. */
export const AUTOMATION_KEYS = ["prompt", "enabled", "trigger", "agentConfig"] as const
export const TRIGGER_KEYS = ["provider", "event", "filter"] as const
export const FILTER_KEYS = ["webhookIds", "webhookNames", "payload"] as const
/** The keys of an outbound webhook file. */
export const OUTBOUND_KEYS = ["url", "events", "filters", "description", "enabled", "secretName"] as const
/** The keys of its `filters`. */
export const OUTBOUND_FILTER_KEYS = ["scheduleIds", "environmentIds", "automationIds"] as const
/** The keys of `github.yaml`. */
export const GITHUB_KEYS = ["baseUrl", "auth"] as const
/** The keys of its `auth`, by `type`. */
export const GITHUB_AUTH_KEYS = {
  token: ["type", "tokenSecret"],
  app: ["type", "appId", "installationId", "privateKeySecret"]
} as const

/** Reports a problem of one key of the file being read. */
export type Report = (key: string, problem: string) => void
