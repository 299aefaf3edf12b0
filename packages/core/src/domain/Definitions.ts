/**
 * Definitions as code (docs/definitions.md): the team's GitHub connection as the file
 * `github.yaml`, webhooks as files `webhooks/<name>.yaml`, automations as files
 * `automations/<name>.yaml` and outbound webhooks as files `outbound-webhooks/<name>.yaml`, parsed (`parse`) and compared with what the team has (`plan`) into
 * the steps that make the team match the files. Pure: the files come already read, the team's
 * state already listed; DefinitionsApplier.ts runs the plan, for the server (through the core
 * services) and for the CLI (through the HTTP API). This module is the public face; the work is in
 * DefinitionFiles.ts (the files and the definitions they hold), DefinitionsYaml.ts (YAML to JSON),
 * DefinitionsValues.ts (keys and values), DefinitionsParse.ts (`parse`), DefinitionsGitHub.ts
 * (`github.yaml`, read and planned), DefinitionsOutbound.ts (outbound webhooks, read and planned), DefinitionsPlan.ts (`plan`) and DefinitionsOutcome.ts (what
 * applying did, in words).
 *
 * File formats (keys in camelCase; the name is the file's base name without `.yaml`):
 * - GitHub connection (`github.yaml`, at the root; no name): `baseUrl` (default
 *   `https://github.com`; a GitHub Enterprise Server's address otherwise) and `auth`, either
 *   `type: token` with `tokenSecret`, or `type: app` with `appId`, `installationId` and
 *   `privateKeySecret`: the request of `PUT /agent/github` in camelCase.
 * - Webhook: `authMode` (`token` | `url_token` | `signature`; default `token`), `signatureScheme`
 *   (required with, and only allowed with, `signature`), `secretName` (required: the team secret
 *   holding the credential), `deliveryIdHeader` (optional header name), `enabled` (default true).
 * - Automation: `prompt` (required), `enabled` (default true), `trigger` (required:
 *   `provider: webhook` and `event: received`, both optional since they are the only values, and
 *   `filter` with `webhookIds`, a list of webhook uids, and/or `webhookNames`, a list of webhook
 *   names, at least one webhook in all, plus an optional `payload` filter written as in the API),
 *   `agentConfig` (optional: the agent configuration of the API with its keys in camelCase,
 *   `modelId`, `environmentId`, `mcpServers` (each server's `serverId`), ...; the names of MCP
 *   servers, their `env` and `headers` and the payload filter's fields are data, kept as written).
 * - Outbound webhook: `url` and `events` (required), `filters` (`scheduleIds`, `environmentIds`,
 *   `automationIds`), `description` (default ""), `enabled` (default true), `secretName` (required:
 *   the team secret holding its Standard Webhooks signing secret): the create request in camelCase.
 *
 * Decisions:
 * - Definitions never carry secret values: `secretName` is required, and must name a team secret
 *   whose value suits the mode (checked with `Webhooks.credentialProblem`'s rules, by whoever
 *   supplies `plan`'s `secretProblem`). Nothing is generated, so applying twice rotates nothing.
 *   `github.yaml` names its secrets too (`tokenSecret`, `privateKeySecret`), which must exist
 *   (the same `secretProblem`, asked a `GitHubSecret` check); the host judges their values when
 *   the team is connected.
 * - `github.yaml` connects the team, or changes its connection, when `baseUrl` or `auth` differ
 *   from the team's connection, and does nothing when they are the same. It is applied first,
 *   through `PUT /agent/github` (`GitHubConnections.connect`): admins only, the operator's hosts
 *   only, the host's acceptance of the credential, audited. Those last checks need the write, so a
 *   refusal stops the apply before anything else is written. A directory without `github.yaml`
 *   leaves the connection alone (disconnect through the API).
 * - A file is the whole definition: an omitted key takes its default, and applying sets it (an
 *   omitted `enabled` enables a webhook disabled by hand; an omitted `agentConfig` is `{}`). A YAML
 *   `null` (`key:` with nothing after it) counts as omitted.
 * - Webhooks and automations are matched by name within the team. What the team has but the
 *   directory does not is left alone: nothing is ever deleted (delete through the API).
 * - `authMode`, `signatureScheme` and `secretName` of an existing webhook cannot change (its URL
 *   and senders depend on them): a file that changes one is an error; delete the webhook first.
 *   `enabled` and `deliveryIdHeader` are patched. A changed team secret value is not re-read by
 *   applying the same files; toggling `enabled` off and on (two applies) re-reads it.
 * - `webhookIds` are uids, as in an automation's trigger; `webhookNames` (an addition) names webhooks of the
 *   team or of the same directory, resolved to uids when applied, so that a directory can define
 *   a webhook and the automations it starts before the webhook's uid exists. The stored trigger
 *   holds uids only: `webhookIds` first, then the named ones, each kept once.
 * - Every error names the file and the key (`webhooks/github.yaml: signatureScheme: is required
 *   when authMode is signature`); nested keys as paths (`trigger.filter.webhookIds[0]`); YAML
 *   syntax errors by line and column. All errors of all files are reported together, and a plan
 *   exists only when there is none, so nothing is applied while any file is wrong.
 * - Outbound webhooks are matched by name too; an edited file patches what differs (the events as
 *   a set) and, for another `secretName`, rotates the endpoint to that secret's value (the old one
 *   signing for the default overlap). The same team secret's changed value is not re-read.
 * - Only `github.yaml` and files named `webhooks/<name>.yaml`, `automations/<name>.yaml` and
 *   `outbound-webhooks/<name>.yaml` are definitions; a name must not be blank nor start or end with whitespace (names are trimmed by
 *   the services).
 */
export {
  AUTOMATION_KEYS,
  type AutomationDefinition,
  DEFINITION_DIRECTORIES,
  DEFINITION_EXTENSION,
  DefinitionError,
  type DefinitionFile,
  type DefinitionKind,
  type DefinitionPlace,
  GITHUB_AUTH_KEYS,
  GITHUB_FILE,
  GITHUB_KEYS,
  type GitHubDefinition,
  OUTBOUND_KEYS,
  type OutboundWebhookDefinition,
  type Parsed,
  WEBHOOK_KEYS,
  type WebhookDefinition
} from "./DefinitionFiles.js"
export { classify, parse } from "./DefinitionsParse.js"
export { describeConnection, type GitHubStep } from "./DefinitionsGitHub.js"
export { outboundChecks, type OutboundProblems, type OutboundWebhookStep } from "./DefinitionsOutbound.js"
export {
  automationCreateRequest,
  automationUpdateRequest,
  type AutomationStep,
  changes,
  checkWebhookSecretRequest,
  type Current,
  type GitHubSecretCheck,
  plan,
  type Plan,
  type SecretCheck,
  secretCheckKey,
  secretChecks,
  type Step,
  steps,
  triggerOf,
  type WebhookRef,
  type WebhookSecretCheck,
  type WebhookStep
} from "./DefinitionsPlan.js"
export { describeOutcome, describePlanned, type Outcome, planned } from "./DefinitionsOutcome.js"
