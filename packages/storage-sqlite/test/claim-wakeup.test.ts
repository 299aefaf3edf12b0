import { claimWakeupSuite } from "@agent-runs/core/testing"
import { Effect, Layer } from "effect"
import { storageLayer } from "./harness.js"

// One process: the API and the claimer share the store.
claimWakeupSuite("sqlite", Effect.map(Layer.build(storageLayer), (stores) => [stores, stores] as const))
