/**
 * Agent Runs as one layer: every core service over the storage and blob store a host gives, the
 * HTTP surface as one app (`App`), and, when an executor is given, the execution engine over it;
 * the scheduler unless turned off. Each adapter is one `Layer`; the options say how they are tied
 * together. `serve` (Serve.ts) listens on an `HttpServer`; `Mount.ts` hands the app to a host's
 * `node:http`, Express, Fastify or Hono app under a prefix.
 *
 * Decisions:
 * - The prefix is the path of `publicUrl` (`http://host:3000/agents` mounts under `/agents`):
 *   every link the service writes (download URLs, the URL agents call, webhook URLs, the
 *   OpenAPI `servers`) starts with `publicUrl`, and requests whose path starts with the prefix are
 *   answered as if it were absent (a host that already strips it works too).
 * - Without `executor` the service executes nothing (an API-only replica, or runs executed only by
 *   self-hosted workers); runs wait QUEUED for a replica or worker that executes them, and the
 *   service still sweeps expired leases and admits teams' waiting runs.
 * - Readiness (`/readyz`): the service has started, storage answers, no background loop is
 *   failing, no recent storage failure, and the host's own `ready` check (if any) passes.
 * - Start-up: the layer provides the service not yet started (`Server.Startup`): until its host
 *   runs `Server.started`, the API answers 503 "the service is starting" and `/readyz` says so
 *   (docs/deployment.md). `Listen` and `mount` run it once everything is built (storage migrated,
 *   `adminToken` ensured); the bundled server once its bootstrap token and definitions are done.
 */
import { SqlClient } from "@effect/sql"
import type {
  BlobStore,
  Executor,
  SignInClaims} from "@agent-runs/core";
import {
  AuditRetention,
  DataRetention,
  KeyRotation,
  Idempotency,
  IdempotencyExpiry,
  AuditService,
  Automations,
  Conversations,
  Dispatcher,
  Environments,
  Followups,
  Health,
  Identities,
  Ids,
  LiveExecutions,
  Ingress,
  Principals,
  Quotas,
  RunEvents,
  RunExecutions,
  Runs,
  Scheduler,
  Schedules,
  Secrets,
  GitHubConnections,
  SignIn,
  Skills,
  TeamMembers,
  TeamRetention,
  RunDeletion,
  Erasure,
  Budgets,
  Overview,
  OutboundDispatch,
  OutboundLogRetention,
  OutboundWebhooks,
  Tokens,
  Webhooks,
  Workers
} from "@agent-runs/core"
import type { AgentHarnesses } from "@agent-runs/core/ports/AgentHarness"
import { DEFAULT_ALLOWED_HOSTS } from "@agent-runs/core/domain/GitHub"
import { GitHost, GitHubHosts, noGitHost } from "@agent-runs/core/ports/GitHost"
import type { IdentityStore } from "@agent-runs/core/ports/IdentityStore"
import type { SecretStore } from "@agent-runs/core/ports/SecretStore"
import { noRepositories, RepoSource } from "@agent-runs/core/ports/RepoSource"
import { Downloads, EventStreams, Ingress as HttpIngress, OutboundHttpSender, RelyingParty, RunTokens, Server, SignInRoutes } from "@agent-runs/http"
import type { StorageSql } from "@agent-runs/storage-sql"
import { defaultHarness } from "@agent-runs/scripted-agent/Location"
import { Effect, Layer, Option, Redacted } from "effect"

/** What the storage adapters (`SqliteStorage.layer`, `PgStorage.layer`) provide. */
export type Storage = Layer.Layer.Success<typeof StorageSql.layer> | SqlClient.SqlClient

/** How runs are executed, when an executor is given. */
export interface ExecutionOptions {
  /** The default agent command (a shell command) for environments naming none: the bundled scripted agent. */
  readonly harness?: string | undefined
  /** Runs executed at once by this service (16). */
  readonly concurrency?: number | undefined
  /** The execution lease, renewed every third of it (30 s). */
  readonly leaseSeconds?: number | undefined
  /** How long an agent has to stop after a cancel, then after SIGTERM (5 s). */
  readonly cancelGraceSeconds?: number | undefined
  /** The most a run's agents may print, in bytes (50 MiB). */
  readonly maxOutputBytes?: number | undefined
  /** The ceiling of a run's `config.max_runtime_seconds`, and its limit when it sets none (one day). */
  readonly maxRuntimeSeconds?: number | undefined
  /** How long a run waits for an absent self-hosted worker before it fails (600 s). */
  readonly workerWaitSeconds?: number | undefined
  /**
   * Stopping, how long running agents may finish before they are stopped and their runs handed
   * back to the queue at the same attempt (0: at once; the bundled server's default is 20 s;
   * docs/deployment.md#draining-on-deploy).
   */
  readonly drainSeconds?: number | undefined
  /**
   * Stopping, whether the agents still running after the grace period that can outlive this
   * process (ours, in Docker sandboxes) are left running for the next process of the service to
   * adopt, rather than stopped and their runs handed over (false; the bundled server's default is
   * true; docs/deployment.md#adopting-agents-across-a-restart).
   */
  readonly adoptAgents?: boolean | undefined
}

/** Sign-in with OpenID Connect: the provider, this service's client there, and how sessions behave. */
export interface SignInOptions {
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: Redacted.Redacted<string>
  /** The ID token claim listing the user's groups (none: groups are not read). */
  readonly groupsClaim?: string | undefined
  /** Which groups grant which role in which team (none: memberships are left to team admins). */
  readonly groupRoles?: ReadonlyArray<SignInClaims.GroupRole> | undefined
  /** How long a session lasts (12 hours). */
  readonly sessionHours?: number | undefined
  /** Whether an account no principal matches gets a new user (true). */
  readonly createUsers?: boolean | undefined
}

/** The sign-in routes and what they need, when sign-in is configured. */
const signInLayer = (options: SignInOptions, publicUrl: string, secretKey: Redacted.Redacted<Uint8Array>) =>
  SignInRoutes.signInRoutingLayer({ publicUrl, basePath: basePathOf(publicUrl), secretKey }, options.issuer).pipe(
    Layer.provide(RelyingParty.layer({
      issuer: options.issuer,
      clientId: options.clientId,
      clientSecret: options.clientSecret,
      groupsClaim: options.groupsClaim
    })),
    Layer.provideMerge(SignIn.SignIn.Default),
    Layer.provide(Layer.succeed(SignIn.SignInSettingsTag, {
      sessionHours: options.sessionHours ?? 12,
      createUsers: options.createUsers ?? true,
      groupRoles: options.groupRoles ?? []
    }))
  )

/** Outbound webhooks' settings. */
export interface OutboundWebhookOptions {
  /** Ranges endpoints may reach although not public (none: only public addresses). */
  readonly allowedRanges?: ReadonlyArray<string> | undefined
  /** The most one try may take (10 s). */
  readonly timeoutSeconds?: number | undefined
  /** How many days delivered and failed deliveries stay in the log (7). */
  readonly logDays?: number | undefined
  /** The dispatcher's pace, batches and retries (core's defaults for those absent). */
  readonly dispatch?: Partial<OutboundDispatch.DispatchSettings> | undefined
}

const outboundTimeoutMs = (options: OutboundWebhookOptions | undefined) => (options?.timeoutSeconds ?? 10) * 1000

/** The sender of outbound webhooks, for the service that checks URLs and for the dispatcher. */
const outboundSenderLayer = (options: OutboundWebhookOptions | undefined) =>
  OutboundHttpSender.layer({ allowedRanges: options?.allowedRanges ?? [], timeoutMs: outboundTimeoutMs(options) })

/** The outbound webhook dispatcher (a claim's lease outlasts a try twice over) and its log's retention. */
const outboundDispatchLayer = (options: OutboundWebhookOptions | undefined) => {
  const settings = { ...OutboundDispatch.DEFAULT_DISPATCH, ...options?.dispatch }
  return Layer.merge(
    OutboundDispatch.layer({ ...settings, leaseMs: Math.max(settings.leaseMs, 2 * outboundTimeoutMs(options) + 10_000) }),
    OutboundLogRetention.layer(options?.logDays ?? OutboundLogRetention.DEFAULT_LOG_DAYS)
  )
}

export interface AgentRunsOptions<ES, EB, EX> {
  /** Where everything is stored: `SqliteStorage.layer({...})` or `PgStorage.layer({...})`. */
  readonly storage: Layer.Layer<Storage, ES>
  /** Where transcripts and attachments are kept: `FileBlobStore.layer({ root })`. */
  readonly blobs: Layer.Layer<BlobStore.BlobStore, EB>
  /** What runs agents: `ProcessExecutor.layer({...})`, `DockerExecutor.layer({...})` or your own; none: execute nothing. */
  readonly executor?: Layer.Layer<Executor.Executor, EX> | undefined
  /** The agent CLIs runs may select with `config.harness.type` (none: only the default agent). */
  readonly harnesses?: Layer.Layer<AgentHarnesses> | undefined
  /**
   * The teams' repositories, for skills and environments (none: no repositories): the local
   * folders (`LocalRepoSource.layer`), or each team's GitHub host or local folders
   * (`GitHubRepoSource.layer`, which reads the teams' connections from storage).
   */
  readonly repos?: Layer.Layer<RepoSource, never, IdentityStore | SecretStore> | undefined
  /** GitHub's API, for the teams' GitHub connections: `OctokitHost.layer()` (none: no team can connect). */
  readonly gitHost?: Layer.Layer<GitHost> | undefined
  /** The hosts teams may connect to: host names, or `host:port` (default: github.com alone). */
  readonly gitHubHosts?: ReadonlyArray<string> | undefined
  /** 32 bytes that sign run tokens and download URLs; the same on every replica. */
  readonly secretKey: Redacted.Redacted<Uint8Array> | Uint8Array
  /**
   * While keys are rotated (docs/operations.md): earlier (or coming) keys whose run tokens and
   * download URLs are still honoured; give the storage adapter the same keys, and stored values
   * are sealed again under `secretKey` in the background.
   */
  readonly otherSecretKeys?: ReadonlyArray<Redacted.Redacted<Uint8Array> | Uint8Array> | undefined
  /** Where clients reach the service, with the mount prefix if any: `https://example.com/agents`. */
  readonly publicUrl: string
  /** The base of the webhook URLs the API shows (`publicUrl`). */
  readonly webhookBaseUrl?: string | undefined
  readonly execution?: ExecutionOptions | undefined
  /** Prompt, title and follow-up sizes, list page size, runs per team and minute (core's defaults for those absent). */
  readonly quotas?: Partial<Quotas.QuotaSettings> | undefined
  /** The webhook ingress's rate, log and body limits (core's defaults for those absent). */
  readonly ingress?: Partial<Ingress.IngressLimits> | undefined
  /** Addresses and CIDR ranges whose `X-Forwarded-For` names a webhook's sender (none). */
  readonly trustedProxies?: ReadonlyArray<string> | undefined
  /** Self-hosted workers' heartbeats, staleness and lease (core's defaults for those absent). */
  readonly workers?: Partial<Workers.WorkerSettings> | undefined
  /** Whether this service fires the schedules' ticks, and how late a tick may still fire on time (on; 2 s). */
  readonly scheduler?: { readonly enabled?: boolean; readonly catchUpGraceSeconds?: number } | undefined
  /** How many days audit log entries are kept (365; 0: forever). */
  readonly auditRetentionDays?: number | undefined
  /**
   * The server's retention ceilings (docs/retention.md): days ended runs, and webhook deliveries
   * with their payloads, are kept at most (absent or 0: no ceiling, teams set their own); how
   * often the sweep looks (3,600 s).
   */
  readonly retention?: {
    readonly runDays?: number | undefined
    readonly webhookDeliveryDays?: number | undefined
    readonly everySeconds?: number | undefined
  } | undefined
  /** The run event streams' caps. */
  readonly eventStreams?: Partial<EventStreams.EventStreamLimits> | undefined
  /** The largest request body, in bytes (1 MiB). */
  readonly maxBodyBytes?: number | undefined
  /** How long a signed transcript download URL is valid (900 s). */
  readonly downloadTtlSeconds?: number | undefined
  /**
   * The instance administrator's API token (`ar_` and at least 32 more characters): ensured at
   * start, so the host knows a token that works. Without it, nobody can call the API until a
   * token exists: an Effect host can create one with the `Identities` service (`mount` warns).
   */
  readonly adminToken?: string | undefined
  /** Sign-in with OpenID Connect for the dashboard and the CLI (none: API tokens only; docs/sign-in.md). */
  readonly signIn?: SignInOptions | undefined
  /** Outbound webhooks: where they may reach, how long a try may take, how the dispatcher retries (docs/outbound-webhooks.md). */
  readonly outboundWebhooks?: OutboundWebhookOptions | undefined
  /** A check of the host's own, also required for `/readyz` (fails with what is wrong). */
  readonly ready?: Effect.Effect<void, string> | undefined
}

/** How long audit log entries are kept unless the host says otherwise (days). */
export const DEFAULT_AUDIT_RETENTION_DAYS = 365

/** The mount prefix of a public URL: its path without the trailing slash (`""` at the root). */
export const basePathOf = (publicUrl: string): string => new URL(publicUrl).pathname.replace(/\/+$/, "")

const secretKeyOf = (key: Redacted.Redacted<Uint8Array> | Uint8Array) =>
  key instanceof Uint8Array ? Redacted.make(key) : key

/** Every core application service, over the stores and blob store of the context. */
const servicesLayer = <ES, EB, EX>(options: AgentRunsOptions<ES, EB, EX>) =>
  Layer.merge(
    Ingress.Ingress.Default.pipe(Layer.provide(Ingress.IngressLimitsTag.layer(options.ingress ?? {}))),
    HttpIngress.TrustedProxies.layer(options.trustedProxies ?? [])
  ).pipe(
    Layer.provideMerge(Layer.mergeAll(
      Runs.Runs.Default,
      Followups.Followups.Default,
      Conversations.Conversations.Default,
      RunEvents.RunEvents.Default,
      Schedules.Schedules.Default,
      Environments.Environments.Default,
      Webhooks.Webhooks.Default,
      Automations.Automations.Default,
      Secrets.Secrets.Default,
      GitHubConnections.GitHubConnections.Default,
      Skills.Skills.Default,
      Identities.Identities.Default,
      Principals.Principals.Default,
      TeamMembers.TeamMembers.Default,
      Budgets.Budgets.Default,
      TeamRetention.Retention.Default,
      RunDeletion.RunDeletion.Default,
      Erasure.Erasure.Default,
      Overview.Overview.Default,
      Tokens.Tokens.Default,
      Workers.Workers.Default,
      AuditService.Audit.Default,
      Idempotency.Idempotency.Default,
      OutboundWebhooks.OutboundWebhooks.Default
    )),
    // The records of executions: this service's own (the dispatcher) and self-hosted workers'.
    Layer.provideMerge(RunExecutions.RunExecutions.Default),
    Layer.provide(Layer.succeed(Webhooks.WebhookIngressSettings, { baseUrl: options.webhookBaseUrl ?? options.publicUrl })),
    Layer.provide(Layer.succeed(Quotas.Quotas, { ...Quotas.defaultQuotas, ...options.quotas })),
    Layer.provide(Layer.succeed(Workers.WorkerSettingsTag, {
      ...Workers.defaultWorkerSettings,
      // Workers apply the same ceiling as this service's own executions.
      ...(options.execution?.maxRuntimeSeconds === undefined ? {} : { maxRuntimeSeconds: options.execution.maxRuntimeSeconds }),
      ...options.workers
    })),
    Layer.provideMerge(Ids.IdsLive),
    Layer.provideMerge(outboundSenderLayer(options.outboundWebhooks)),
    Layer.provideMerge(schedulerConfigLayer(options)),
    Layer.provide(Layer.succeed(TeamRetention.RetentionCeilingsTag, retentionSettings(options).ceilings))
  )

/** A ceiling in days: none when absent or 0. */
const ceiling = (days: number | undefined) => (days === undefined || days <= 0 ? {} : { value: days })

/** The retention sweep's settings from the options. */
const retentionSettings = <ES, EB, EX>(options: AgentRunsOptions<ES, EB, EX>): DataRetention.RetentionSettings => {
  const runs = ceiling(options.retention?.runDays)
  const deliveries = ceiling(options.retention?.webhookDeliveryDays)
  return {
    ceilings: {
      ...("value" in runs ? { run_days: runs.value } : {}),
      ...("value" in deliveries ? { webhook_delivery_days: deliveries.value } : {})
    },
    everyMs: Math.max(1000, (options.retention?.everySeconds ?? DataRetention.DEFAULT_RETENTION.everyMs / 1000) * 1000)
  }
}

/** The execution engine's settings, and the executions of this process (with their drain). */
const executionBaseLayer = <ES, EB, EX>(options: AgentRunsOptions<ES, EB, EX>) => {
  const execution = options.execution ?? {}
  const seconds = (value: number | undefined, fallback: number) => value === undefined ? fallback : value * 1000
  const defaults = Dispatcher.defaultSettings(
    execution.harness ?? defaultHarness("process"),
    `${options.publicUrl.replace(/\/+$/, "")}/api/v1`
  )
  return LiveExecutions.LiveExecutions.Default.pipe(Layer.provideMerge(Layer.succeed(Dispatcher.DispatcherConfig, {
    ...defaults,
    concurrency: execution.concurrency ?? defaults.concurrency,
    leaseMs: seconds(execution.leaseSeconds, defaults.leaseMs),
    cancelGraceMs: seconds(execution.cancelGraceSeconds, defaults.cancelGraceMs),
    maxOutputBytes: execution.maxOutputBytes ?? defaults.maxOutputBytes,
    maxRuntimeSeconds: execution.maxRuntimeSeconds ?? defaults.maxRuntimeSeconds,
    workerWaitMs: seconds(execution.workerWaitSeconds, Dispatcher.DEFAULT_WORKER_WAIT_MS),
    drainMs: seconds(execution.drainSeconds, Dispatcher.DEFAULT_DRAIN_MS),
    adoptAgents: execution.adoptAgents ?? false
  })))
}

/** The execution engine on the given executor; without one, only the lease sweep. */
const executionLayer = <ES, EB, EX>(options: AgentRunsOptions<ES, EB, EX>) =>
  options.executor === undefined
    ? Dispatcher.sweepOnly
    : Dispatcher.layer.pipe(Layer.provide(options.executor), Layer.provide(options.harnesses ?? Layer.empty))

/**
 * The scheduler's settings, for its loop and for the schedules service (run now keeps the recent
 * runs the scheduler keeps), provided with the services even when the loop is turned off.
 */
const schedulerConfigLayer = <ES, EB, EX>(options: AgentRunsOptions<ES, EB, EX>) =>
  Layer.succeed(Scheduler.SchedulerConfig, {
    ...Scheduler.defaultSettings,
    ...(options.scheduler?.catchUpGraceSeconds === undefined
      ? {}
      : { catchUpGraceMs: Math.round(options.scheduler.catchUpGraceSeconds * 1000) })
  })

/** The scheduler's loop, unless turned off (its settings come with the services). */
const schedulingLayer = <ES, EB, EX>(options: AgentRunsOptions<ES, EB, EX>) =>
  options.scheduler?.enabled === false ? Layer.empty : Scheduler.layer

/** What `/readyz` says while the service drains. */
const DRAINING = "draining: the service is stopping; its runs go to other replicas"

/**
 * Ready while not draining, storage answers, no loop is failing, no storage failure was seen
 * lately, and the host's check passes.
 */
const readinessLayer = (ready: Effect.Effect<void, string> | undefined) =>
  Layer.effect(
    Server.Readiness,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const health = yield* Health.Health
      const live = yield* LiveExecutions.LiveExecutions
      return Effect.gen(function*() {
        if (yield* live.isDraining) return yield* Effect.fail(DRAINING)
        if (ready !== undefined) yield* ready
        yield* sql`SELECT 1`.pipe(Effect.mapError(() => "storage is unreachable"))
        const problems = yield* health.problems
        if (problems.length > 0) return yield* Effect.fail(problems.join("; "))
      })
    })
  )

/**
 * The whole service: provides `App` and every core service (for a host that also calls them
 * directly), and runs the execution engine and the scheduler for the layer's lifetime.
 */
export const layer = <ES, EB, EX>(options: AgentRunsOptions<ES, EB, EX>) => {
  const secretKey = secretKeyOf(options.secretKey)
  const otherKeys = (options.otherSecretKeys ?? []).map(secretKeyOf)
  const base = Layer.mergeAll(
    servicesLayer(options).pipe(
      Layer.provideMerge(options.blobs),
      // Run tokens: made once, for the services, the HTTP handlers and the dispatcher.
      Layer.provideMerge(RunTokens.layer(secretKey, otherKeys)),
      Layer.provideMerge(options.repos ?? Layer.succeed(RepoSource, noRepositories)),
      Layer.provideMerge(options.gitHost ?? Layer.succeed(GitHost, noGitHost)),
      Layer.provideMerge(Layer.succeed(GitHubHosts, options.gitHubHosts ?? DEFAULT_ALLOWED_HOSTS))
    ),
    Downloads.layer({
      secretKey,
      otherKeys,
      publicUrl: options.publicUrl,
      ...(options.downloadTtlSeconds === undefined ? {} : { ttlSeconds: options.downloadTtlSeconds })
    }),
    EventStreams.EventStreamLimitsTag.layer(options.eventStreams ?? {}),
    readinessLayer(options.ready),
    Server.Startup.layer,
    options.signIn === undefined ? Layer.empty : signInLayer(options.signIn, options.publicUrl, secretKey).pipe(Layer.provide(Ids.IdsLive))
  ).pipe(Layer.provideMerge(options.storage), Layer.provideMerge(Health.layer), Layer.provideMerge(executionBaseLayer(options)))
  const admin = options.adminToken === undefined
    ? Layer.empty
    : Layer.effectDiscard(Effect.flatMap(Identities.Identities, (identities) => identities.bootstrap(Option.some(options.adminToken!), "options.adminToken")))
  const app = Server.appLayer({ maxBodyBytes: options.maxBodyBytes, basePath: basePathOf(options.publicUrl) })
  const retention = AuditRetention.layer({ retentionDays: options.auditRetentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS })
  const background = Layer.mergeAll(
    retention,
    DataRetention.layer(retentionSettings(options)),
    otherKeys.length === 0 ? Layer.empty : KeyRotation.layer(),
    IdempotencyExpiry.layer(),
    outboundDispatchLayer(options.outboundWebhooks)
  )
  return Layer.mergeAll(app, admin, executionLayer(options), schedulingLayer(options), background).pipe(
    Layer.provideMerge(base)
  )
}
