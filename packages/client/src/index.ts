/**
 * @agent-runs/client: a typed client of the Agent Runs HTTP API.
 *
 * - `createClient(options)`: the Promise client (runs, schedules, environments, webhooks,
 *   automations, secrets, agents, identity (`identity.me()`), admin), with error classes by status, async iteration over
 *   pages and over a run's live events.
 * - `AgentRunsClient`: the Effect client derived from the API definition (`HttpApiClient`).
 * - `Sse`: the Server-Sent Events parser both use.
 */
export * as AgentRunsClient from "./AgentRunsClient.js"
export * as Sse from "./Sse.js"
/** `followRun`'s failure on an event over the bound (`Sse.EventTooLarge`), by name: declarations inferred from `followRun` name it so. */
export { EventTooLarge } from "./Sse.js"
export * as Transport from "./Transport.js"
export * from "./Client.js"
export * from "./Errors.js"
