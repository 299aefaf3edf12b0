/** Key rotation on PostgreSQL (core's KeyRotationSuite): one database, opened under each ring in turn. */
import { keyRotationSuite } from "@agent-runs/core/testing"
import { describe } from "@effect/vitest"
import { Effect, Exit, Redacted, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { PgStorage } from "../src/index.js"
import { freshDatabase } from "./harness.js"

const scope = Effect.runSync(Scope.make())
let url = ""
beforeAll(async () => {
  url = (await Effect.runPromise(Scope.extend(freshDatabase, scope))).url
})
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

describe("key rotation (postgresql)", () => {
  keyRotationSuite((secretKey, otherSecretKeys) => PgStorage.layer({ url: Redacted.make(url), secretKey, otherSecretKeys }))
})
