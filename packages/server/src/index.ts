/** @agent-runs/server: Agent Runs composed into one service, served standalone or mounted into a host's app. */
export * as AgentRuns from "./AgentRuns.js"
export * as Listen from "./Listen.js"
export * as Mount from "./Mount.js"
export { mount } from "./Mount.js"
export type { Mounted, NodeHandler } from "./Mount.js"
