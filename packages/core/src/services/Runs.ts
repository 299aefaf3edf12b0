/**
 * The runs application service (docs/reference/run-lifecycle.md): create, get, list, cancel and the timeline
 * of runs, over the storage ports, with the caller's access checked on every call. HTTP status
 * codes belong to packages/http; this module fails with the tagged errors of `Errors.ts`.
 *
 * Decisions:
 * - Services take decoded requests: the transport decodes bodies (400 naming the field, before
 *   any service runs); then create refuses a viewer (403), then checks referenced resources (403).
 * - A referenced environment, parent run or `config.agent_identity_uid` principal that is unknown
 *   or that the caller may not use is a 403 `not_authorized` naming the field (no permission for
 *   a referenced resource); unknown and hidden answer alike, so nothing leaks.
 *   An environment is usable when the caller sees it (Access.canSee), is one of its guests, or
 *   opened its share link while link sharing is on.
 * - A run uses its own team's repositories: an environment naming one the team does not have (a
 *   guest's environment of another team, or a repository removed since) is a 400 naming
 *   `config.environment_id` (Repositories.ts).
 * - `conversation_id` starts the run from a saved conversation: the new run carries that
 *   conversation id and its agent gets the conversation so far as its history (RunExecutions'
 *   claim). The caller must see every run of the conversation and one of them must have saved
 *   it; otherwise 403 naming `conversation_id` (unknown and hidden alike, as for environments).
 *   An id that is not a UUIDv7 is a 400 naming it.
 * - `images` (checked by the request's schema: type, base64, size, signature) are kept in one
 *   blob (`runImagesKey`) written before the run; every execution of the run gets them as
 *   attachments. A service composed without a BlobStore refuses them (422).
 * - The title defaults to the prompt's first non-blank line, trimmed, cut to 100 characters
 *   (99 and "…"). A blank `title` counts as absent.
 * - Runs created here execute `REMOTE`; the source is the caller's (API by default). The executor
 *   is the creator, or the `config.agent_identity_uid` principal, which must belong to the team.
 * - Admission happens in the creating write: the run is written once, in one transaction, with
 *   `run_created`, `run_pending` and (when admitted) `run_queued`. It is admitted when the team's
 *   runs holding capacity are fewer than `max_concurrent_runs` and no older run of the team waits
 *   PENDING (oldest first); otherwise it stays PENDING with `at_capacity: true`. The check reads
 *   then writes, so concurrent creates can each see the last free slot; the dispatcher admits
 *   waiting runs as capacity frees.
 * - Events recorded outside a lease (creation, cancel of a QUEUED run) carry the run's latest
 *   execution id: a fresh one at creation, then the one of its latest timeline event.
 * - A run id that is not a UUIDv7 is a 400 naming `runId` (a malformed id, as the issue's
 *   validation rules say); a well-formed id of an unknown or hidden run is a 404.
 * - `ancestor_run_id` in a list must name a run the caller can see, else 400 naming it.
 * - The run counts (`counts`) check their filters as the list does (400s, 403
 *   feature_not_available, the ancestor) and count the runs the list would show the caller.
 * - Cancel checks 404 (unknown or hidden), then 403 (a viewer), then RunStateMachine's
 *   422 → 400 → 409. The write is guarded by the state read (and the lease holder); a lost race
 *   re-reads and decides again once, then answers 409 retryable. Cancel only records the state
 *   change: the dispatcher holding the run observes CANCELLED (its guarded writes and lease
 *   renewals fail) and stops the agent.
 * - `is_sandbox_running` is true while an executor holds the run (CLAIMED, INPROGRESS) or a
 *   failed setup's sandbox is retained; `is_run_type_cancellable` follows RunStateMachine.
 * - A run for a self-hosted worker (`agent_config.worker_host`) that is not connected when the
 *   run is queued gets a `run_queued` event saying it waits for that worker (Workers.ts); one that
 *   never connects (an unknown worker) fails after the worker wait (LeaseSweep). `worker_host:
 *   "warp"` (MANAGED_WORKER_HOST) is the service's own executors: the run names no worker.
 * - A `skill_spec` (or `skill`) is resolved by `Skills.resolve` (an unknown or malformed skill is
 *   a 400 naming the field): the resolved configuration names it by its id
 *   (`owner/repo:path/to/SKILL.md`), `name` defaults to the skill's name and `base_prompt` to its
 *   body; `agent_skill` is set (`full_path`: `<repo>/<path>`, where executors clone it). A `skill`
 *   list filter in the name form matches the runs of the skill it resolves to.
 * - MCP servers are checked by `McpServers.checkMcpServers` (403 for a server or secret the
 *   caller may not use); the run keeps them as given, secrets are resolved only at execution.
 * - A storage failure is a 503 `resource_unavailable` (retryable), logged with its cause; the
 *   caller never sees the cause.
 * - Quotas (Quotas.ts): a `prompt` or `config.base_prompt` over `promptBytes`, or a `title` over
 *   `titleBytes`, is a 413 naming the field, checked right after the viewer check. A team creates
 *   at most `runsPerMinute` runs a minute, whatever creates them (API, run token, schedule,
 *   webhook): the quota is taken once a request is checked, just before the write, all of an
 *   event's runs or none (429 with `Retry-After`, nothing written), and given back when the write
 *   fails (a duplicate delivery or tick, storage), so replays never spend it. A list page stops
 *   before the item that would take its JSON over `listBytes` (at least one item), `next_cursor`
 *   continuing after the last item sent.
 */
import { Clock, DateTime, Effect, Either, Option } from "effect"
import type { Tracer } from "effect"
import { actAsProblem, canChange, canCreate, canSee, leastRole, scopeFor, shaperOf, shapersToRecord } from "../domain/Access.js"
import { adminOnlySecretOf, shapedSecretProblem } from "../domain/AdminOnlySecrets.js"
import { costOf, leftOf, resolveBudget } from "../domain/Budget.js"
import { parentProblem } from "../domain/BudgetAccess.js"
import { heldBy } from "../domain/BudgetTree.js"
import { checkGitHubTokenRequest } from "../domain/AgentGitHubToken.js"
import type { Shaper, Viewer } from "../domain/Access.js"
import { runTokenRoleOf } from "../domain/RunTokenRole.js"
import { Audit } from "./Audit.js"
import type { PrincipalRef } from "../domain/Common.js"
import { MAX_ARTIFACTS_PER_RUN, stampArtifact } from "../domain/Artifact.js"
import type { ArtifactReport } from "../domain/Artifact.js"
import { parseSkillSpec } from "../domain/Agent.js"
import {
  AuthenticationRequired,
  Conflict,
  InvalidRequest,
  NotAuthorized,
  OperationNotSupported,
  RateLimited,
  ResourceNotFound
} from "../domain/Errors.js"
import { PayloadTooLarge } from "../domain/Errors.js"
import { Ids } from "../domain/Ids.js"
import type { ConversationId, EnvironmentUid, PrincipalUid, RunId, TeamUid } from "../domain/Ids.js"
import { runImagesKey } from "../domain/BlobKeys.js"
import { BlobStore } from "../ports/BlobStore.js"
import { activeMemberships, type Principal, type Team } from "../domain/Identity.js"
import { usableBy } from "./Environments.js"
import { EnvironmentStore } from "../ports/EnvironmentStore.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { checkMcpServers } from "../domain/McpServers.js"
import { checkHarnessAuth, resolveHarness } from "../domain/HarnessSelection.js"
import { harnessSelectionOf } from "../domain/Environment.js"
import { RepoSource } from "../ports/RepoSource.js"
import { checkRepoRefs, checkRunRepositories } from "./Repositories.js"
import { RunStore, runListRow } from "../ports/RunStore.js"
import { SecretStore } from "../ports/SecretStore.js"
import { WorkerStore } from "../ports/WorkerStore.js"
import type { RunCredential } from "../ports/RunTokens.js"
import type { Carve, NewRun, RunJson, StoredRun } from "../ports/RunStore.js"
import type { StoredEnvironment } from "../ports/EnvironmentStore.js"
import { DuplicateKey } from "../ports/Storage.js"
import type { ExactlyOnceKey, ScheduleTickKey, StorageError } from "../ports/Storage.js"
import { imageName, ListRunsResponse, RunAgentResponse, RunCountsResponse, RunItem } from "../domain/Run.js"
import type { AgentConfig, ImageInput, RunAgentRequest, RunScheduleRef } from "../domain/Run.js"
import { checkPromptSizes, checkSize, fittingCount, Quotas, utf8Bytes } from "../domain/Quotas.js"
import { makeLimiter } from "../domain/RateLimit.js"
import { encodeCursor, parseRunCountQuery, parseRunListQuery, requireRunListFeatures } from "../domain/RunQuery.js"
import type { RunListPage, RunListQuery, RunListQueryParams, RunListRow } from "../domain/RunQuery.js"
import { RunState } from "../domain/RunState.js"
import type { RunSourceType } from "../domain/RunState.js"
import {
  CreationTimeline,
  decideCancel,
  isRunTypeCancellable,
  newRunSnapshot,
  RunEvent,
  transition
} from "../domain/RunStateMachine.js"
import { storageUnavailable } from "../internal/Services.js"
import {
  applyTransition,
  currentExecution,
  eventsAt,
  guardOf,
  holds,
  noteAbsentWorker,
  parseRunId,
  presentRun,
  requireVisibleRun as requireVisibleRunOf,
  requireVisibleRunJson,
  runOwnership,
  runSnapshot,
  visibleRun as visibleRunOf
} from "../domain/RunRecords.js"
import { logCreated, logTransition } from "../domain/RunLog.js"
import { Skills } from "./Skills.js"
import { RunTimeline } from "../domain/Timeline.js"

/** The longest default title, in characters (code points). */
export const MAX_DEFAULT_TITLE_LENGTH = 100

/** The default title of a run: the prompt's first non-blank line, trimmed, cut with "…". */
export const defaultTitle = (prompt: string): string => {
  const line = prompt.split(/\r\n|\r|\n/).map((l) => l.trim()).find((l) => l !== "") ?? ""
  const chars = Array.from(line)
  return chars.length <= MAX_DEFAULT_TITLE_LENGTH ? line : `${chars.slice(0, MAX_DEFAULT_TITLE_LENGTH - 1).join("")}…`
}

const principalRef = (p: Principal): PrincipalRef => ({ type: p.type, uid: p.uid, display_name: p.display_name })

/** A skill as `Skills.resolve` finds it. */
type ResolvedSkill = Effect.Effect.Success<ReturnType<Skills["resolve"]>>

/** What a new run is made of, everything read and decided. */
interface NewRunFacts {
  readonly run_id: RunId
  readonly conversation_id: ConversationId
  readonly now: number
  readonly team: TeamUid
  readonly at_capacity: boolean
  readonly state: RunState
  readonly cancellable: boolean
  readonly request: RunAgentRequest
  readonly options: CreateOptions
  readonly viewer: Viewer
  readonly creator: PrincipalRef
  readonly executor: PrincipalRef
  readonly config: AgentConfig
  readonly environment_id: EnvironmentUid | null
  readonly skill: ResolvedSkill | undefined
  readonly parent: StoredRun | undefined
  /** The span creating the run (its trace is the run's), when there is one. */
  readonly span: Tracer.AnySpan | undefined
}

const TRACE_ID = /^(?!0{32}$)[0-9a-f]{32}$/
const SPAN_ID = /^(?!0{16}$)[0-9a-f]{16}$/

/**
 * The trace a new run keeps (docs/observability.md): the creating span's, when it is sampled (an
 * unsampled run's executions start traces of their own, sampled as such) and its ids are valid
 * W3C ids (a tracer that records nothing has none).
 */
const traceOf = (span: Tracer.AnySpan | undefined): Pick<RunItem, "trace_id" | "trace_span_id"> =>
  span !== undefined && span.sampled && TRACE_ID.test(span.traceId) && SPAN_ID.test(span.spanId)
    ? { trace_id: span.traceId, trace_span_id: span.spanId }
    : {}

/** A new run as stored, from its facts. */
const newStoredRun = (f: NewRunFacts): StoredRun => {
  const at = DateTime.unsafeMake(f.now)
  const { request, skill, parent } = f
  return {
    team_uid: f.team,
    lease: null,
    at_capacity: f.at_capacity,
    sandbox_retained: false,
    has_conversation: false,
    item: new RunItem({
      run_id: f.run_id,
      task_id: f.run_id,
      title: request.title !== undefined && request.title.trim() !== "" ? request.title : defaultTitle(request.prompt),
      prompt: request.prompt,
      state: f.state,
      created_at: at,
      updated_at: at,
      started_at: null,
      ended_at: null,
      session_id: null,
      session_link: null,
      conversation_id: f.conversation_id,
      agent_config: f.config,
      agent_skill: skill === undefined
        ? null
        : { name: skill.name, description: skill.description, full_path: `${skill.repo}/${skill.path}` },
      creator: f.creator,
      executor: f.executor,
      source: f.options.source,
      execution_location: "REMOTE",
      environment_id: f.environment_id,
      schedule: f.options.schedule ?? null,
      parent_run_id: parent?.item.run_id ?? null,
      ancestor_run_ids: parent === undefined ? [] : [...parent.item.ancestor_run_ids, parent.item.run_id],
      metadata: { ...request.metadata, ...f.options.metadata },
      artifacts: [],
      status_message: null,
      request_usage: { input_tokens: 0, output_tokens: 0, inference_cost: 0, compute_cost: 0 },
      is_sandbox_running: false,
      is_run_type_cancellable: f.cancellable,
      scope: scopeFor(f.viewer, request.team),
      attempt: 1,
      execution_count: 1,
      ...traceOf(f.span)
    })
  }
}

/**
 * How a run comes to be: its source, the schedule that fired it, metadata added to the request's,
 * and who else shaped what it will execute (an automation's last editor).
 */
export interface CreateOptions {
  readonly source: RunSourceType
  readonly schedule?: RunScheduleRef | undefined
  readonly metadata?: Readonly<Record<string, string>> | undefined
  readonly shapers?: ReadonlyArray<Shaper> | undefined
}

/** One run request of an event (a cron tick, a webhook delivery), made as `viewer`. */
export interface EventRunRequest {
  readonly viewer: Viewer
  readonly request: RunAgentRequest
  readonly options: CreateOptions
}

/**
 * Why a run request was refused (the caller may not, a referenced resource is unusable, a field is
 * too large, its parent's budget is spent).
 */
export type RunRefusal = NotAuthorized | OperationNotSupported | InvalidRequest | PayloadTooLarge | Conflict

/**
 * The `worker_host` of the managed host ("warp" in the SDK: "if not specified or set to warp, the
 * task runs on hosted workers"): a run naming it runs on this service's own executors, as one
 * naming no worker does, and its resolved configuration names no worker.
 */
export const MANAGED_WORKER_HOST = "warp"

/** What a list page's JSON holds besides its items (`{"runs":[`, `page_info` with a cursor), generously. */
const LIST_PAGE_OVERHEAD = 1024

/** The size of a run item's JSON, in bytes (DateTimes serialize as their ISO strings, as on the wire). */
export const runItemBytes = (item: RunItem): number => utf8Bytes(JSON.stringify(item))

/** The body of `GET /agent/runs` from a page of `Runs.listJson`. */
export const listJsonText = (page: RunListPage<RunJson>): string =>
  `{"runs":[${page.rows.map((r) => r.json).join(",")}],"page_info":${JSON.stringify(page.page_info)}}`

/** A checked run request, ready to write. */
interface PreparedRun {
  readonly write: NewRun & { readonly shapers: ReadonlyArray<Shaper> }
  readonly environment: StoredEnvironment | undefined
  readonly images: ReadonlyArray<ImageInput>
  readonly response: RunAgentResponse
  /** Its budget carved out of its parent's, checked again as it is written (Budget.ts). */
  readonly carve: Carve | undefined
}

/**
 * Reads shared by the runs prepared together (one request, one event, the ticks of one scheduler
 * pass): each team, principal and team's admission counts (runs holding capacity, whether one
 * waits) is read once, and `ahead` counts, per team, the runs prepared since then (written, or
 * about to be), which hold capacity the counts do not show. Runs that end up not written are
 * taken off again; runs that end meanwhile are not seen, so a shared read only ever errs towards
 * PENDING (the dispatcher admits waiting runs as capacity frees).
 */
export interface CreationLookups {
  readonly teams: Map<TeamUid, Option.Option<Team>>
  readonly principals: Map<PrincipalUid, Option.Option<Principal>>
  readonly admission: Map<TeamUid, { readonly active: number; readonly waiting: boolean }>
  readonly ahead: Map<string, number>
}
type Lookups = CreationLookups

/** Fresh lookups: nothing read yet. */
export const newLookups = (): CreationLookups => ({ teams: new Map(), principals: new Map(), admission: new Map(), ahead: new Map() })

/** `read(key)`, read once per `cache`. */
const memo = <K, A, E, R>(cache: Map<K, A>, key: K, read: (key: K) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const found = cache.get(key)
    if (found !== undefined || cache.has(key)) return Effect.succeed(found as A)
    return Effect.tap(read(key), (value) => Effect.sync(() => cache.set(key, value)))
  })

/** The runs of one cron tick for `Runs.createForTicks`: its requests and its exactly-once key. */
export interface TickRequests {
  readonly key: ScheduleTickKey
  readonly requests: ReadonlyArray<EventRunRequest>
}

/**
 * What became of one tick of `Runs.createForTicks`: its runs (created), or why none was: the key
 * was taken before (DuplicateKey), a request was refused, or the team's creation quota was full.
 */
export type TickCreation = Either.Either<ReadonlyArray<RunAgentResponse>, DuplicateKey | RunRefusal | RateLimited>

/** The runs service: every run endpoint's logic, with access checks, over the ports. */
/** A run as an audited resource (a raw id from a path is cut to a run id's length and more). */
const resource = (id: string | null) => ({ type: "run", id: id === null ? null : id.slice(0, 64) })

export class Runs extends Effect.Service<Runs>()("@agent-runs/core/Runs", {
  dependencies: [Skills.Default, Audit.Default],
  effect: Effect.gen(function* () {
    const audit = yield* Audit
    const store = yield* RunStore
    const environments = yield* EnvironmentStore
    const identities = yield* IdentityStore
    const secrets = yield* SecretStore
    const skills = yield* Skills
    const ids = yield* Ids
    const repositories = yield* RepoSource
    // Worker presence, where the storage offers it: a run queued for a self-hosted worker that is
    // not connected says so in its `run_queued` event.
    const workers = yield* Effect.serviceOption(WorkerStore)
    const quotas = yield* Quotas
    // Where a run's images are kept (`images`); a service without one refuses them.
    const blobs = yield* Effect.serviceOption(BlobStore)
    // Runs created per team in the last minute (this process's).
    const creations = makeLimiter({ max: quotas.runsPerMinute, windowMs: 60_000 })
    let prunedAt = 0

    /**
     * Writes `prepared` with `write` under the run-creation quota of each team, all or none: 429
     * with `Retry-After` (nothing written) when a team's runs of the last minute leave no room for
     * them. The quota is taken before the write and given back when the write fails (a duplicate
     * event, storage), so only runs actually written count.
     */
    const withCreationQuota = <A, E>(prepared: ReadonlyArray<PreparedRun>, write: Effect.Effect<A, E>) =>
      Effect.gen(function* () {
        const taken = takeQuota(prepared, yield* Clock.currentTimeMillis)
        if (Either.isLeft(taken)) return yield* taken.left
        return yield* write.pipe(Effect.onError(() => Effect.sync(() => refundQuota(taken.right))))
      })

    /** Takes the creation quota of `prepared` (runs per team) at `now`, all or none; RateLimited when a team has no room. */
    const takeQuota = (prepared: ReadonlyArray<PreparedRun>, now: number): Either.Either<Map<string, number>, RateLimited> => {
      if (now - prunedAt >= 60_000) {
        creations.prune(now)
        prunedAt = now
      }
      const perTeam = new Map<string, number>()
      for (const p of prepared) perTeam.set(p.write.run.team_uid, (perTeam.get(p.write.run.team_uid) ?? 0) + 1)
      for (const [team, count] of perTeam) {
        const decision = creations.check(team, now, count)
        if (!decision.allowed) {
          return Either.left(
            new RateLimited({
              message: `runs: over the team's quota of ${quotas.runsPerMinute} runs in the last minute; ` +
                `try again in ${Math.ceil(decision.retryAfterMs / 1000)} s`,
              retryAfterSeconds: Math.max(1, Math.ceil(decision.retryAfterMs / 1000))
            })
          )
        }
      }
      for (const [team, count] of perTeam) creations.take(team, now, count)
      return Either.right(perTeam)
    }

    /** Gives back quota taken by `takeQuota` (the write failed or wrote nothing). */
    const refundQuota = (perTeam: ReadonlyMap<string, number>) => perTeam.forEach((count, team) => creations.refund(team, count))

    /** The viewer's team; a team that no longer exists refuses the caller. */
    const teamOf = (viewer: Viewer, lookups?: Lookups) =>
      Effect.flatMap(
        lookups === undefined ? identities.getTeam(viewer.team_uid) : memo(lookups.teams, viewer.team_uid, identities.getTeam),
        Option.match({
          onNone: () => Effect.fail(new NotAuthorized({ message: `team ${viewer.team_uid} does not exist` })),
          onSome: (team: Team) => Effect.succeed(team)
        })
      )

    const visibleRun = (viewer: Viewer, runId: RunId) => visibleRunOf(store, viewer, runId)
    const requireVisibleRun = (viewer: Viewer, rawId: string) => requireVisibleRunOf(store, viewer, rawId)

    const requireEnvironment = (viewer: Viewer, uid: EnvironmentUid) =>
      Effect.gen(function* () {
        const env = yield* environments.get(uid)
        const usable = Option.isSome(env) && (yield* usableBy(environments, viewer, env.value))
        if (!usable || Option.isNone(env)) {
          return yield* new NotAuthorized({
            message: `config.environment_id: no permission to use environment ${uid} (unknown or not shared with you)`
          })
        }
        return env.value
      })

    const requireParent = (viewer: Viewer, parentId: RunId) =>
      Effect.gen(function* () {
        const parent = yield* visibleRun(viewer, parentId)
        if (Option.isNone(parent)) {
          return yield* new NotAuthorized({ message: `parent_run_id: no permission to use run ${parentId}` })
        }
        return parent.value
      })

    /** A conversation to continue: every run of it visible to the viewer, one with a saved conversation; its runs. */
    const requireConversation = (viewer: Viewer, conversationId: ConversationId) =>
      Effect.gen(function* () {
        const runs = yield* store.findByConversation(conversationId)
        const usable = runs.length > 0 && runs.every((r) => canSee(viewer, runOwnership(r))) &&
          runs.some((r) => r.has_conversation)
        if (!usable) {
          return yield* new NotAuthorized({
            message: `conversation_id: no saved conversation ${conversationId} that you can see; ` +
              "send the conversation_id of a run of yours that has started"
          })
        }
        return runs
      })

    /**
     * Who shaped earlier runs a new run goes on from (its parent, the runs of the conversation it
     * continues): what was recorded for them, and their creators and executors with their roles now.
     */
    const shapersOfRuns = (runs: ReadonlyArray<StoredRun>) =>
      runs.length === 0
        ? Effect.succeed([])
        : Effect.map(store.shapers(runs.map((r) => r.item.run_id)), (recorded): ReadonlyArray<Shaper> => [
          ...recorded,
          ...runs.flatMap((r) => [r.item.creator.uid, r.item.executor.uid].map((uid): Shaper => ({ uid, role: "admin" })))
        ])

    const principalOf = (uid: PrincipalUid, field: string, lookups: Lookups) =>
      Effect.flatMap(
        memo(lookups.principals, uid, identities.getPrincipal),
        Option.match({
          onNone: () => Effect.fail(new NotAuthorized({ message: `${field}: principal ${uid} does not exist` })),
          onSome: (p: Principal) => Effect.succeed(p)
        })
      )

    /**
     * Refuses (403 naming `config.environment_id`) a run whose agent would hold a secret only
     * admins may hand out (AdminOnlySecrets.ts) in an environment someone with fewer rights last
     * changed (the role it changed it with, or its role now).
     */
    const checkSecretsIn = (environment: StoredEnvironment, config: AgentConfig, team: TeamUid, lookups: Lookups) =>
      Effect.gen(function* () {
        if (adminOnlySecretOf(config) === undefined) return
        const editor = Option.getOrUndefined(yield* memo(lookups.principals, environment.editor.uid, identities.getPrincipal))
        const role = leastRole([environment.editor.role, editor === undefined ? undefined : activeMemberships(editor).find((m) => m.team_uid === team)?.role])
        const problem = shapedSecretProblem(config, role)
        if (problem === undefined) return
        return yield* new NotAuthorized({
          message: `config.environment_id: environment ${environment.item.uid} was last changed by someone who is not a team admin: ${problem}`
        })
      })

    /**
     * A request's first checks, in this order: the viewer may create; sizes; the conversation it
     * continues (its runs, returned); images need a blob store.
     */
    const checkRequest = (viewer: Viewer, request: RunAgentRequest) =>
      Effect.gen(function* () {
        if (!canCreate(viewer)) return yield* new NotAuthorized({ message: "viewers cannot create runs" })
        yield* checkPromptSizes(quotas, request.prompt, request.config, "config")
        yield* checkSize("title", request.title, quotas.titleBytes)
        const continued = request.conversation_id === undefined ? [] : yield* requireConversation(viewer, request.conversation_id)
        if (request.images !== undefined && request.images.length > 0 && Option.isNone(blobs)) {
          return yield* new OperationNotSupported({ message: "images: this service keeps no files (no blob store)" })
        }
        return continued
      })

    /**
     * What a request's configuration resolves to, its references checked for `viewer`: the
     * executor (`agent_identity_uid`), the environment and its repositories, the parent, the skill
     * (its id becomes the resolved skill_spec, its name the config name and its body the base
     * prompt, unless the request sets them), and the harness (the request's, then the skill's,
     * then the environment's, field by field).
     */
    const resolveConfig = (viewer: Viewer, request: RunAgentRequest, team: Team, creator: PrincipalRef, lookups: Lookups) =>
      Effect.gen(function* () {
        // `worker_host: "warp"` names the managed host, which is this service's own executors.
        const { worker_host: requestedHost, ...requested } = request.config ?? {}
        const config: AgentConfig = {
          ...requested,
          ...(requestedHost === undefined || requestedHost === MANAGED_WORKER_HOST ? {} : { worker_host: requestedHost }),
          ...(request.skillSpec === undefined ? {} : { skill_spec: request.skillSpec })
        }
        let executor = creator
        if (config.agent_identity_uid !== undefined) {
          const agent = yield* principalOf(config.agent_identity_uid, "config.agent_identity_uid", lookups)
          const problem = actAsProblem(viewer, agent)
          if (problem !== undefined) return yield* new NotAuthorized({ message: `config.agent_identity_uid: ${problem}` })
          executor = principalRef(agent)
        }
        const environment = config.environment_id === undefined
          ? undefined
          : yield* requireEnvironment(viewer, config.environment_id)
        if (environment !== undefined) {
          yield* checkRunRepositories(
            repositories,
            team.uid,
            { uid: environment.item.uid, repos: environment.item.config.github_repos },
            "config.environment_id"
          )
        }
        yield* checkRepoRefs(config.repo_refs, environment?.item, "config.repo_refs")
        const parentId = request.parent_run_id ?? viewer.acting_run_id
        const parent = parentId === undefined ? undefined : yield* requireParent(viewer, parentId)
        const misplaced = parent === undefined ? undefined : parentProblem(viewer, parent.item)
        if (misplaced !== undefined) return yield* new NotAuthorized({ message: misplaced })
        const skill = config.skill_spec === undefined
          ? undefined
          : yield* skills.resolve(viewer, config.skill_spec, request.skill !== undefined ? "skill" : "config.skill_spec")
        yield* checkMcpServers(secrets, viewer, config.mcp_servers)
        const harnessed = yield* resolveHarnessOf(viewer, config, skill, environment, team)
        const resolved: AgentConfig = { ...harnessed, ...(yield* budgetOf(config, environment, team, parent)) }
        const parentBudget = parent?.item.agent_config.max_cost_usd
        const carve = parent === undefined || parentBudget === undefined
          ? undefined
          : { parent_run_id: parent.item.run_id, parent_max_cost_usd: parentBudget }
        return { config, executor, environment, parent, skill, resolved, carve } as const
      })

    /**
     * A new run's budget (Budget.ts): asked, else its environment's default, else its team's; within
     * the team's ceiling and what its parent has left (409 naming `parent_run_id` when that is nothing).
     */
    const budgetOf = (config: AgentConfig, environment: StoredEnvironment | undefined, team: Team, parent: StoredRun | undefined) =>
      Effect.gen(function* () {
        const parentBudget = parent?.item.agent_config.max_cost_usd
        const left = parent === undefined || parentBudget === undefined
          ? null
          : leftOf(parentBudget, costOf(parent.item.request_usage) + heldBy(parent.item.run_id, yield* store.descendants(parent.item.run_id)))
        if (left === 0) {
          return yield* new Conflict({
            message: `parent_run_id: run ${parent?.item.run_id} has spent its budget of $${parentBudget} (config.max_cost_usd); ` +
              "its descendants draw on it, and nothing is left"
          })
        }
        return resolveBudget(config, environment?.item.config, team.budgets, left)
      })

    /**
     * The configuration with its harness resolved. Another team's environment (shared with a
     * guest) gives its harness, never the secret names of its team; and an agent CLI holding this
     * team's key does not run with that team's variables (an endpoint of theirs would receive the key).
     */
    const resolveHarnessOf = (
      viewer: Viewer,
      config: AgentConfig,
      skill: ResolvedSkill | undefined,
      environment: StoredEnvironment | undefined,
      team: Team
    ) =>
      Effect.gen(function* () {
        const withSkill: AgentConfig = skill === undefined
          ? config
          : { ...config, skill_spec: skill.id, name: config.name ?? skill.name, base_prompt: config.base_prompt ?? skill.body }
        const { github_token: _g, harness: _h, harness_auth_secrets: _a, ...rest } = withSkill
        const foreign = environment !== undefined && environment.team_uid !== team.uid
        const fromEnvironment = environment === undefined
          ? undefined
          : foreign
          ? { harness: harnessSelectionOf(environment.item.config).harness }
          : harnessSelectionOf(environment.item.config)
        const harness = resolveHarness([
          { harness: config.harness, harness_auth_secrets: config.harness_auth_secrets },
          skill?.harness,
          fromEnvironment
        ])
        if (foreign && harness.harness !== undefined && harness.harness.type !== "oz" && Object.keys(environment.item.config.env ?? {}).length > 0) {
          return yield* new NotAuthorized({
            message: `config.environment_id: environment ${environment.item.uid} belongs to another team and sets variables (env); ` +
              "an agent CLI with this team's key does not run with them"
          })
        }
        yield* checkHarnessAuth(secrets, viewer, config.harness_auth_secrets, harness)
        yield* checkGitHubTokenRequest(viewer, config.github_token, "config.github_token")
        // The team's GitHub token: the request's say, else its own team's environment's.
        const githubToken = config.github_token ?? (foreign ? undefined : environment?.item.config.github_token)
        const resolved: AgentConfig = { ...rest, ...harness, ...(githubToken === true ? { github_token: true } : {}) }
        return resolved
      })

    /**
     * Checks a run request of `viewer` and builds the run to write (not written yet): refuses a
     * viewer, checks references, decides admission. `pendingAhead` counts runs of the same team
     * prepared earlier in the same batch (they hold no capacity yet); `lookups` are the reads
     * shared by that batch.
     */
    const prepare = (
      viewer: Viewer,
      request: RunAgentRequest,
      options: CreateOptions,
      pendingAhead = 0,
      lookups: Lookups = newLookups()
    ) =>
      Effect.gen(function* () {
        const continued = yield* checkRequest(viewer, request)
        const team = yield* teamOf(viewer, lookups)
        const creatorPrincipal = yield* principalOf(viewer.principal_uid, "creator", lookups)
        const creator = principalRef(creatorPrincipal)
        const { carve, config, environment, executor, parent, resolved, skill } = yield* resolveConfig(viewer, request, team, creator, lookups)

        const { active, waiting } = yield* memo(lookups.admission, team.uid, store.admission)
        const atCapacity = active + pendingAhead >= team.max_concurrent_runs || waiting
        const now = yield* Clock.currentTimeMillis
        const runId = yield* ids.runId
        // A run that starts a conversation gives it its own id: the engine then knows, reading
        // nothing, that no run came before it (RunExecutions.ts).
        const conversationId = request.conversation_id ?? (runId as string as ConversationId)
        const executionId = yield* ids.executionId
        const snapshot = newRunSnapshot({ execution_location: "REMOTE", source: options.source, worker_host: config.worker_host })
        const admitted = transition(snapshot, RunEvent.Admit({ atCapacity }), now)
        if (Either.isLeft(admitted)) return yield* Effect.die(admitted.left)
        const run = newStoredRun({
          run_id: runId,
          conversation_id: conversationId,
          now,
          team: team.uid,
          at_capacity: atCapacity,
          state: admitted.right.run.state,
          cancellable: isRunTypeCancellable(snapshot),
          request,
          options,
          viewer,
          creator,
          executor,
          config: resolved,
          environment_id: config.environment_id ?? null,
          skill,
          parent,
          span: Option.getOrUndefined(yield* Effect.option(Effect.currentSpan))
        })
        const events = yield* noteAbsentWorker(
          workers,
          run,
          eventsAt([...CreationTimeline, ...admitted.right.timeline], now, executionId),
          now
        )
        // Who shaped what the run executes, besides its creator's role now (Access.runTokenRole).
        const shapers = shapersToRecord(
          shaperOf(viewer),
          creatorPrincipal.memberships.find((m) => m.team_uid === team.uid)?.role ?? viewer.role,
          [
            ...(options.shapers ?? []),
            ...(environment === undefined ? [] : [environment.editor]),
            ...(yield* shapersOfRuns([...continued, ...(parent === undefined ? [] : [parent])]))
          ]
        )
        if (environment !== undefined) yield* checkSecretsIn(environment, resolved, team.uid, lookups)
        const prepared: PreparedRun = {
          write: { run, events, shapers },
          environment,
          images: request.images ?? [],
          response: new RunAgentResponse({ run_id: runId, task_id: runId, state: run.item.state, at_capacity: atCapacity }),
          carve
        }
        return prepared
      })

    /** Writes prepared runs with `write` (their one transaction): their images first, then notes each environment's newest run. */
    const committing = <E>(prepared: ReadonlyArray<PreparedRun>, write: Effect.Effect<void, E>) =>
      Effect.gen(function* () {
        yield* keepImages(prepared)
        yield* write
        yield* afterCreate(prepared)
        return prepared.map((p) => p.response)
      })

    /** Writes prepared runs in one transaction (with `key`), then notes each environment's newest run. */
    const commit = (prepared: ReadonlyArray<PreparedRun>, key?: ExactlyOnceKey) =>
      committing(prepared, store.create(prepared.map((p) => p.write), key))

    /** Keeps the images of runs about to be written (first: a run is claimable as soon as it is written). */
    const keepImages = (prepared: ReadonlyArray<PreparedRun>) =>
      Effect.gen(function* () {
        for (const p of prepared) {
          if (p.images.length === 0 || Option.isNone(blobs)) continue
          const kept = p.images.map((image, i) => ({ name: imageName(image, i), mime_type: image.mime_type, data: image.data }))
          yield* blobs.value.put(runImagesKey(p.write.run.item.run_id), new TextEncoder().encode(JSON.stringify(kept)))
        }
      })

    /** After runs are written: logs each, and notes each environment's newest run (once per environment). */
    const afterCreate = (prepared: ReadonlyArray<PreparedRun>) =>
      Effect.gen(function* () {
        for (const p of prepared) yield* logCreated(p.write.run)
        // The environment's newest run of its own team: a guest's run in another team is not
        // shown to the environment's team (its title would leak across teams). The environment's
        // `updated_at` (configuration changes) stays as it was. One note per environment (the
        // last run of the batch for it).
        const newest = new Map<string, { environment: StoredEnvironment; run: StoredRun }>()
        for (const { environment, write: { run } } of prepared) {
          if (environment !== undefined && environment.team_uid === run.team_uid) newest.set(environment.item.uid, { environment, run })
        }
        for (const { environment, run } of newest.values()) {
          yield* environments.noteRun(environment.item.uid, {
            last_task_created: {
              id: run.item.run_id,
              title: run.item.title,
              state: run.item.state,
              created_at: run.item.created_at,
              updated_at: run.item.created_at,
              started_at: null
            }
          }).pipe(Effect.catchAll((e) => Effect.logWarning(`runs: could not note the environment's newest run`, e)))
        }
      })

    /**
     * Creates a run from a decoded `RunAgentRequest` (callers decode bodies with `decodeRequest`
     * or their transport's schema), admitted at once when the team has room. `source` is the
     * run's source, or every `CreateOptions` (a schedule's "run now" names its schedule).
     */
    const create = Effect.fn("Runs.create")(
      function* (viewer: Viewer, request: RunAgentRequest, source: RunSourceType | CreateOptions = "API") {
        const prepared = yield* prepare(viewer, request, typeof source === "string" ? { source } : source)
        // The entry written with the run (only that: the environment's note after it is best effort).
        const entry = yield* audit.succeeded(viewer, { action: "run.create", resource: resource(prepared.response.run_id) })
        const newRun = { ...prepared.write, audit: entry }
        // A child of a budgeted run: its share is checked again as it is written (children created at once).
        const written = prepared.carve === undefined
          ? store.create([newRun]).pipe(Effect.catchTag("DuplicateKey", Effect.die))
          : store.createChild(newRun, prepared.carve).pipe(Effect.catchTag("StaleWrite", () =>
            Effect.fail(new Conflict({
              message: `parent_run_id: run ${prepared.carve?.parent_run_id}'s budget changed while this run was created (another child took it); try again`,
              retryable: true
            }))))
        const [response] = yield* withCreationQuota([prepared], committing([prepared], written))
        return response!
      },
      storageUnavailable,
      audit.refusals("run.create", () => resource(null))
    )

    /** Checks each request of one event (`pendingAhead` counting the team's earlier ones); refusals kept apart. */
    const prepareEach = (requests: ReadonlyArray<EventRunRequest>, lookups: Lookups = newLookups()) =>
      Effect.gen(function* () {
        const ahead = lookups.ahead
        const results: Array<Either.Either<PreparedRun, RunRefusal>> = []
        for (const { options, request, viewer } of requests) {
          const n = ahead.get(viewer.team_uid) ?? 0
          const result: Either.Either<PreparedRun, RunRefusal> = yield* prepare(viewer, request, options, n, lookups).pipe(
            Effect.map((p) => Either.right(p)),
            Effect.catchTags({
              NotAuthorized: (e) => Effect.succeed(Either.left(e)),
              OperationNotSupported: (e) => Effect.succeed(Either.left(e)),
              InvalidRequest: (e) => Effect.succeed(Either.left(e)),
              PayloadTooLarge: (e) => Effect.succeed(Either.left(e))
            })
          )
          if (Either.isRight(result)) ahead.set(viewer.team_uid, n + 1)
          results.push(result)
        }
        return results
      })

    /**
     * Creates the runs of one event (a cron tick) at most once: every request is checked first
     * (the first refusal fails the whole batch and writes nothing), then the teams' creation quota
     * is taken (429 otherwise, nothing written), then all are written in one transaction with
     * `key`. When `key` was taken before: DuplicateKey, nothing written.
     */
    const createOnce = Effect.fn("Runs.createOnce")(
      function* (requests: ReadonlyArray<EventRunRequest>, key: ExactlyOnceKey) {
        const prepared: Array<PreparedRun> = []
        for (const result of yield* prepareEach(requests)) {
          if (Either.isLeft(result)) return yield* result.left
          prepared.push(result.right)
        }
        return yield* withCreationQuota(prepared, commit(prepared, key))
      },
      storageUnavailable
    )

    /**
     * Creates the runs of many cron ticks (the scheduler's batch), each tick at most once and as
     * `createOnce` would: each tick's requests are checked (the first refusal refuses the tick,
     * nothing written for it), then its teams' creation quota is taken (RateLimited for the tick
     * otherwise). The reads of the checks are those of `lookups` (`CreationLookups`: each team,
     * principal and team's admission counts read once for all the batches that share them, the
     * runs prepared since counted ahead of later ones, as within one event). Then the runs of
     * every tick that passed are written in one transaction (`RunStore.createTicks`); a tick whose
     * key was taken before writes nothing (DuplicateKey, naming the run that holds the key) and
     * gives its quota back. Answers each
     * tick's outcome, in order. When storage fails nothing is written, every quota is given back,
     * and the call fails.
     */
    const createForTicks = Effect.fn("Runs.createForTicks")(
      function* (ticks: ReadonlyArray<TickRequests>, lookups: CreationLookups = newLookups()) {
        const now = yield* Clock.currentTimeMillis
        const outcomes: Array<TickCreation> = []
        const accepted: Array<{ readonly index: number; readonly prepared: ReadonlyArray<PreparedRun>; readonly quota: Map<string, number> }> = []
        /** Takes runs that will not be written off `ahead`. */
        const notAhead = (prepared: ReadonlyArray<PreparedRun>) => {
          for (const p of prepared) {
            const team = p.write.run.team_uid
            lookups.ahead.set(team, Math.max(0, (lookups.ahead.get(team) ?? 0) - 1))
          }
        }
        for (const [index, { requests }] of ticks.entries()) {
          const results = yield* prepareEach(requests, lookups)
          const prepared = results.flatMap((r) => Either.isRight(r) ? [r.right] : [])
          const refusal = results.find(Either.isLeft)
          const quota = refusal === undefined ? takeQuota(prepared, now) : undefined
          if (refusal !== undefined || quota === undefined || Either.isLeft(quota)) {
            notAhead(prepared)
            outcomes.push(Either.left(refusal !== undefined ? refusal.left : (quota as Either.Left<RateLimited, unknown>).left))
            continue
          }
          outcomes.push(Either.right(prepared.map((p) => p.response)))
          accepted.push({ index, prepared, quota: quota.right })
        }
        const giveBack = Effect.sync(() =>
          accepted.forEach((a) => {
            refundQuota(a.quota)
            notAhead(a.prepared)
          })
        )
        yield* keepImages(accepted.flatMap((a) => a.prepared)).pipe(Effect.onError(() => giveBack))
        const written = yield* store.createTicks(
          accepted.map((a) => ({ key: ticks[a.index]!.key, runs: a.prepared.map((p) => p.write) }))
        ).pipe(Effect.onError(() => giveBack))
        const created: Array<PreparedRun> = []
        accepted.forEach((a, i) => {
          const write = written[i]!
          if (write.written) {
            created.push(...a.prepared)
          } else {
            refundQuota(a.quota)
            notAhead(a.prepared)
            outcomes[a.index] = Either.left(new DuplicateKey({ key: ticks[a.index]!.key, holder: write.holder }))
          }
        })
        yield* afterCreate(created)
        return outcomes as ReadonlyArray<TickCreation>
      },
      storageUnavailable
    )

    /**
     * Creates the runs of one event (a webhook delivery) at most once, leaving out the requests
     * that are refused: the others are written in one transaction with the key `keyFor` builds
     * from the ids of the runs about to be written (the key is taken even when none is). When the
     * key was taken before: DuplicateKey, nothing written. When the team's creation quota has no
     * room for all of the runs: 429, nothing written (the key is not taken, the event can come
     * again). Answers each request's response or refusal.
     */
    const createForEvent = Effect.fn("Runs.createForEvent")(
      function* (
        requests: ReadonlyArray<EventRunRequest>,
        keyFor: (runIds: ReadonlyArray<RunId>) => ExactlyOnceKey
      ) {
        const results = yield* prepareEach(requests)
        const prepared = results.flatMap((r) => Either.isRight(r) ? [r.right] : [])
        yield* withCreationQuota(prepared, commit(prepared, keyFor(prepared.map((p) => p.response.run_id))))
        return results.map(Either.map((p) => p.response))
      },
      storageUnavailable
    )

    /** One run the viewer can see (404 otherwise). */
    const get = Effect.fn("Runs.get")(
      function* (viewer: Viewer, runId: string) {
        return presentRun(yield* requireVisibleRun(viewer, runId))
      },
      storageUnavailable
    )

    /** The same run as `get`, as its wire JSON (RunJson.ts): the body of `GET /agent/runs/{id}`. */
    const getJson = Effect.fn("Runs.getJson")(
      function* (viewer: Viewer, runId: string) {
        return yield* requireVisibleRunJson(store, viewer, runId)
      },
      storageUnavailable
    )

    /**
     * A parsed run-list query as the store takes it, checked for the viewer: the team's features,
     * a skill named by name resolved, the ancestor visible.
     */
    const checkListQuery = (viewer: Viewer, parsed: RunListQuery) =>
      Effect.gen(function* () {
        const team = yield* teamOf(viewer)
        const checked = yield* requireRunListFeatures(parsed, team.features)
        // A skill filter naming a skill by name matches the runs of the skill it resolves to.
        const spec = checked.filters.skill_spec
        const query = spec === undefined || parseSkillSpec(spec)?.kind !== "name"
          ? checked
          : {
            ...checked,
            filters: {
              ...checked.filters,
              skill_spec: yield* skills.resolve(viewer, spec, "skill").pipe(
                Effect.map((s): string => s.id),
                Effect.orElseSucceed(() => spec)
              )
            }
          }
        const ancestor = query.filters.ancestor_run_id
        if (ancestor !== undefined && Option.isNone(yield* visibleRun(viewer, ancestor))) {
          return yield* InvalidRequest.forField("ancestor_run_id", `no run ${ancestor} that you can see`)
        }
        return query
      })

    /**
     * The page's rows that fit the response's size limit (`maxListBytes`): a page too large ends
     * early, its cursor continuing after its last row.
     */
    const fitted = <R>(
      query: RunListQuery,
      page: RunListPage<R>,
      bytesOf: (row: R) => number,
      listRowOf: (row: R) => Effect.Effect<RunListRow, StorageError>
    ) => {
      const fitting = fittingCount(page.rows, bytesOf, quotas.listBytes, LIST_PAGE_OVERHEAD)
      if (fitting === page.rows.length) return Effect.succeed(page)
      return Effect.map(listRowOf(page.rows[fitting - 1]!), (last): RunListPage<R> => ({
        rows: page.rows.slice(0, fitting),
        page_info: { has_next_page: true, next_cursor: encodeCursor(query, last) }
      }))
    }

    /** One page of the runs the viewer can see, as `GET /agent/runs` asks. */
    const list = Effect.fn("Runs.list")(
      function* (viewer: Viewer, params: RunListQueryParams) {
        const query = yield* checkListQuery(viewer, yield* parseRunListQuery(params))
        const page = yield* store.list(query, viewer)
        const runs = page.rows.map((run) => ({ run, item: presentRun(run) }))
        const fit = yield* fitted(query, { ...page, rows: runs }, (r) => runItemBytes(r.item), (r) =>
          Effect.succeed(runListRow(r.run)))
        // The page is built from runs already checked (stored, then presented): not checked again.
        return new ListRunsResponse({ runs: fit.rows.map((r) => r.item), page_info: fit.page_info }, true)
      },
      storageUnavailable
    )

    /**
     * The same page as `list`, each run as its wire JSON (RunJson.ts): the body of `GET /agent/runs`
     * without decoding and encoding every run (`listJsonText`).
     */
    const listJson = Effect.fn("Runs.listJson")(
      function* (viewer: Viewer, params: RunListQueryParams) {
        const query = yield* checkListQuery(viewer, yield* parseRunListQuery(params))
        const page = yield* store.listJson(query, viewer)
        // At most three bytes a character: a page under the limit by that bound needs no counting.
        if (page.rows.reduce((n, r) => n + r.json.length * 3 + 1, LIST_PAGE_OVERHEAD) <= quotas.listBytes) return page
        return yield* fitted(query, page, (r) => utf8Bytes(r.json), (r) => r.listRow)
      },
      storageUnavailable
    )

    /** How many of the runs the list would show the viewer are in each state, as `GET /agent/run-counts` asks. */
    const counts = Effect.fn("Runs.counts")(
      function* (viewer: Viewer, params: RunListQueryParams) {
        const query = yield* checkListQuery(viewer, yield* parseRunCountQuery(params))
        const byState = yield* store.countByState(query, viewer)
        const total = RunState.literals.reduce((sum, state) => sum + byState[state], 0)
        return new RunCountsResponse({ counts: byState, total }, true)
      },
      storageUnavailable
    )

    const cancelOnce = (viewer: Viewer, runId: RunId) =>
      Effect.gen(function* () {
        const found = yield* visibleRun(viewer, runId)
        if (Option.isNone(found)) return yield* ResourceNotFound.of("run", runId)
        const run = found.value
        if (!canChange(viewer, runOwnership(run))) {
          return yield* new NotAuthorized({ message: "viewers cannot cancel runs" })
        }
        const snapshot = runSnapshot(run)
        const decided = decideCancel(snapshot)
        if (Either.isLeft(decided)) return yield* decided.left
        const now = yield* Clock.currentTimeMillis
        const moved = transition(snapshot, RunEvent.Cancel(), now)
        if (Either.isLeft(moved)) return yield* Effect.die(moved.left)
        const execution = yield* currentExecution(store, ids, run)
        const next = applyTransition(run, moved.right, now)
        const write = store.update(runId, guardOf(run), next, eventsAt(moved.right.timeline, now, execution))
        yield* audit.recording(viewer, write, () => ({ action: "run.cancel", resource: resource(runId) }))
        yield* logTransition(run, next)
        return runId
      })

    /**
     * Cancels a run the viewer may change; returns its id. Only the state changes here: the
     * dispatcher holding the run observes CANCELLED and stops the agent.
     */
    const cancel = Effect.fn("Runs.cancel")(
      function* (viewer: Viewer, rawId: string) {
        const runId = yield* parseRunId(rawId)
        return yield* cancelOnce(viewer, runId).pipe(
          Effect.catchTag("StaleWrite", () => cancelOnce(viewer, runId)),
          Effect.catchTag(
            "StaleWrite",
            () => Effect.fail(new Conflict({ message: "the run changed while cancelling; try again", retryable: true }))
          )
        )
      },
      storageUnavailable,
      audit.refusals("run.cancel", (rawId: string) => resource(rawId))
    )

    /** The timeline of a run the viewer can see. */
    const timeline = Effect.fn("Runs.timeline")(
      function* (viewer: Viewer, runId: string) {
        const run = yield* requireVisibleRun(viewer, runId)
        const recorded = yield* store.timeline(run.item.run_id, 0)
        return new RunTimeline({ run_id: run.item.run_id, events: recorded })
      },
      storageUnavailable
    )

    /**
     * Records an artifact an agent reports with its run token: only while the token's execution
     * holds the run (CLAIMED or INPROGRESS under its lease); otherwise the token is no longer
     * valid (401). Answers the artifact stamped with the time.
     */
    const reportArtifact = Effect.fn("Runs.reportArtifact")(
      function* (credential: RunCredential, report: ArtifactReport) {
        const run = yield* store.get(credential.run_id)
        if (Option.isNone(run) || !holds(run.value, credential.execution_id)) {
          return yield* new AuthenticationRequired({ message: "the run token's execution is no longer running" })
        }
        if ((run.value.item.artifacts?.length ?? 0) >= MAX_ARTIFACTS_PER_RUN) {
          return yield* new PayloadTooLarge({ message: `a run keeps at most ${MAX_ARTIFACTS_PER_RUN} artifacts`, limitBytes: MAX_ARTIFACTS_PER_RUN })
        }
        const artifact = stampArtifact(report, DateTime.unsafeMake(yield* Clock.currentTimeMillis))
        yield* store.addArtifact(credential.run_id, artifact)
        return artifact
      },
      storageUnavailable
    )

    /**
     * The caller an agent's run token stands for, while its execution holds the run: the run's
     * executor in the run's team, acting for the run, with the least role of those who shaped it
     * (Access.runTokenRole); 401 once the execution ended, or once one of them left the team.
     */
    const actingViewer = Effect.fn("Runs.actingViewer")(
      function* (credential: RunCredential) {
        const run = Option.getOrUndefined(yield* store.get(credential.run_id))
        if (run === undefined || !holds(run, credential.execution_id)) {
          return yield* new AuthenticationRequired({ message: "the run token's execution is no longer running" })
        }
        const role = yield* runTokenRoleOf(store, identities, run)
        if (role === undefined) {
          return yield* new AuthenticationRequired({
            message: "the run token has no rights left: someone who shaped the run is no longer a member of its team"
          })
        }
        return {
          principal_uid: run.item.executor.uid,
          team_uid: run.team_uid,
          role,
          instance_admin: false,
          acting_run_id: run.item.run_id,
          ...(run.item.agent_config.max_cost_usd === undefined ? {} : { acting_run_max_cost_usd: run.item.agent_config.max_cost_usd }),
          display_name: run.item.executor.display_name
        } satisfies Viewer
      },
      storageUnavailable
    )

    return { create, createOnce, createForTicks, createForEvent, get, getJson, list, listJson, counts, cancel, timeline, reportArtifact, actingViewer } as const
  })
}) {}
