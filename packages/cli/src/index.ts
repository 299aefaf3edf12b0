/** @agent-runs/cli: the `agent-runs` command line. */
export * as Cli from "./Cli.js"
export * as HttpTarget from "./HttpTarget.js"
export { ServerConfig } from "./serve/Config.js"
export type { Database, ExecutionConfig, IngressConfig, SchedulingConfig } from "./serve/Config.js"
export { LoggingLive } from "./serve/Logging.js"
export { ServerLive } from "./serve/Server.js"
export { serve } from "./serve/Startup.js"
