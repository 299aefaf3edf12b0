/** @agent-runs/worker: the self-hosted worker (docs/workers.md). */
export * as RemotePorts from "./RemotePorts.js"
export * as WorkerDaemon from "./WorkerDaemon.js"
