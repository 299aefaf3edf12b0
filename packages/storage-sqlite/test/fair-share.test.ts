import { fairShareSuite } from "@agent-runs/core/testing"
import { Effect, Layer } from "effect"
import { storageLayer } from "./harness.js"

// One process: both "replicas" are the one store, on a fresh database.
fairShareSuite("sqlite", Effect.map(Layer.build(storageLayer), (stores) => [stores, stores] as const))
