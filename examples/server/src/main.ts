/** `npm start`: serves Agent Runs with the configuration of the environment (see Config.ts). */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { ServerConfig } from "./Config.js"
import { LoggingLive } from "./Logging.js"
import { ServerLive } from "./Server.js"

Effect.flatMap(ServerConfig, (config) => Layer.launch(ServerLive(config)).pipe(Effect.provide(LoggingLive(config)))).pipe(NodeRuntime.runMain)
