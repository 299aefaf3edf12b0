import { fairShareSuite } from "@agent-runs/core/testing"
import { Effect, Layer, Redacted } from "effect"
import { PgStorage } from "../src/index.js"
import { freshDatabase, testKey } from "./harness.js"

// Two replicas: two pools on one fresh database, claiming in turns and at once.
fairShareSuite(
  "postgresql",
  Effect.gen(function* () {
    const { url } = yield* freshDatabase
    const replica = Layer.build(PgStorage.layer({ url: Redacted.make(url), secretKey: testKey(), maxConnections: 6 }))
    return [yield* replica, yield* replica] as const
  })
)
