/**
 * The bundled server (`agent-runs serve`) as one layer: `AgentRuns.layer` of @agent-runs/server
 * with the adapters the configuration picks (SQLite or PostgreSQL, the file-system blob store
 * under the data directory, local processes or Docker, the agent CLIs), served on Node's HTTP
 * server, and the start-up work (migrations run by the storage layer, the bootstrap admin token,
 * the definitions of AGENT_RUNS_DEFINITIONS_DIR, the banner). Composition only.
 *
 * The port opens before the bootstrap token and the definitions are done, so that `/healthz` and
 * `/readyz` answer meanwhile; the API answers 503 "the service is starting" until they are
 * (`Server.started`), never judging a token against a store that does not hold it yet.
 */
import { HttpServer } from "@effect/platform"
import { NodeContext, NodeHttpServer } from "@effect/platform-node"
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { Definitions, DefinitionsApplier, Dispatcher, Identities } from "@agent-runs/core"
import { GitHubRepoSource, OctokitHost } from "@agent-runs/github"
import { LocalRepoSource } from "@agent-runs/executor-process"
import { Server } from "@agent-runs/http"
import { Directories } from "@agent-runs/node-fs"
import { AgentRuns } from "@agent-runs/server"
import { PgStorage } from "@agent-runs/storage-pg"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { Console, Data, Duration, Effect, Layer, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { accessSync, chmodSync, constants, existsSync, readFileSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { join, relative } from "node:path"
import * as DefinitionsDirectory from "../DefinitionsDirectory.js"
import type { ServerConfig } from "./Config.js"
import { type ExecutionSetup, executorLayer, mirrorsOf, setUpExecution } from "./Execution.js"
import { HarnessesLive } from "./Harnesses.js"

/** Decodes a 32-byte key given as 64 hex characters or base64. */
export const decodeSecretKey = (text: string): Uint8Array | undefined => {
  const trimmed = text.trim()
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64")
  return bytes.length === 32 ? new Uint8Array(bytes) : undefined
}

/** Writes a file only its owner can read. */
const writePrivate = (path: string, text: string) => {
  writeFileSync(path, text, { mode: 0o600 })
  chmodSync(path, 0o600)
}

/** The secret key: `AGENT_RUNS_SECRET_KEY`, else `<data dir>/secret-key`, generated there on first start. */
const secretKeyOf = (config: ServerConfig) =>
  Effect.try({
    try: () => {
      const file = join(config.dataDir, "secret-key")
      const text = Option.isSome(config.secretKey)
        ? Redacted.value(config.secretKey.value)
        : existsSync(file)
        ? readFileSync(file, "utf8")
        : (() => {
          const generated = randomBytes(32).toString("base64")
          writePrivate(file, `${generated}\n`)
          return generated
        })()
      const key = decodeSecretKey(text)
      if (key === undefined) {
        throw new Error(
          `${Option.isSome(config.secretKey) ? "AGENT_RUNS_SECRET_KEY" : file}: must be 32 bytes as 64 hex characters or base64`
        )
      }
      return Redacted.make(key)
    },
    catch: (cause) => cause as Error
  })

/** The keys that only open, while keys are rotated: `AGENT_RUNS_OTHER_SECRET_KEYS`. */
const otherKeysOf = (config: ServerConfig) =>
  Effect.try({
    try: () =>
      (config.otherSecretKeys ?? []).map((text) => {
        const key = decodeSecretKey(Redacted.value(text))
        if (key === undefined) throw new Error("AGENT_RUNS_OTHER_SECRET_KEYS: each key must be 32 bytes as 64 hex characters or base64")
        return Redacted.make(key)
      }),
    catch: (cause) => cause as Error
  })

/** The server's keys: the one that seals and signs, and those that only open and verify. */
interface Keys {
  readonly secretKey: Redacted.Redacted<Uint8Array>
  readonly otherSecretKeys: ReadonlyArray<Redacted.Redacted<Uint8Array>>
}

const storageLayer = (config: ServerConfig, { otherSecretKeys, secretKey }: Keys) =>
  config.database._tag === "Sqlite"
    ? SqliteStorage.layer({ filename: config.database.filename, secretKey, otherSecretKeys })
    : PgStorage.layer({
      url: config.database.url,
      secretKey,
      otherSecretKeys,
      connectTimeout: Duration.seconds(config.databaseConnectTimeoutSeconds ?? 10)
    })

/** The service's options for a configuration: its adapters and settings. */
const agentRunsOptions = (config: ServerConfig, execution: ExecutionSetup, keys: Keys) => {
  const { bodyTimeoutSeconds, deliveriesPerMinute, logDays, logMax, logRejected } = config.ingress
  const heartbeatMs = (config.execution.workerHeartbeatSeconds ?? 5) * 1000
  return {
    storage: storageLayer(config, keys),
    blobs: FileBlobStore.layer({ root: config.blobDir }),
    executor: executorLayer(config, execution),
    harnesses: HarnessesLive,
    // The repositories executors clone, read for skills (services and dispatcher alike): a team's
    // GitHub host when it is connected, else the local repositories directory.
    repos: GitHubRepoSource.layer({ local: LocalRepoSource.layer({ reposDir: config.execution.reposDir }), ...mirrorsOf(config) }),
    // GitHub's API, for the teams that connect to github.com or a GitHub Enterprise Server.
    gitHost: OctokitHost.layer(),
    gitHubHosts: config.githubHosts,
    secretKey: keys.secretKey,
    otherSecretKeys: keys.otherSecretKeys,
    publicUrl: config.publicUrl,
    webhookBaseUrl: config.webhookBaseUrl,
    execution: {
      harness: execution.harness,
      concurrency: config.execution.concurrency,
      leaseSeconds: config.execution.leaseSeconds,
      cancelGraceSeconds: config.execution.cancelGraceSeconds,
      drainSeconds: config.execution.drainSeconds,
      adoptAgents: config.execution.adoptAgents ?? true,
      maxOutputBytes: config.execution.maxOutputBytes,
      maxRuntimeSeconds: config.execution.maxRuntimeSeconds,
      workerWaitSeconds: config.execution.workerWaitSeconds
    },
    quotas: config.quotas,
    auditRetentionDays: config.auditRetentionDays,
    retention: config.retention,
    signIn: config.signIn,
    ingress: {
      deliveries: { max: deliveriesPerMinute, windowMs: 60_000 },
      ...(logMax === undefined ? {} : { logMax }),
      ...(logDays === undefined ? {} : { logDays }),
      ...(logRejected === undefined ? {} : { logRejected }),
      ...(bodyTimeoutSeconds === undefined ? {} : { bodyTimeoutMs: Math.round(bodyTimeoutSeconds * 1000) })
    },
    trustedProxies: config.ingress.trustedProxies,
    outboundWebhooks: config.outboundWebhooks,
    // Workers send heartbeats every interval and are stale after 3 of them.
    workers: {
      heartbeatMs,
      staleAfterMs: 3 * heartbeatMs,
      leaseMs: config.execution.leaseSeconds * 1000,
      ...(config.execution.maxOutputBytes === undefined ? {} : { maxOutputBytes: config.execution.maxOutputBytes })
    },
    scheduler: { enabled: config.scheduler.enabled, catchUpGraceSeconds: config.scheduler.graceSeconds },
    eventStreams: config.eventStreams,
    maxBodyBytes: config.maxBodyBytes,
    downloadTtlSeconds: config.downloadTtlSeconds
  } satisfies AgentRuns.AgentRunsOptions<unknown, unknown, unknown>
}

const shown = (path: string) => {
  const rel = relative(process.cwd(), path)
  return rel.startsWith("..") ? path : `./${rel}`
}

/** Ensures the bootstrap admin and says where its token is. */
const bootstrap = (config: ServerConfig) =>
  Effect.gen(function*() {
    const identities = yield* Identities.Identities
    const outcome = yield* identities.bootstrap(Option.map(config.adminToken, Redacted.value))
    const file = join(config.dataDir, "admin-token")
    switch (outcome._tag) {
      case "Generated":
        writePrivate(file, `${outcome.token}\n`)
        yield* Console.log(`Generated the admin token (shown once; also written to ${shown(file)}):\n  ${outcome.token}`)
        return `$(cat ${shown(file)})`
      case "Configured":
        return "$AGENT_RUNS_ADMIN_TOKEN"
      case "Existing":
        return existsSync(file) ? `$(cat ${shown(file)})` : "<your token>"
    }
  })

/** Start-up could not apply `AGENT_RUNS_DEFINITIONS_DIR`: the server does not start. */
export class DefinitionsNotApplied extends Data.TaggedError("DefinitionsNotApplied")<{ readonly message: string }> {}

/** Applies `AGENT_RUNS_DEFINITIONS_DIR` (if set) as the bootstrap admin, in its team; says what it did. */
const applyDefinitions = (config: ServerConfig) =>
  Effect.gen(function*() {
    const dir = config.definitionsDir
    if (dir === undefined) return
    const files = yield* DefinitionsDirectory.read(dir)
    for (const outcome of yield* DefinitionsApplier.applyAsBootstrapAdmin(files)) {
      yield* Console.log(`Definitions: ${Definitions.describeOutcome(outcome)}`)
    }
  }).pipe(
    Effect.provide(NodeContext.layer),
    Effect.mapError((e) =>
      new DefinitionsNotApplied({ message: `AGENT_RUNS_DEFINITIONS_DIR (${config.definitionsDir}): ${e.message}` })
    )
  )

const banner = (config: ServerConfig, tokenExpression: string) =>
  Effect.gen(function*() {
    const address = yield* HttpServer.addressFormattedWith((url) => Effect.succeed(url))
    const storage = config.database._tag === "Sqlite" ? `SQLite at ${shown(config.database.filename)}` : "PostgreSQL"
    yield* Console.log(
      [
        `Agent Runs is serving ${config.publicUrl} (listening on ${address}; ${storage})`,
        `  API docs:  ${config.publicUrl}/docs   OpenAPI: ${config.publicUrl}/openapi.json`,
        `  Dashboard: ${config.publicUrl}/app (sign in with the token)`,
        `  Try it:`,
        `    curl -s -H "Authorization: Bearer ${tokenExpression}" -H 'content-type: application/json' \\`,
        `      -d '{"prompt":"Say hello"}' ${config.publicUrl}/api/v1/agent/runs`,
        `    curl -s -H "Authorization: Bearer ${tokenExpression}" ${config.publicUrl}/api/v1/agent/runs`
      ].join("\n")
    )
  })

/**
 * Node's HTTP server. On shutdown it stops accepting at once; connections still open 2 s later are
 * closed, so that a client polling `/readyz` over keep-alive cannot keep a failed start-up (or a
 * stopping server) alive.
 */
const httpServerLayer = (config: ServerConfig) => {
  const server = createServer()
  const forceClose = Layer.scopedDiscard(
    Effect.addFinalizer(() => Effect.sync(() => setTimeout(() => server.closeAllConnections(), 2000).unref()))
  )
  return forceClose.pipe(Layer.provideMerge(NodeHttpServer.layer(() => server, { port: config.port, host: config.host })))
}

/** A directory the server needs cannot be created or written: it does not start. */
export class DirectoryUnusable extends Data.TaggedError("DirectoryUnusable")<{ readonly message: string }> {}

/** Creates `dir` (one level at a time: never hangs, see @agent-runs/node-fs) and checks that it is writable. */
const usableDirectory = (dir: string, setting: string) =>
  Effect.try({
    try: () => {
      Directories.ensureDirectory(dir)
      accessSync(dir, constants.W_OK)
    },
    catch: (cause) => {
      const code = (cause as NodeJS.ErrnoException).code
      const reason = code === "EACCES" || code === "EPERM" || code === "EROFS"
        ? `${dir} is not writable by this user`
        : `cannot create ${dir} (${(cause as Error).message})`
      return new DirectoryUnusable({
        message: `${setting}: ${reason}: set ${setting} to a directory this user can create and write`
      })
    }
  })

export interface ServerLiveOptions {
  /** Runs once start-up work is done (the server listens, the bootstrap token exists, the API answers, the banner is printed). */
  readonly onStarted?: Effect.Effect<void>
}

/**
 * The start-up work once the server listens: the bootstrap token, the definitions, then the API
 * answers and the banner says so. Built after the HTTP server, it is stopped before it: its
 * finalizer drains (LiveExecutions.ts) while `/readyz` can still answer 503.
 */
const startupLayer = (config: ServerConfig, options: ServerLiveOptions) =>
  Layer.scopedDiscard(
    Effect.gen(function*() {
      yield* Effect.addFinalizer(() =>
        Effect.logInfo("stopping: no more runs are claimed; running agents may finish").pipe(Effect.zipRight(Dispatcher.drain))
      )
      const token = yield* bootstrap(config)
      yield* applyDefinitions(config)
      yield* Server.started
      yield* banner(config, token)
      yield* options.onStarted ?? Effect.void
    })
  )

/** The whole server for a configuration; building it listens, launching it serves until interrupted. */
export const ServerLive = (config: ServerConfig, options: ServerLiveOptions = {}) =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      yield* usableDirectory(config.dataDir, "AGENT_RUNS_DATA_DIR")
      yield* usableDirectory(config.blobDir, "AGENT_RUNS_BLOB_DIR")
      yield* usableDirectory(config.execution.reposDir, "AGENT_RUNS_REPOS_DIR")
      // First: it may make the data directory private before anything is written into it.
      const execution = yield* setUpExecution(config)
      const keys: Keys = { secretKey: yield* secretKeyOf(config), otherSecretKeys: yield* otherKeysOf(config) }
      // The start-up work after the app serves, so that it stops first: its drain happens while the
      // app still answers.
      return startupLayer(config, options).pipe(
        Layer.provide(Server.serveApp),
        Layer.provideMerge(httpServerLayer(config)),
        Layer.provide(AgentRuns.layer(agentRunsOptions(config, execution, keys)))
      )
    })
  )
