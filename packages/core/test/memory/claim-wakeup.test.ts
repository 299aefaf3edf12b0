import { Effect, Layer } from "effect"
import { claimWakeupSuite, memoryStorage } from "../../testing/index.js"

// One process: the API and the claimer share the store.
claimWakeupSuite("memory", Effect.map(Layer.build(memoryStorage), (stores) => [stores, stores] as const))
