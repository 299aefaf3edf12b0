/**
 * @agent-runs/core/testing: the storage conformance suite that every storage adapter runs
 * unchanged. Call `storageConformance(name, layer)` inside a vitest file; the layer provides every
 * store (one database for the whole suite; tests isolate themselves by team) and `RawStorage`
 * (the adapter's stored bytes, so the suite can check that secrets are encrypted at rest).
 */
import { describe } from "@effect/vitest"
import type { Layer } from "effect"
import { auditLogConformance } from "./AuditLogConformance.js"
import { idempotencyConformance } from "./IdempotencyConformance.js"
import { catalogConformance } from "./CatalogConformance.js"
import { outboundWebhookConformance } from "./OutboundWebhookConformance.js"
import { retentionConformance } from "./RetentionConformance.js"
import { runStoreConformance } from "./RunStoreConformance.js"
import type { RawStorage, Stores } from "./Stores.js"
import { workerStoreConformance } from "./WorkerStoreConformance.js"

export type { Stores } from "./Stores.js"
export { RawStorage } from "./Stores.js"
export { creationEvents, makeRun, type RunFacts, uid, uuid } from "./RunStoreConformance.js"
export { makeDelivery, makeWebhook } from "./CatalogConformance.js"

/** Registers the whole suite against one adapter. */
export const storageConformance = <E>(name: string, layer: Layer.Layer<Stores | RawStorage, E>): void => {
  describe(`storage conformance (${name})`, () => {
    runStoreConformance(layer)
    catalogConformance(layer)
    workerStoreConformance(layer)
    auditLogConformance(layer)
    idempotencyConformance(layer)
    outboundWebhookConformance(layer)
    retentionConformance(layer)
  })
}
export { auditLogTransactions } from "./AuditLogConformance.js"
export { keyRotationSuite } from "./KeyRotationSuite.js"
export { endpoint as outboundEndpoint } from "./OutboundWebhookConformance.js"
export { automationsServiceSuite } from "./AutomationsServiceSuite.js"
export { conversationsServiceSuite } from "./ConversationsServiceSuite.js"
export { followupsServiceSuite } from "./FollowupsServiceSuite.js"
export { identitiesServiceSuite } from "./IdentitiesServiceSuite.js"
export { identityLifecycleSuite } from "./IdentityLifecycleSuite.js"
export { ingressServiceSuite } from "./IngressServiceSuite.js"
export { runEventsServiceSuite } from "./RunEventsServiceSuite.js"
export { runsServiceSuite } from "./RunsServiceSuite.js"
export { schedulerServiceSuite } from "./SchedulerServiceSuite.js"
export { secretsServiceSuite } from "./SecretsServiceSuite.js"
export { webhooksServiceSuite } from "./WebhooksServiceSuite.js"
export { workersServiceSuite } from "./WorkersServiceSuite.js"
export { dispatcherSuite } from "./DispatcherSuite.js"
export { claimWakeupSuite } from "./ClaimWakeupSuite.js"
export { fairShareSuite } from "./FairShareSuite.js"
export { type CacheReplicas, tokenCacheSuite } from "./TokenCacheSuite.js"
export { webhookCacheSuite } from "./WebhookCacheSuite.js"
export { type AgedStore, runDocShapeSuite } from "./RunDocShapeSuite.js"
export { engineLayer, fakeRunTokens } from "./Engine.js"
export { scriptedExecutor } from "./ScriptedExecutor.js"
export { type FakeModelLike, harnessSuite, type HarnessSuiteOptions } from "./HarnessSuite.js"
export { continuationSuite } from "./ContinuationSuite.js"
export {
  createTestRepositories,
  executorConformance,
  type ExecutorConformanceOptions,
  OTHER_TEAM,
  sandboxSpec,
  TEST_REPOSITORIES,
  TEST_TEAM,
  writeRepository
} from "./ExecutorConformance.js"
export { memoryHost, type MemoryRun, planFor } from "./MemoryHost.js"
export { memoryStorage } from "./memory/MemoryStorage.js"
export { decodeLines, deepArray, deepObject, DEPTH, DEPTHS, json, resultOf, validEvent } from "./DecoderChecks.js"
