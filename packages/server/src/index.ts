/** @agent-runs/server: Agent Runs composed into one service, and the bundled server configured by environment variables. */
export { ServerConfig } from "./Config.js"
export type { Database, ExecutionConfig, IngressConfig, SchedulingConfig } from "./Config.js"
export * as DefinitionsDirectory from "./DefinitionsDirectory.js"
export { DefinitionsDirectoryError } from "./DefinitionsDirectory.js"
export { LoggingLive } from "./Logging.js"
export { ServerLive } from "./Server.js"
