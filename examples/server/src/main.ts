/** `npm start`: serves Agent Runs with the configuration of the environment (see @agent-runs/server's Config.ts). */
import { NodeRuntime } from "@effect/platform-node"
import { LoggingLive, ServerConfig, ServerLive } from "@agent-runs/server"
import { Effect, Layer } from "effect"

Effect.flatMap(ServerConfig, (config) => Layer.launch(ServerLive(config)).pipe(Effect.provide(LoggingLive(config)))).pipe(NodeRuntime.runMain)
