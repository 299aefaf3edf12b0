/**
 * The configuration of the bundled server (docs/reference/configuration.md), read from environment variables:
 * `PORT` (8080), `HOST` (127.0.0.1), `AGENT_RUNS_DATA_DIR` (`./data`), `AGENT_RUNS_DATABASE_URL`
 * (`sqlite:<data dir>/agent-runs.db`; `postgres://…` or `postgresql://…` selects PostgreSQL),
 * `AGENT_RUNS_DATABASE_CONNECT_TIMEOUT_SECONDS` (10: how long start-up waits for PostgreSQL to
 * answer a first connection before it fails),
 * `AGENT_RUNS_ADMIN_TOKEN`, `AGENT_RUNS_PUBLIC_URL` (`http://<host>:<port>`),
 * `AGENT_RUNS_WEBHOOK_BASE_URL` (the public URL), `AGENT_RUNS_SECRET_KEY` (32 bytes as 64 hex
 * characters or base64; generated into `<data dir>/secret-key` when absent),
 * `AGENT_RUNS_OTHER_SECRET_KEYS` (none: keys that open and verify but never seal nor sign, comma
 * separated, while keys are rotated: docs/operations.md),
 * `AGENT_RUNS_MAX_BODY_BYTES` (1 MiB), `AGENT_RUNS_DOWNLOAD_TTL_SECONDS` (900),
 * `AGENT_RUNS_MIRRORS_MAX_BYTES` (20 GiB: the mirrors of GitHub repositories), `AGENT_RUNS_BLOB_DIR`
 * (`<data dir>/blobs`: transcripts; replicas share one so that any of them serves any transcript),
 * `AGENT_RUNS_DEFINITIONS_DIR` (none: a definitions directory, `webhooks/*.yaml`,
 * `automations/*.yaml` and `outbound-webhooks/*.yaml`, applied at start-up as the bootstrap admin in its team; see
 * docs/definitions.md).
 * Execution: `AGENT_RUNS_EXECUTOR` (`process` | `docker` | `kubernetes`; `process`), `AGENT_RUNS_HARNESS` (the
 * default agent command, a shell command; the bundled scripted agent), `AGENT_RUNS_REPOS_DIR`
 * (`<data dir>/repos`; a team's repositories at `<team_uid>/<owner>/<repo>`), `AGENT_RUNS_CONCURRENCY` (runs executed at once by this server, 16; 0: an
 * API-only replica that executes nothing but still sweeps leases and admits waiting runs),
 * `AGENT_RUNS_LEASE_SECONDS` (30), `AGENT_RUNS_CANCEL_GRACE_SECONDS` (5), `AGENT_RUNS_DRAIN_SECONDS`
 * (20: stopping, how long running agents may finish before their runs are handed over),
 * `AGENT_RUNS_ADOPT_AGENTS` (true: stopping, the agents still running then that can outlive the
 * server, ours in Docker sandboxes, are left for its next process to adopt; docs/deployment.md),
 * `AGENT_RUNS_MAX_OUTPUT_BYTES` (52428800: the most a run's agents may print; past it the agent is
 * stopped and the run FAILED), `AGENT_RUNS_MAX_RUNTIME_SECONDS` (86400: the ceiling of a run's
 * `config.max_runtime_seconds`, and its limit when it sets none), and for Docker
 * `AGENT_RUNS_DOCKER_IMAGE` (the image of environments without one; `agent-runs-agent:latest`) and
 * `AGENT_RUNS_DOCKER_NETWORK` (`none` | `host`; `none`), the Docker sandboxes' user and limits in
 * DockerSandboxConfig.ts; for Kubernetes, KubernetesConfig.ts; for processes `AGENT_RUNS_PROCESS_ISOLATION`
 * (`auto` | `uid` | `none`; `auto`: a user of its own per sandbox when the server runs as root,
 * see docs/security.md) and `AGENT_RUNS_SANDBOX_UIDS` (the uids those users get,
 * `1000000000-1999999999`).
 * Self-hosted workers: `AGENT_RUNS_WORKER_HEARTBEAT_SECONDS` (5: how often workers send heartbeats;
 * a worker is listed until 3 intervals after its latest one; docs/workers.md) and
 * `AGENT_RUNS_WORKER_WAIT_SECONDS` (600: a run that old, waiting for a worker that has been away as
 * long fails `resource_unavailable`).
 * Webhook ingress: `AGENT_RUNS_TRUSTED_PROXIES` (addresses and CIDR ranges, comma separated, whose
 * `X-Forwarded-For` names the sender; none), `AGENT_RUNS_WEBHOOK_DELIVERIES_PER_MINUTE` (per webhook
 * and sender, 60), `AGENT_RUNS_WEBHOOK_LOG_MAX` (10000: the most ACCEPTED, and apart DUPLICATE,
 * entries a webhook's delivery log keeps; at least 50), `AGENT_RUNS_WEBHOOK_LOG_DAYS` (7: days of
 * them kept, up to the max), `AGENT_RUNS_WEBHOOK_LOG_REJECTED` (20: rejected entries kept per
 * webhook, the others only counted), `AGENT_RUNS_WEBHOOK_BODY_TIMEOUT_SECONDS` (10: a body not
 * arrived by then is dropped with a 408 and counts in the sender's authentication-failure budget).
 * Outbound webhooks (docs/outbound-webhooks.md): `AGENT_RUNS_OUTBOUND_WEBHOOK_ALLOWED_RANGES` (CIDR
 * ranges, comma separated, that endpoints may reach although not public; none),
 * `AGENT_RUNS_OUTBOUND_WEBHOOK_TIMEOUT_SECONDS` (10: the most one try may take) and
 * `AGENT_RUNS_OUTBOUND_WEBHOOK_RETRY_HOURS` (24: how long a delivery is retried before it fails and,
 * if its endpoint delivered nothing meanwhile, the endpoint is turned off) and
 * `AGENT_RUNS_OUTBOUND_WEBHOOK_LOG_DAYS` (7: how long delivered and failed deliveries stay in the log).
 * Quotas (docs/security.md): `AGENT_RUNS_MAX_PROMPT_BYTES` (65536: a prompt or base prompt of a
 * run, schedule or automation), `AGENT_RUNS_MAX_TITLE_BYTES` (1024), `AGENT_RUNS_MAX_FOLLOWUP_BYTES`
 * (65536), `AGENT_RUNS_MAX_PENDING_FOLLOWUPS` (100 waiting per run), `AGENT_RUNS_FOLLOWUPS_PER_MINUTE`
 * (60 per run, per process), `AGENT_RUNS_FOLLOWUP_BYTES_PER_MINUTE` (1048576), `AGENT_RUNS_FOLLOWUPS_PER_RUN`
 * (1000 in a run's life), `AGENT_RUNS_FOLLOWUP_BYTES_PER_RUN` (16777216), `AGENT_RUNS_MAX_LIST_BYTES`
 * (1048576: a run list page's JSON), `AGENT_RUNS_RUNS_PER_MINUTE` (120 per team, whatever creates
 * them, per process). Event streams: `AGENT_RUNS_SSE_PER_PRINCIPAL` (16 open at once per
 * principal), `AGENT_RUNS_SSE_MAX` (1000 in all), `AGENT_RUNS_SSE_RECHECK_SECONDS` (3: how often an
 * open stream checks its token and access again).
 * Audit log (docs/audit.md): `AGENT_RUNS_AUDIT_RETENTION_DAYS` (365: days entries are kept; 0 keeps them forever).
 * Retention (docs/retention.md): `AGENT_RUNS_RUN_RETENTION_DAYS` (0: the server's ceiling on how long
 * ended runs are kept; 0 sets none) and `AGENT_RUNS_WEBHOOK_DELIVERY_RETENTION_DAYS` (30: webhook
 * deliveries and their payloads; 0 sets none); teams may keep less. `AGENT_RUNS_RETENTION_SWEEP_SECONDS`
 * (3600: how often the sweep looks for what is past its time).
 * Scheduler: `AGENT_RUNS_SCHEDULER` (`on` | `off`; `on`: every replica fires the schedules' ticks,
 * each tick starting one run whatever the number of replicas; `off`: this replica fires none),
 * `AGENT_RUNS_SCHEDULER_GRACE_SECONDS` (2: how late a tick may be, when the scheduler starts, and
 * still fire on time; older missed ticks collapse into one catch-up run).
 * Logs: `AGENT_RUNS_LOG_FORMAT` (`pretty` | `json`; `pretty`: one readable line each; `json`: one
 * JSON object per line, structured fields such as `run_id` under `annotations`), `AGENT_RUNS_LOG_LEVEL`
 * (`debug` | `info` | `warning` | `error`; `info`: the least severe level logged; `debug` also
 * prints a failed start-up's cause with its stack trace).
 */
import { ProcessIsolation } from "@agent-runs/executor-process"
import type { ProcessExecutor } from "@agent-runs/executor-process"
import { OutboundWebhook, Quotas, Retention } from "@agent-runs/core"
import type { QuotaSettings } from "@agent-runs/core/domain/Quotas"
import type { EventStreams } from "@agent-runs/http"
import type { AgentRuns } from "@agent-runs/server"
import { AddressSet, Ingress, OutboundHttpSender } from "@agent-runs/http"
import { Config, ConfigError, Either, Option, Redacted } from "effect"
import { join, resolve } from "node:path"
import { DockerSandboxConfig } from "./DockerSandboxConfig.js"
import { KubernetesConfig } from "./KubernetesConfig.js"
import { SignInConfig } from "./SignInConfig.js"

/** The webhook ingress's settings (the optional ones default to the core's `DEFAULT_INGRESS_LIMITS`). */
export interface IngressConfig {
  readonly trustedProxies: ReadonlyArray<string>
  readonly deliveriesPerMinute: number
  /** The most ACCEPTED (and, apart, DUPLICATE) entries a webhook's delivery log keeps (10,000). */
  readonly logMax?: number | undefined
  /** How many days of ACCEPTED and DUPLICATE entries the log keeps, up to `logMax` (7). */
  readonly logDays?: number | undefined
  /** How many rejected entries the log keeps per webhook; the others are only counted (20). */
  readonly logRejected?: number | undefined
  /** How long a delivery's body may take to arrive, in seconds (10). */
  readonly bodyTimeoutSeconds?: number | undefined
}

/** The scheduler's settings (see `Scheduler` in core). */
export interface SchedulingConfig {
  readonly enabled: boolean
  readonly graceSeconds: number
}

/** Where runs and everything else are stored. */
export type Database =
  | { readonly _tag: "Sqlite"; readonly filename: string }
  | { readonly _tag: "Postgres"; readonly url: Redacted.Redacted<string> }

export interface ServerConfig {
  readonly port: number
  readonly host: string
  readonly dataDir: string
  readonly database: Database
  /** How long start-up waits for PostgreSQL to answer a first connection, in seconds (10 when absent). */
  readonly databaseConnectTimeoutSeconds?: number | undefined
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  /** `AGENT_RUNS_DEFINITIONS_DIR`, resolved; applied at start-up when set. */
  readonly definitionsDir?: string | undefined
  readonly publicUrl: string
  readonly webhookBaseUrl: string
  readonly secretKey: Option.Option<Redacted.Redacted<string>>
  /** `AGENT_RUNS_OTHER_SECRET_KEYS`: keys that only open and verify, while keys are rotated (docs/operations.md). */
  readonly otherSecretKeys?: ReadonlyArray<Redacted.Redacted<string>> | undefined
  readonly maxBodyBytes: number
  readonly downloadTtlSeconds: number
  readonly blobDir: string
  readonly execution: ExecutionConfig
  readonly ingress: IngressConfig
  /** Outbound webhooks (none: public addresses only, a try's 10 s, core's retries). */
  readonly outboundWebhooks?: AgentRuns.OutboundWebhookOptions | undefined
  readonly scheduler: SchedulingConfig
  /** How log lines are written (`pretty` when absent). */
  readonly logFormat?: "pretty" | "json" | undefined
  /** The least severe level logged (`info` when absent). */
  readonly logLevel?: LogLevelName | undefined
  /** Prompt, title and follow-up sizes, follow-ups waiting per run, list page size, runs per team and minute (core's defaults for those absent). */
  readonly quotas?: Partial<QuotaSettings> | undefined
  /** Days audit log entries are kept (365; 0: forever). */
  readonly auditRetentionDays?: number | undefined
  /** The server's retention ceilings in days (0: none), and how often the sweep looks (docs/retention.md). */
  readonly retention?: { readonly runDays: number; readonly webhookDeliveryDays: number; readonly everySeconds: number } | undefined
  /** Sign-in with OpenID Connect (SignInConfig.ts; none: API tokens only). */
  readonly signIn?: AgentRuns.SignInOptions | undefined
  /** The GitHub hosts teams may connect to (`AGENT_RUNS_GITHUB_HOSTS`; github.com alone when absent). */
  readonly githubHosts?: ReadonlyArray<string> | undefined
  /** The most bytes the mirrors of GitHub repositories may take (`AGENT_RUNS_MIRRORS_MAX_BYTES`; 20 GiB when absent). */
  readonly mirrorsMaxBytes?: number | undefined
  /** The event streams' caps and re-check interval (http's `DEFAULT_EVENT_STREAM_LIMITS` for those absent). */
  readonly eventStreams?: Partial<EventStreams.EventStreamLimits> | undefined
}

/** How runs are executed. */
export interface ExecutionConfig {
  readonly executor: "process" | "docker" | "kubernetes"
  readonly harness: Option.Option<string>
  readonly reposDir: string
  readonly concurrency: number
  readonly leaseSeconds: number
  readonly cancelGraceSeconds: number
  /** Stopping, how long running agents may finish before their runs are handed over (20 s when absent). */
  readonly drainSeconds?: number | undefined
  /** Stopping, whether agents that can outlive the server are left for its next process to adopt (true when absent). */
  readonly adoptAgents?: boolean | undefined
  /** The most a run's agents may print, in bytes (50 MiB when absent). */
  readonly maxOutputBytes?: number | undefined
  /** The ceiling of a run's maximum runtime, in seconds (one day when absent). */
  readonly maxRuntimeSeconds?: number | undefined
  readonly dockerImage: string
  readonly dockerNetwork: "none" | "host"
  /** The Docker sandboxes' user and limits (the executor's defaults and no memory/CPU limit when absent). */
  readonly dockerSandbox?: DockerSandboxConfig | undefined
  /** The Kubernetes executor's settings (KubernetesConfig.ts; its defaults when absent). */
  readonly kubernetes?: KubernetesConfig | undefined
  /** How often self-hosted workers send heartbeats (5 s when absent); stale after 3 intervals. */
  readonly workerHeartbeatSeconds?: number | undefined
  /** How long a run waits for an absent self-hosted worker before it fails (600 s when absent). */
  readonly workerWaitSeconds?: number | undefined
  /** Whether process sandboxes run as users of their own (`auto` when absent: when the server is root). */
  readonly processIsolation?: ProcessIsolation.Mode | undefined
  /** The uids those users get (`ProcessIsolation.DEFAULT_UIDS` when absent). */
  readonly sandboxUids?: ProcessExecutor.UidRange | undefined
}

const positive = (name: string, fallback: number) =>
  Config.number(name).pipe(
    Config.validate({ message: "must be a number greater than 0", validation: (n) => n > 0 }),
    Config.withDefault(fallback)
  )

const atLeast = (name: string, min: number, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: `must be an integer of at least ${min}`, validation: (n) => n >= min }),
    Config.withDefault(fallback)
  )

const retentionDays = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({
      message: `must be a whole number of days from 0 (no ceiling) to ${Retention.MAX_RETENTION_DAYS}`,
      validation: (n) => n >= 0 && n <= Retention.MAX_RETENTION_DAYS
    }),
    Config.withDefault(fallback)
  )

/** The levels `AGENT_RUNS_LOG_LEVEL` takes. */
export type LogLevelName = "debug" | "info" | "warning" | "error"

/** `AGENT_RUNS_LOG_LEVEL`: the least severe level logged (`info`). */
export const LogLevelConfig: Config.Config<LogLevelName> = Config.literal("debug", "info", "warning", "error")(
  "AGENT_RUNS_LOG_LEVEL"
).pipe(Config.withDefault("info" as const))

/** Parses `AGENT_RUNS_DATABASE_URL`. */
export const parseDatabase = (url: string, dataDir: string): Database | undefined => {
  if (/^postgres(ql)?:\/\//.test(url)) return { _tag: "Postgres", url: Redacted.make(url) }
  if (url.startsWith("sqlite:")) {
    const path = url.slice("sqlite:".length).replace(/^\/\//, "")
    return path === "" ? undefined : { _tag: "Sqlite", filename: resolve(dataDir, path) }
  }
  return undefined
}

/** The server configuration from the environment. */
export const ServerConfig: Config.Config<ServerConfig> = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(8080)),
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
  dataDir: Config.string("AGENT_RUNS_DATA_DIR").pipe(Config.withDefault("./data"), Config.map((dir) => resolve(dir))),
  databaseUrl: Config.option(Config.string("AGENT_RUNS_DATABASE_URL")),
  databaseConnectTimeoutSeconds: positive("AGENT_RUNS_DATABASE_CONNECT_TIMEOUT_SECONDS", 10),
  adminToken: Config.option(Config.redacted("AGENT_RUNS_ADMIN_TOKEN")),
  publicUrl: Config.option(Config.string("AGENT_RUNS_PUBLIC_URL")),
  webhookBaseUrl: Config.option(Config.string("AGENT_RUNS_WEBHOOK_BASE_URL")),
  secretKey: Config.option(Config.redacted("AGENT_RUNS_SECRET_KEY")),
  otherSecretKeys: Config.redacted("AGENT_RUNS_OTHER_SECRET_KEYS").pipe(
    Config.withDefault(Redacted.make("")),
    Config.map((keys) => Redacted.value(keys).split(/[\s,]+/).filter((key) => key !== "").map((key) => Redacted.make(key)))
  ),
  maxBodyBytes: Config.integer("AGENT_RUNS_MAX_BODY_BYTES").pipe(
    Config.validate({ message: "must be at least 1024", validation: (n) => n >= 1024 }),
    Config.withDefault(1024 * 1024)
  ),
  downloadTtlSeconds: Config.integer("AGENT_RUNS_DOWNLOAD_TTL_SECONDS").pipe(
    Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
    Config.withDefault(15 * 60)
  ),
  blobDir: Config.option(Config.string("AGENT_RUNS_BLOB_DIR")),
  githubHosts: Config.option(Config.string("AGENT_RUNS_GITHUB_HOSTS")),
  mirrorsMaxBytes: Config.option(Config.integer("AGENT_RUNS_MIRRORS_MAX_BYTES").pipe(
    Config.validate({ message: "must be at least 1048576 (1 MiB)", validation: (n) => n >= 1024 * 1024 })
  )),
  definitionsDir: Config.option(Config.nonEmptyString("AGENT_RUNS_DEFINITIONS_DIR")),
  executor: Config.literal("process", "docker", "kubernetes")("AGENT_RUNS_EXECUTOR").pipe(Config.withDefault("process" as const)),
  harness: Config.option(Config.nonEmptyString("AGENT_RUNS_HARNESS")),
  reposDir: Config.option(Config.string("AGENT_RUNS_REPOS_DIR")),
  concurrency: Config.integer("AGENT_RUNS_CONCURRENCY").pipe(
    Config.validate({ message: "must be 0 or more", validation: (n) => n >= 0 }),
    Config.withDefault(16)
  ),
  leaseSeconds: positive("AGENT_RUNS_LEASE_SECONDS", 30),
  workerHeartbeatSeconds: positive("AGENT_RUNS_WORKER_HEARTBEAT_SECONDS", 5),
  workerWaitSeconds: positive("AGENT_RUNS_WORKER_WAIT_SECONDS", 600),
  cancelGraceSeconds: positive("AGENT_RUNS_CANCEL_GRACE_SECONDS", 5),
  drainSeconds: Config.integer("AGENT_RUNS_DRAIN_SECONDS").pipe(
    Config.validate({ message: "must be a whole number of seconds from 0 to 3600", validation: (n) => n >= 0 && n <= 3_600 }),
    Config.withDefault(20)
  ),
  adoptAgents: Config.boolean("AGENT_RUNS_ADOPT_AGENTS").pipe(Config.withDefault(true)),
  maxOutputBytes: positive("AGENT_RUNS_MAX_OUTPUT_BYTES", 50 * 1024 * 1024),
  maxRuntimeSeconds: Config.integer("AGENT_RUNS_MAX_RUNTIME_SECONDS").pipe(
    Config.validate({ message: "must be a whole number of seconds from 1 to 604800 (seven days)", validation: (n) => n >= 1 && n <= 604_800 }),
    Config.withDefault(24 * 60 * 60)
  ),
  dockerImage: Config.nonEmptyString("AGENT_RUNS_DOCKER_IMAGE").pipe(Config.withDefault("agent-runs-agent:latest")),
  dockerNetwork: Config.literal("none", "host")("AGENT_RUNS_DOCKER_NETWORK").pipe(Config.withDefault("none" as const)),
  processIsolation: Config.literal("auto", "uid", "none")("AGENT_RUNS_PROCESS_ISOLATION").pipe(
    Config.withDefault("auto" as const)
  ),
  sandboxUids: Config.string("AGENT_RUNS_SANDBOX_UIDS").pipe(
    Config.mapOrFail((text) => {
      const range = ProcessIsolation.parseUidRange(text)
      return range === undefined
        ? Either.left(ConfigError.InvalidData([], "must be FIRST-LAST, uids from 1000 to 2147483647 that no one else has"))
        : Either.right(range)
    }),
    Config.withDefault(ProcessIsolation.DEFAULT_UIDS)
  ),
  dockerSandbox: DockerSandboxConfig,
  kubernetes: KubernetesConfig,
  trustedProxies: Config.string("AGENT_RUNS_TRUSTED_PROXIES").pipe(
    Config.withDefault(""),
    Config.map((text) => text.split(/[\s,]+/).filter((entry) => entry !== "")),
    Config.validate({
      message: "must be IP addresses or CIDR ranges, comma separated",
      validation: (entries) => Either.isRight(Either.try(() => Ingress.trustedProxies(entries)))
    })
  ),
  deliveriesPerMinute: positive("AGENT_RUNS_WEBHOOK_DELIVERIES_PER_MINUTE", 60),
  webhookLogMax: Config.integer("AGENT_RUNS_WEBHOOK_LOG_MAX").pipe(
    Config.validate({ message: "must be an integer of at least 50", validation: (n) => n >= 50 }),
    Config.withDefault(10_000)
  ),
  webhookLogDays: Config.integer("AGENT_RUNS_WEBHOOK_LOG_DAYS").pipe(
    Config.validate({ message: "must be an integer of at least 1", validation: (n) => n >= 1 }),
    Config.withDefault(7)
  ),
  webhookLogRejected: Config.integer("AGENT_RUNS_WEBHOOK_LOG_REJECTED").pipe(
    Config.validate({ message: "must be an integer from 0 to 1000", validation: (n) => n >= 0 && n <= 1000 }),
    Config.withDefault(20)
  ),
  webhookBodyTimeoutSeconds: Config.number("AGENT_RUNS_WEBHOOK_BODY_TIMEOUT_SECONDS").pipe(
    Config.validate({ message: "must be a number from 0.1 to 300", validation: (n) => n >= 0.1 && n <= 300 }),
    Config.withDefault(10)
  ),
  promptBytes: positive("AGENT_RUNS_MAX_PROMPT_BYTES", Quotas.defaultQuotas.promptBytes),
  followupBytes: positive("AGENT_RUNS_MAX_FOLLOWUP_BYTES", Quotas.defaultQuotas.followupBytes),
  pendingFollowups: positive("AGENT_RUNS_MAX_PENDING_FOLLOWUPS", Quotas.defaultQuotas.pendingFollowups),
  followupsPerMinute: positive("AGENT_RUNS_FOLLOWUPS_PER_MINUTE", Quotas.defaultQuotas.followupsPerMinute),
  followupBytesPerMinute: positive("AGENT_RUNS_FOLLOWUP_BYTES_PER_MINUTE", Quotas.defaultQuotas.followupBytesPerMinute),
  followupsPerRun: positive("AGENT_RUNS_FOLLOWUPS_PER_RUN", Quotas.defaultQuotas.followupsPerRun),
  followupBytesPerRun: positive("AGENT_RUNS_FOLLOWUP_BYTES_PER_RUN", Quotas.defaultQuotas.followupBytesPerRun),
  runsPerMinute: positive("AGENT_RUNS_RUNS_PER_MINUTE", Quotas.defaultQuotas.runsPerMinute),
  titleBytes: atLeast("AGENT_RUNS_MAX_TITLE_BYTES", 100, Quotas.defaultQuotas.titleBytes),
  listBytes: atLeast("AGENT_RUNS_MAX_LIST_BYTES", 64 * 1024, Quotas.defaultQuotas.listBytes),
  outboundAllowedRanges: Config.string("AGENT_RUNS_OUTBOUND_WEBHOOK_ALLOWED_RANGES").pipe(
    Config.withDefault(""),
    Config.map((text) => text.split(/[\s,]+/).filter((entry) => entry !== "")),
    Config.validate({
      message: "must be IP addresses or CIDR ranges, comma separated",
      validation: (entries) =>
        Either.isRight(Either.try(() => AddressSet.addressSet(entries, OutboundHttpSender.ALLOWED_RANGES_SETTING)))
    })
  ),
  outboundTimeoutSeconds: positive("AGENT_RUNS_OUTBOUND_WEBHOOK_TIMEOUT_SECONDS", 10),
  outboundRetryHours: positive("AGENT_RUNS_OUTBOUND_WEBHOOK_RETRY_HOURS", 24),
  outboundLogDays: positive("AGENT_RUNS_OUTBOUND_WEBHOOK_LOG_DAYS", 7),
  auditRetentionDays: Config.integer("AGENT_RUNS_AUDIT_RETENTION_DAYS").pipe(
    Config.validate({ message: "must be a whole number of days, 0 (keep forever) or more", validation: (n) => n >= 0 }),
    Config.withDefault(365)
  ),
  runRetentionDays: retentionDays("AGENT_RUNS_RUN_RETENTION_DAYS", 0),
  webhookDeliveryRetentionDays: retentionDays("AGENT_RUNS_WEBHOOK_DELIVERY_RETENTION_DAYS", 30),
  retentionSweepSeconds: positive("AGENT_RUNS_RETENTION_SWEEP_SECONDS", 3600),
  signIn: SignInConfig,
  ssePerPrincipal: atLeast("AGENT_RUNS_SSE_PER_PRINCIPAL", 1, 16),
  sseMax: atLeast("AGENT_RUNS_SSE_MAX", 1, 1000),
  sseRecheckSeconds: Config.number("AGENT_RUNS_SSE_RECHECK_SECONDS").pipe(
    Config.validate({ message: "must be a number from 0.1 to 60", validation: (n) => n >= 0.1 && n <= 60 }),
    Config.withDefault(3)
  ),
  scheduler: Config.literal("on", "off")("AGENT_RUNS_SCHEDULER").pipe(Config.withDefault("on" as const)),
  logFormat: Config.literal("pretty", "json")("AGENT_RUNS_LOG_FORMAT").pipe(Config.withDefault("pretty" as const)),
  logLevel: LogLevelConfig,
  schedulerGraceSeconds: Config.number("AGENT_RUNS_SCHEDULER_GRACE_SECONDS").pipe(
    Config.validate({ message: "must be 0 or more", validation: (n) => n >= 0 }),
    Config.withDefault(2)
  )
}).pipe(
  Config.mapOrFail((raw) => {
    const url = Option.getOrElse(raw.databaseUrl, () => "sqlite:agent-runs.db")
    const database = parseDatabase(url, raw.dataDir)
    if (database === undefined) {
      return Either.left(
        ConfigError.InvalidData(["AGENT_RUNS_DATABASE_URL"], "must be sqlite:<path> or postgres://…")
      )
    }
    const publicUrl = Option.getOrElse(raw.publicUrl, () => `http://${raw.host}:${raw.port}`).replace(/\/+$/, "")
    return Either.right({
      port: raw.port,
      host: raw.host,
      dataDir: raw.dataDir,
      database,
      databaseConnectTimeoutSeconds: raw.databaseConnectTimeoutSeconds,
      adminToken: raw.adminToken,
      publicUrl,
      webhookBaseUrl: Option.getOrElse(raw.webhookBaseUrl, () => publicUrl).replace(/\/+$/, ""),
      secretKey: raw.secretKey,
      otherSecretKeys: raw.otherSecretKeys,
      maxBodyBytes: raw.maxBodyBytes,
      downloadTtlSeconds: raw.downloadTtlSeconds,
      blobDir: Option.match(raw.blobDir, { onNone: () => join(raw.dataDir, "blobs"), onSome: (dir) => resolve(dir) }),
      definitionsDir: Option.getOrUndefined(Option.map(raw.definitionsDir, (dir) => resolve(dir))),
      githubHosts: Option.getOrUndefined(Option.map(raw.githubHosts, (hosts) => hosts.split(",").map((h) => h.trim()).filter((h) => h !== ""))),
      mirrorsMaxBytes: Option.getOrUndefined(raw.mirrorsMaxBytes),
      execution: {
        executor: raw.executor,
        harness: raw.harness,
        reposDir: Option.match(raw.reposDir, { onNone: () => join(raw.dataDir, "repos"), onSome: (dir) => resolve(dir) }),
        concurrency: raw.concurrency,
        leaseSeconds: raw.leaseSeconds,
        cancelGraceSeconds: raw.cancelGraceSeconds,
        drainSeconds: raw.drainSeconds,
        adoptAgents: raw.adoptAgents,
        maxOutputBytes: raw.maxOutputBytes,
        maxRuntimeSeconds: raw.maxRuntimeSeconds,
        dockerImage: raw.dockerImage,
        dockerNetwork: raw.dockerNetwork,
        workerHeartbeatSeconds: raw.workerHeartbeatSeconds,
        workerWaitSeconds: raw.workerWaitSeconds,
        processIsolation: raw.processIsolation,
        sandboxUids: raw.sandboxUids,
        dockerSandbox: raw.dockerSandbox,
        kubernetes: raw.kubernetes
      },
      ingress: {
        trustedProxies: raw.trustedProxies,
        deliveriesPerMinute: raw.deliveriesPerMinute,
        logMax: raw.webhookLogMax,
        logDays: raw.webhookLogDays,
        logRejected: raw.webhookLogRejected,
        bodyTimeoutSeconds: raw.webhookBodyTimeoutSeconds
      },
      scheduler: { enabled: raw.scheduler === "on", graceSeconds: raw.schedulerGraceSeconds },
      logFormat: raw.logFormat,
      logLevel: raw.logLevel,
      quotas: {
        promptBytes: raw.promptBytes,
        followupBytes: raw.followupBytes,
        pendingFollowups: raw.pendingFollowups,
        followupsPerMinute: raw.followupsPerMinute,
        followupBytesPerMinute: raw.followupBytesPerMinute,
        followupsPerRun: raw.followupsPerRun,
        followupBytesPerRun: raw.followupBytesPerRun,
        runsPerMinute: raw.runsPerMinute,
        titleBytes: raw.titleBytes,
        listBytes: raw.listBytes
      },
      outboundWebhooks: {
        allowedRanges: raw.outboundAllowedRanges,
        timeoutSeconds: raw.outboundTimeoutSeconds,
        logDays: raw.outboundLogDays,
        dispatch: { retry: { ...OutboundWebhook.DEFAULT_RETRY, give_up_after_ms: raw.outboundRetryHours * 3_600_000 } }
      },
      auditRetentionDays: raw.auditRetentionDays,
      retention: {
        runDays: raw.runRetentionDays,
        webhookDeliveryDays: raw.webhookDeliveryRetentionDays,
        everySeconds: raw.retentionSweepSeconds
      },
      signIn: raw.signIn,
      eventStreams: {
        perPrincipal: raw.ssePerPrincipal,
        max: raw.sseMax,
        recheckMs: Math.round(raw.sseRecheckSeconds * 1000)
      }
    })
  })
)
