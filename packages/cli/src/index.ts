/** @agent-runs/cli: the `agent-runs` command line. */
export * as Cli from "./Cli.js"
export * as HttpTarget from "./HttpTarget.js"
