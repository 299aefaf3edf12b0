/**
 * Every storage port of @agent-runs/core in memory, plus `RawStorage`: what the SQL adapters do,
 * without a database, for tests. Each build of the layer makes a fresh, empty store set: one
 * shared state (`MemoryState.ts`), a random key that seals its secrets, and its own wake-ups.
 * Nothing waits on a clock, so it runs as well on the TestClock.
 */
import { Context, Effect, Layer } from "effect"
import { AuditLog } from "../../src/ports/AuditLog.js"
import { AutomationStore } from "../../src/ports/AutomationStore.js"
import { EnvironmentStore } from "../../src/ports/EnvironmentStore.js"
import { IdempotencyStore } from "../../src/ports/IdempotencyStore.js"
import { IdentityStore } from "../../src/ports/IdentityStore.js"
import { OutboundWebhookStore } from "../../src/ports/OutboundWebhookStore.js"
import { RetentionStore } from "../../src/ports/RetentionStore.js"
import { RunStore } from "../../src/ports/RunStore.js"
import { ScheduleStore } from "../../src/ports/ScheduleStore.js"
import { SecretStore } from "../../src/ports/SecretStore.js"
import { WebhookStore } from "../../src/ports/WebhookStore.js"
import { WorkerStore } from "../../src/ports/WorkerStore.js"
import { RawStorage, type Stores } from "../Stores.js"
import { makeMemoryAuditLog } from "./MemoryAuditLog.js"
import { makeMemoryAutomationStore } from "./MemoryAutomationStore.js"
import { makeSealer } from "./MemoryCrypto.js"
import { makeMemoryEnvironmentStore } from "./MemoryEnvironmentStore.js"
import { makeMemoryIdempotencyStore } from "./MemoryIdempotencyStore.js"
import { makeMemoryIdentityStore } from "./MemoryIdentityStore.js"
import { makeMemoryOutboundWebhookStore } from "./MemoryOutboundWebhookStore.js"
import { makeMemoryRawStorage } from "./MemoryRawStorage.js"
import { makeMemoryRetentionStore } from "./MemoryRetentionStore.js"
import { makeMemoryRunStore } from "./MemoryRunStore.js"
import { makeMemoryScheduleStore } from "./MemoryScheduleStore.js"
import { makeMemorySecretStore } from "./MemorySecretStore.js"
import { makeMemoryState } from "./MemoryState.js"
import { makeWakeups } from "./MemoryWakeups.js"
import { makeMemoryWebhookStore } from "./MemoryWebhookStore.js"
import { makeMemoryWorkerStore } from "./MemoryWorkerStore.js"

/** Every store and `RawStorage`, fresh and empty at each build. */
export const memoryStorage: Layer.Layer<Stores | RawStorage> = Layer.scopedContext(
  Effect.gen(function* () {
    const state = makeMemoryState()
    const sealer = yield* Effect.orDie(makeSealer)
    const wakeups = yield* makeWakeups
    return Context.empty().pipe(
      Context.add(RunStore, makeMemoryRunStore(state, wakeups)),
      Context.add(ScheduleStore, makeMemoryScheduleStore(state)),
      Context.add(EnvironmentStore, makeMemoryEnvironmentStore(state)),
      Context.add(WebhookStore, makeMemoryWebhookStore(state, sealer)),
      Context.add(AutomationStore, makeMemoryAutomationStore(state)),
      Context.add(SecretStore, makeMemorySecretStore(state, sealer)),
      Context.add(IdentityStore, makeMemoryIdentityStore(state)),
      Context.add(WorkerStore, makeMemoryWorkerStore(state)),
      Context.add(AuditLog, makeMemoryAuditLog(state)),
      Context.add(IdempotencyStore, makeMemoryIdempotencyStore(state, sealer)),
      Context.add(OutboundWebhookStore, makeMemoryOutboundWebhookStore(state, sealer)),
      Context.add(RetentionStore, makeMemoryRetentionStore(state)),
      Context.add(RawStorage, makeMemoryRawStorage(state))
    )
  })
)
