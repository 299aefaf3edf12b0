/**
 * What the memory stores hold: one state object per built layer, its tables as plain JS maps,
 * shared by the store factories that read or write them (`MemoryStorage.ts` makes one and passes
 * it to each). Each table has one writer, named beside it; readers of another store's table are
 * named too (the SQL adapter's joins across tables).
 *
 * Every store answers synchronously on this state (a step of an effect is atomic on one thread),
 * so a guarded write checks and writes in one step and never needs a lock. Secrets are held
 * sealed (`MemoryCrypto.ts`); nothing else is encoded: items are the immutable values the ports
 * take and give.
 */
import type { Shaper } from "../../src/domain/Access.js"
import type { AuditEntry } from "../../src/domain/Audit.js"
import type { ConversationPart } from "../../src/domain/ConversationLog.js"
import type {
  AuditEntryId,
  AutomationId,
  DeliveryId,
  EnvironmentUid,
  ExecutionId,
  PrincipalUid,
  RunId,
  ScheduleId,
  TeamUid,
  TokenId,
  WebhookUid
} from "../../src/domain/Ids.js"
import type { GitHubConnection } from "../../src/domain/GitHub.js"
import type { Principal, Team, TokenRecord } from "../../src/domain/Identity.js"
import type { RunState } from "../../src/domain/RunState.js"
import type { SecretName } from "../../src/domain/Secret.js"
import type { TimelineEvent } from "../../src/domain/Timeline.js"
import type { Delivery, DeliveryOutcome, Webhook } from "../../src/domain/Webhook.js"
import type { WebhookState } from "../../src/domain/WebhookStateMachine.js"
import type { StoredAutomation } from "../../src/ports/AutomationStore.js"
import type { StoredEnvironment } from "../../src/ports/EnvironmentStore.js"
import type { StoredRun } from "../../src/ports/RunStore.js"
import type { StoredSchedule } from "../../src/ports/ScheduleStore.js"
import { StorageError } from "../../src/ports/Storage.js"
import { makeMemoryOutbound, type MemoryOutbound } from "./MemoryOutboundWebhookStore.js"

/** A stored follow-up with its arrival number (ties of `received_at` keep arrival order). */
export interface InboxEntry {
  readonly id: number
  readonly message: string
  readonly received_at: number
}

/** One execution's conversation: its parts by `seq`. */
export interface MemoryExecution {
  readonly execution_id: ExecutionId
  readonly parts: Map<number, ConversationPart>
  /** Its rendering (RunStore.keepRendered), with the number of parts it was rendered from. */
  rendered?: { readonly json: string; readonly parts: number }
}

/** A run and what hangs off it (the SQL adapter's `runs` row and its child tables). */
export interface RunRecord {
  run: StoredRun
  /** The sequence of the last timeline event. */
  lastSequence: number
  readonly events: Array<TimelineEvent>
  readonly inbox: Array<InboxEntry>
  /** The run's executions in the order of their first parts. */
  readonly conversations: Array<MemoryExecution>
  /** Who shaped the run (RunStore.addShapers), each (principal, role) once. */
  readonly shapers: Array<Shaper>
  /** The follow-ups the run has received in its life, and the bytes of their messages. */
  readonly followupTotals: { count: number; bytes: number }
}

/** A webhook as held: its secret sealed under (uid, secret version). */
export interface SealedWebhook {
  readonly item: Webhook
  readonly team_uid: TeamUid
  readonly creator_uid: PrincipalUid
  readonly state: WebhookState
  readonly secret: Uint8Array | null
}

/** A webhook's delivery log, its de-duplication identities, and its counts per outcome. */
export interface DeliveryLog {
  readonly entries: Map<DeliveryId, Delivery>
  /** Identity → the delivery holding it (an identity lives as long as that delivery). */
  readonly identities: Map<string, DeliveryId>
  readonly counts: Map<DeliveryOutcome, { count: number; last_received_at: number }>
}

/** A team secret as held: sealed under (team, name). */
export interface SealedSecret {
  readonly value: Uint8Array
  readonly created_at: number
  readonly updated_at: number
}

/** A worker's latest heartbeat. */
export interface WorkerRow {
  readonly display_name: string
  readonly labels: ReadonlyArray<string>
  readonly capacity: number
  readonly version: string | null
  readonly protocol: number | null
  readonly connected_at: number
  readonly last_heartbeat_at: number
  readonly expires_at: number
}

/** The principal a worker id is bound to. */
export interface WorkerBinding {
  readonly principal_uid: PrincipalUid
  readonly bound_at: number
}

export interface MemoryState {
  // Written by RunStore; read by WorkerStore (a worker's active runs).
  readonly runs: Map<RunId, RunRecord>
  /** Every run id of a team (the list reads its team only). */
  readonly runsByTeam: Map<TeamUid, Set<RunId>>
  /** Every run id in a state (claims, leases, admission and counts read the live states only). */
  readonly runsByState: Map<RunState, Set<RunId>>
  /** The schedule tick ledger: schedule → scheduled time → the first run of the tick ("" for none). */
  readonly scheduleTicks: Map<ScheduleId, Map<number, RunId | "">>
  /** The arrival number of the last follow-up stored. */
  followupCounter: number

  // Written by WebhookStore and RunStore (an accepted delivery), through MemoryDeliveries.ts.
  readonly deliveryLogs: Map<WebhookUid, DeliveryLog>
  /** Delivery ids are unique across webhooks (the SQL adapter's primary key). */
  readonly deliveryOwners: Map<DeliveryId, WebhookUid>
  /** The payloads of accepted deliveries, with their team and time of receipt, for their retention. */
  readonly webhookPayloads: Map<DeliveryId, { readonly team_uid: TeamUid; readonly received_at: number }>

  // Written by RetentionStore (and the run removal it shares): blob keys queued for removal, with when.
  readonly blobRemovals: Map<string, number>

  // Written by their own stores.
  readonly schedules: Map<ScheduleId, StoredSchedule>
  readonly environments: Map<EnvironmentUid, StoredEnvironment>
  /** Who opened an environment's share link. */
  readonly environmentLinks: Map<EnvironmentUid, Set<PrincipalUid>>
  readonly webhooks: Map<WebhookUid, SealedWebhook>
  readonly automations: Map<AutomationId, StoredAutomation>
  readonly secrets: Map<TeamUid, Map<SecretName, SealedSecret>>
  readonly teams: Map<TeamUid, Team>
  readonly gitHubConnections: Map<TeamUid, GitHubConnection>
  readonly principals: Map<PrincipalUid, Principal>
  readonly tokens: Map<TokenId, TokenRecord>
  /** Token hash → token id (hashes are unique). */
  readonly tokenHashes: Map<string, TokenId>
  /** The provider subject each linked principal is linked to (sign-in). */
  readonly subjects: Map<PrincipalUid, string>

  // Written by WorkerStore; read by RunStore (runs waiting for absent workers).
  readonly workers: Map<TeamUid, Map<string, WorkerRow>>
  readonly workerBindings: Map<TeamUid, Map<string, WorkerBinding>>

  // Written by RunStore's claims: fair share's clock and each team's next start (FairShare.ts).
  readonly shares: { vtime: number; readonly next: Map<TeamUid, number> }

  // Written by AuditLog: the entries by id.
  readonly audit: Map<AuditEntryId, AuditEntry>

  // Written by IdempotencyStore: the keys by scope and key (`aad(scope, key)`).
  readonly idempotencyKeys: Map<string, IdempotencyRow>

  // Written by OutboundWebhookStore; RunStore appends to its outbox (the SQL adapter's triggers).
  readonly outbound: MemoryOutbound
}

/** A taken idempotency key: its request's fingerprint, when, and its answer sealed once it finished. */
export interface IdempotencyRow {
  readonly fingerprint: string
  readonly claim_id: string
  readonly created_at: number
  readonly answer?: { readonly status: number; readonly body: Uint8Array } | undefined
}

/** An empty state: a fresh store set. */
export const makeMemoryState = (): MemoryState => ({
  runs: new Map(),
  runsByTeam: new Map(),
  runsByState: new Map(),
  scheduleTicks: new Map(),
  followupCounter: 0,
  deliveryLogs: new Map(),
  deliveryOwners: new Map(),
  webhookPayloads: new Map(),
  blobRemovals: new Map(),
  schedules: new Map(),
  environments: new Map(),
  environmentLinks: new Map(),
  webhooks: new Map(),
  automations: new Map(),
  secrets: new Map(),
  teams: new Map(),
  gitHubConnections: new Map(),
  principals: new Map(),
  tokens: new Map(),
  tokenHashes: new Map(),
  subjects: new Map(),
  workers: new Map(),
  workerBindings: new Map(),
  shares: { vtime: 0, next: new Map() },
  audit: new Map(),
  idempotencyKeys: new Map(),
  outbound: makeMemoryOutbound()
})

/** The entry of `key` in a map of maps (or sets), created empty when missing. */
export const entryOf = <K, V>(map: Map<K, V>, key: K, empty: () => V): V => {
  const found = map.get(key)
  if (found !== undefined) return found
  const made = empty()
  map.set(key, made)
  return made
}

/** The states of a run that an execution holds (with a lease). */
export const HOLDING_STATES: ReadonlyArray<RunState> = ["CLAIMED", "INPROGRESS"]

/** The worker host a run is addressed to; none for runs of the service's own executors (an empty host counts as none). */
export const workerHostOf = (run: StoredRun): string | null => {
  const host = run.item.agent_config.worker_host
  return host === undefined || host === "" ? null : host
}

/** A storage failure of an operation (what the SQL adapter reports for a broken constraint). */
export const storageError = (operation: string, cause: unknown): StorageError => new StorageError({ operation, cause })
