/** `npm start`: serves Agent Runs with the configuration of the environment (see @agent-runs/cli's serve/Config.ts). */
import { NodeRuntime } from "@effect/platform-node"
import { LoggingLive, ServerConfig, ServerLive } from "@agent-runs/cli"
import { Effect, Layer } from "effect"

Effect.flatMap(ServerConfig, (config) => Layer.launch(ServerLive(config)).pipe(Effect.provide(LoggingLive(config)))).pipe(NodeRuntime.runMain)
