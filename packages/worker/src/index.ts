/** @agent-runs/worker: the self-hosted worker (docs/workers.md). */
export * as RemoteHost from "./RemoteHost.js"
export * as WorkerDaemon from "./WorkerDaemon.js"
