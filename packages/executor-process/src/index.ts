/** @agent-runs/executor-process: the Executor port on local child processes. */
export * as ProcessExecutor from "./ProcessExecutor.js"
export * as LocalRepoSource from "./LocalRepoSource.js"
export * as ProcessIsolation from "./ProcessIsolation.js"
