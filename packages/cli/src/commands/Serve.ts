/**
 * `agent-runs serve`: the bundled server (serve/Server.ts) with the configuration of the
 * environment (serve/Config.ts, docs/reference/configuration.md), until SIGINT/SIGTERM. What
 * `npm start` runs. The server's modules (storage, executors, agent CLIs) are loaded only by this
 * command, so that the other commands start quickly.
 */
import { Command } from "@effect/cli"
import { Effect, Layer } from "effect"

const serve = Effect.gen(function*() {
  const [{ ServerConfig }, { LoggingLive }, { ServerLive }] = yield* Effect.promise(() =>
    Promise.all([import("../serve/Config.js"), import("../serve/Logging.js"), import("../serve/Server.js")])
  )
  const config = yield* ServerConfig
  return yield* Layer.launch(ServerLive(config)).pipe(Effect.provide(LoggingLive(config)))
})

export const serveCommand = Command.make("serve", {}, () => serve).pipe(
  Command.withDescription(
    "Serve Agent Runs (API, webhooks, execution, scheduler) with the configuration of the environment: PORT, HOST, " +
      "AGENT_RUNS_DATA_DIR, AGENT_RUNS_DATABASE_URL and the other AGENT_RUNS_* variables."
  )
)
