/**
 * `agent-runs serve`: the bundled server (serve/Server.ts) with the configuration of the
 * environment (serve/Config.ts, docs/reference/configuration.md), until SIGINT/SIGTERM. What
 * `npm start` runs. The server's modules (storage, executors, agent CLIs) are loaded only by this
 * command, so that the other commands start quickly.
 */
import { Command } from "@effect/cli"
import { Effect } from "effect"

// A failed start has printed its one line (serve/Startup.ts) and exits 1.
const serve = Effect.flatMap(Effect.promise(() => import("../serve/Startup.js")), (startup) => startup.serve)

export const serveCommand = Command.make("serve", {}, () => serve).pipe(
  Command.withDescription(
    "Serve Agent Runs (API, webhooks, execution, scheduler) with the configuration of the environment: PORT, HOST, " +
      "AGENT_RUNS_DATA_DIR, AGENT_RUNS_DATABASE_URL and the other AGENT_RUNS_* variables."
  )
)
