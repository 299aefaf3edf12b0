/** `npm start`: serves Agent Runs with the configuration of the environment (see Config.ts). */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { ServerConfig } from "./Config.js"
import { ServerLive } from "./Server.js"

Effect.flatMap(ServerConfig, (config) => Layer.launch(ServerLive(config))).pipe(NodeRuntime.runMain)
