/** @agent-runs/cli: the `agent-runs` command line, and the definitions directory reader it shares with the server. */
export * as Cli from "./Cli.js"
export * as DefinitionsDirectory from "./DefinitionsDirectory.js"
export * as HttpTarget from "./HttpTarget.js"
