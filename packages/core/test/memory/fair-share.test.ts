import { Effect, Layer } from "effect"
import { fairShareSuite, memoryStorage } from "../../testing/index.js"

// One process: both "replicas" are the one store.
fairShareSuite("memory", Effect.map(Layer.build(memoryStorage), (stores) => [stores, stores] as const))
