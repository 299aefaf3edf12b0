/**
 * @agent-runs/api: the definition of the Agent Runs HTTP API, shared by the server, the typed
 * client and the web dashboard. Schemas and `HttpApi` groups only: no Node import, so it bundles
 * for a browser.
 */
export * as Api from "./Api.js"
export * as Idempotency from "./Idempotency.js"
export * as Models from "./Models.js"
export * as Problems from "./Problems.js"
export * as Security from "./Security.js"
export type * as Wire from "./Wire.js"
export * as AdminApi from "./endpoints/Admin.js"
export * as AgentsApi from "./endpoints/Agents.js"
export * as AuditApi from "./endpoints/Audit.js"
export * as AutomationsApi from "./endpoints/Automations.js"
export * as ConversationsApi from "./endpoints/Conversations.js"
export * as EnvironmentsApi from "./endpoints/Environments.js"
export * as GitHubApi from "./endpoints/GitHub.js"
export * as HarnessSupportApi from "./endpoints/HarnessSupport.js"
export * as IdentityApi from "./endpoints/Identity.js"
export * as PathParams from "./endpoints/Params.js"
export * as RunsApi from "./endpoints/Runs.js"
export * as SchedulesApi from "./endpoints/Schedules.js"
export * as SecretsApi from "./endpoints/Secrets.js"
export * as TeamApi from "./endpoints/Team.js"
export * as WebhooksApi from "./endpoints/Webhooks.js"
export * as WorkersApi from "./endpoints/Workers.js"
