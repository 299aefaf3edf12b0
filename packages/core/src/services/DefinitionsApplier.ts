/**
 * Applies definition files (Definitions.ts) to a team, over `DefinitionsTarget`: a small record
 * of the operations applying needs. The server gives one over the core services
 * (`servicesTarget`, acting as the bootstrap administrator at start-up); the CLI gives one over
 * the HTTP API. Both run this one `apply`: parse, list what the team has (its GitHub connection,
 * webhooks, automations and outbound webhooks), check every team secret the files name, plan,
 * then (unless it is a dry run, and only when no file has an error) connect GitHub, create and
 * update webhooks, then automations (whose `webhookNames` need the new webhooks' uids), then
 * outbound webhooks (patched, then rotated to a changed `secretName`).
 *
 * Decisions:
 * - Nothing is applied while any file has an error (`DefinitionsRejected` lists them all).
 * - Applying what is already there changes nothing and calls no write operation; the outcome of
 *   each file says `created`, `updated` (with the keys that changed) or `unchanged`.
 * - A write the team refuses while applying (a concurrent change, storage down, the GitHub host
 *   refusing the credential) stops the apply: `DefinitionsApplyFailed` names the file, the
 *   refusal, and what was applied before it; applying again resumes (what is done is `unchanged`).
 * - Secrets are checked where their values are: a webhook's by the server (`secretProblem`, the
 *   webhooks' check), the GitHub connection's by name among the team's secrets (the host judges
 *   the value when connecting), an outbound webhook's by the server with its URL
 *   (`checkOutboundWebhook`), only when they are new or change (a restart does not depend on a
 *   receiver's DNS). The team's secrets are listed only when `github.yaml` names one, its outbound
 *   webhooks only when a file defines one.
 */
import { Data, Effect, Either } from "effect"
import type { Viewer } from "../domain/Access.js"
import type { Automation, CreateAutomationRequest, UpdateAutomationRequest } from "../domain/Automation.js"
import { Automations } from "./Automations.js"
import {
  automationCreateRequest,
  automationUpdateRequest,
  checkWebhookSecretRequest,
  describeOutcome,
  outboundChecks,
  parse,
  plan,
  planned,
  secretCheckKey,
  secretChecks,
  steps
} from "../domain/Definitions.js"
import type {
  DefinitionError,
  DefinitionFile,
  OutboundProblems,
  Outcome,
  Plan,
  SecretCheck,
  Step,
  WebhookRef,
  WebhookSecretCheck
} from "../domain/Definitions.js"
import type { ApiError } from "../domain/Errors.js"
import type { ConnectGitHubRequest, GitHubConnection } from "../domain/GitHub.js"
import type { AutomationId, OutboundWebhookUid, WebhookUid } from "../domain/Ids.js"
import type {
  CheckOutboundWebhookRequest,
  CheckOutboundWebhookResponse,
  CreateOutboundWebhookRequest,
  OutboundWebhook,
  PatchOutboundWebhookRequest,
  RotateOutboundSecretRequest
} from "../domain/OutboundWebhook.js"
import { OutboundWebhooks } from "./OutboundWebhooks.js"
import { noSuchSecret, type SecretName } from "../domain/Secret.js"
import { GitHubConnections } from "./GitHubConnections.js"
import { BOOTSTRAP_ADMIN_NAME, memberViewer } from "./Identities.js"
import { storageUnavailable } from "../internal/Services.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import type { CreateWebhookRequest, PatchWebhookRequest, Webhook } from "../domain/Webhook.js"
import { Secrets } from "./Secrets.js"
import { Webhooks } from "./Webhooks.js"

/** What applying definitions needs of a team, failing with `E`. */
export interface DefinitionsTarget<E> {
  /** The team's GitHub connection, or null. */
  readonly getGitHub: Effect.Effect<GitHubConnection | null, E>
  /** Connects the team to GitHub, or changes its connection (`PUT /agent/github`). */
  readonly connectGitHub: (request: ConnectGitHubRequest) => Effect.Effect<unknown, E>
  readonly listWebhooks: Effect.Effect<ReadonlyArray<Webhook>, E>
  readonly createWebhook: (request: CreateWebhookRequest) => Effect.Effect<Webhook, E>
  readonly patchWebhook: (uid: WebhookUid, request: PatchWebhookRequest) => Effect.Effect<Webhook, E>
  readonly listAutomations: Effect.Effect<ReadonlyArray<Automation>, E>
  readonly createAutomation: (request: CreateAutomationRequest) => Effect.Effect<Automation, E>
  readonly updateAutomation: (id: AutomationId, request: UpdateAutomationRequest) => Effect.Effect<Automation, E>
  /** Why the named team secret does not suit a webhook of this mode (absent included); undefined when it does. */
  readonly secretProblem: (check: WebhookSecretCheck) => Effect.Effect<string | undefined, E>
  /** The names of the team's secrets (never their values). */
  readonly listSecretNames: Effect.Effect<ReadonlyArray<SecretName>, E>
  readonly listOutboundWebhooks: Effect.Effect<ReadonlyArray<OutboundWebhook>, E>
  readonly createOutboundWebhook: (request: CreateOutboundWebhookRequest) => Effect.Effect<OutboundWebhook, E>
  readonly patchOutboundWebhook: (uid: OutboundWebhookUid, request: PatchOutboundWebhookRequest) => Effect.Effect<OutboundWebhook, E>
  readonly rotateOutboundSecret: (uid: OutboundWebhookUid, request: RotateOutboundSecretRequest) => Effect.Effect<OutboundWebhook, E>
  /** Whether an outbound webhook's URL and team secret would do (`POST /agent/outbound-webhooks/check`). */
  readonly checkOutboundWebhook: (request: CheckOutboundWebhookRequest) => Effect.Effect<CheckOutboundWebhookResponse, E>
}

/** Files with errors: nothing was applied. */
export class DefinitionsRejected extends Data.TaggedError("DefinitionsRejected")<{
  readonly errors: ReadonlyArray<DefinitionError>
}> {
  override get message(): string {
    const n = this.errors.length
    return `${n} error${n === 1 ? "" : "s"} in the definitions; nothing was applied:\n` +
      this.errors.map((e) => `  ${e.message}`).join("\n")
  }
}

/** A write refused while applying: what was applied before it stays. */
export class DefinitionsApplyFailed<E> extends Data.TaggedError("DefinitionsApplyFailed")<{
  readonly path: string
  readonly cause: E
  readonly applied: ReadonlyArray<Outcome>
}> {
  /** The file, the refusal, and what was applied before it. */
  override get message(): string {
    const cause: unknown = this.cause
    const refusal = typeof cause === "object" && cause !== null && "message" in cause ? String(cause.message) : String(cause)
    return [
      `${this.path}: not applied: ${refusal}`,
      ...(this.applied.length === 0 ? ["Nothing was applied before it."] : [
        "Applied before it (applying again resumes):",
        ...this.applied.map((o) => `  ${describeOutcome(o)}`)
      ])
    ].join("\n")
  }
}

/** Patches an outbound webhook's fields, then rotates it to its file's team secret, as far as each is needed. */
const updateOutbound = <E>(target: DefinitionsTarget<E>, step: Extract<Step, { _tag: "UpdateOutboundWebhook" }>) =>
  Effect.gen(function*() {
    if (step.patch !== null) yield* target.patchOutboundWebhook(step.current.uid, step.patch)
    if (step.rotate !== null) yield* target.rotateOutboundSecret(step.current.uid, step.rotate)
    return undefined
  })

/**
 * The write of a step, answering the uid or id of what it created; none for a step that keeps.
 * `created` holds the uids of the webhooks created so far, by name (for the automations' refs).
 */
const writeOf = <E>(
  target: DefinitionsTarget<E>,
  step: Step,
  created: Map<string, WebhookUid>
): Effect.Effect<string | undefined, E> | undefined => {
  const uids = (refs: ReadonlyArray<WebhookRef>) => refs.map((r) => (r._tag === "Existing" ? r.uid : created.get(r.name)!))
  switch (step._tag) {
    case "ConnectGitHub":
      return Effect.as(target.connectGitHub(step.request), undefined)
    case "CreateWebhook":
      return Effect.map(target.createWebhook(step.request), (w) => {
        created.set(w.name, w.uid)
        return w.uid
      })
    case "UpdateWebhook":
      return Effect.as(target.patchWebhook(step.current.uid, step.request), undefined)
    case "CreateAutomation":
      return Effect.map(target.createAutomation(automationCreateRequest(step.definition, uids(step.webhooks))), (a) => a.id)
    case "UpdateAutomation":
      return Effect.as(target.updateAutomation(step.current.id, automationUpdateRequest(step.definition, uids(step.webhooks))), undefined)
    case "CreateOutboundWebhook":
      return Effect.map(target.createOutboundWebhook(step.request), (w) => w.uid)
    case "UpdateOutboundWebhook":
      return updateOutbound(target, step)
    case "KeepGitHub":
    case "KeepWebhook":
    case "KeepAutomation":
    case "KeepOutboundWebhook":
      return undefined
  }
}

/** Runs a plan's writes in order; a refused write stops it, naming the file. */
const execute = <E>(target: DefinitionsTarget<E>, p: Plan) =>
  Effect.gen(function*() {
    const done: Array<Outcome> = []
    const created = new Map<string, WebhookUid>()
    const outcomes = planned(p)
    for (const [i, step] of steps(p).entries()) {
      const outcome = outcomes[i]!
      const write = writeOf(target, step, created)
      const id = write === undefined ? undefined : yield* Effect.mapError(
        write,
        (cause) => new DefinitionsApplyFailed({ path: step.definition.path, cause, applied: [...done] })
      )
      done.push(id === undefined ? outcome : { ...outcome, id })
    }
    return done as ReadonlyArray<Outcome>
  })

/**
 * Why each secret the files name does not suit its use (undefined: it does), by `secretCheckKey`:
 * webhooks' asked of the target, the GitHub connection's looked up among the team's secrets.
 */
const secretProblems = <E>(target: DefinitionsTarget<E>, checks: ReadonlyArray<SecretCheck>) =>
  Effect.gen(function*() {
    const problems = new Map<string, string | undefined>()
    const existing = checks.some((c) => c._tag === "GitHubSecret") ? yield* target.listSecretNames : []
    for (const check of checks) {
      const problem = check._tag === "WebhookSecret"
        ? yield* target.secretProblem(check)
        : existing.includes(check.secretName) ? undefined : noSuchSecret(check.secretName)
      problems.set(secretCheckKey(check), problem)
    }
    return problems as ReadonlyMap<string, string | undefined>
  })

/** What the server finds wrong with each outbound webhook definition's new URL or team secret, by name. */
const outboundProblems = <E>(target: DefinitionsTarget<E>, checks: ReturnType<typeof outboundChecks>) =>
  Effect.gen(function*() {
    const problems = new Map<string, OutboundProblems>()
    for (const { definition, request } of checks) {
      const answer = yield* target.checkOutboundWebhook(request)
      problems.set(definition.name, { url: answer.url_problem ?? undefined, secretName: answer.secret_name_problem ?? undefined })
    }
    return problems as ReadonlyMap<string, OutboundProblems>
  })

/**
 * Parses the files, lists what the target's team has, checks every secret they name and plans:
 * the plan, or `DefinitionsRejected` with every error, or the target's own error. Writes nothing.
 */
const planFor = <E>(target: DefinitionsTarget<E>, files: ReadonlyArray<DefinitionFile>) =>
  Effect.gen(function*() {
    const parsed = parse(files)
    const [github, webhooks, automations, outboundWebhooks] = yield* Effect.all([
      target.getGitHub,
      target.listWebhooks,
      target.listAutomations,
      // Only read when a file defines one, as the team's secrets are (both are for admins only).
      parsed.outboundWebhooks.length === 0 ? Effect.succeed([]) : target.listOutboundWebhooks
    ])
    const current = { github, webhooks, automations, outboundWebhooks }
    const problems = yield* secretProblems(target, secretChecks(parsed))
    const outbound = yield* outboundProblems(target, outboundChecks(parsed.outboundWebhooks, current))
    const result = plan(parsed, current, (check) => problems.get(secretCheckKey(check)), (d) => outbound.get(d.name) ?? {})
    if (Either.isLeft(result)) return yield* new DefinitionsRejected({ errors: result.left })
    return result.right
  })

/**
 * Applies definition files to the target's team (see the module's decisions). Fails with
 * `DefinitionsRejected` (nothing applied), `DefinitionsApplyFailed` (a write refused midway), or
 * the target's own error while listing and checking (nothing applied).
 */
export const apply = <E>(
  target: DefinitionsTarget<E>,
  files: ReadonlyArray<DefinitionFile>
): Effect.Effect<ReadonlyArray<Outcome>, E | DefinitionsRejected | DefinitionsApplyFailed<E>> =>
  Effect.flatMap(planFor(target, files), (p) => execute(target, p)).pipe(
    Effect.withSpan("DefinitionsApplier.apply", { attributes: { files: files.length } })
  )

/** What `apply` would do (describe it with `describePlanned`), checked as `apply` checks it; writes nothing. */
export const dryRun = <E>(
  target: DefinitionsTarget<E>,
  files: ReadonlyArray<DefinitionFile>
): Effect.Effect<ReadonlyArray<Outcome>, E | DefinitionsRejected> =>
  Effect.map(planFor(target, files), planned).pipe(
    Effect.withSpan("DefinitionsApplier.dryRun", { attributes: { files: files.length } })
  )

/** The target of the core services, acting as `viewer` in its team. */
export const servicesTarget = (viewer: Viewer) =>
  Effect.gen(function*() {
    const github = yield* GitHubConnections
    const webhooks = yield* Webhooks
    const automations = yield* Automations
    const secrets = yield* Secrets
    const outbound = yield* OutboundWebhooks
    const target: DefinitionsTarget<ApiError> = {
      getGitHub: Effect.map(github.get(viewer), (r) => r.connection),
      connectGitHub: (request) => github.connect(viewer, request),
      listWebhooks: Effect.map(webhooks.list(viewer), (r) => r.webhooks),
      createWebhook: (request) => webhooks.create(viewer, request),
      patchWebhook: (uid, request) => webhooks.patch(viewer, uid, request),
      listAutomations: Effect.map(automations.list(viewer), (r) => r.automations),
      createAutomation: (request) => automations.create(viewer, request),
      updateAutomation: (id, request) => automations.update(viewer, id, request),
      secretProblem: (check) =>
        Effect.map(webhooks.checkSecret(viewer, checkWebhookSecretRequest(check)), (r) => r.problem),
      listSecretNames: Effect.map(secrets.list(viewer), (r) => r.secrets.map((secret) => secret.name)),
      listOutboundWebhooks: Effect.map(outbound.list(viewer), (r) => r.outbound_webhooks),
      createOutboundWebhook: (request) => outbound.create(viewer, request),
      patchOutboundWebhook: (uid, request) => outbound.patch(viewer, uid, request),
      rotateOutboundSecret: (uid, request) => outbound.rotateSecret(viewer, uid, request),
      checkOutboundWebhook: (request) => outbound.check(viewer, request)
    }
    return target
  })

/** There is no bootstrap administrator (with a team) to apply start-up definitions as. */
export class NoBootstrapAdmin extends Data.TaggedError("NoBootstrapAdmin")<{ readonly message: string }> {}

/**
 * The bootstrap administrator (Identities.ts: the oldest instance administrator named `admin`)
 * acting in its first team, which it administers: whom the server applies its definitions as.
 */
export const bootstrapAdminViewer = Effect.gen(function*() {
  const store = yield* IdentityStore
  const admin = (yield* store.instanceAdmins).find((p) => p.display_name === BOOTSTRAP_ADMIN_NAME)
  const team = admin?.memberships[0]?.team_uid
  const viewer = admin === undefined || team === undefined ? undefined : memberViewer(admin, team)
  if (viewer === undefined) {
    return yield* new NoBootstrapAdmin({
      message: `no instance administrator named ${JSON.stringify(BOOTSTRAP_ADMIN_NAME)} with a team to apply the definitions as`
    })
  }
  return viewer
}).pipe(storageUnavailable)

/** Applies definition files as the bootstrap administrator, in its team (the server at start-up). */
export const applyAsBootstrapAdmin = (files: ReadonlyArray<DefinitionFile>) =>
  Effect.gen(function*() {
    const viewer = yield* bootstrapAdminViewer
    return yield* apply(yield* servicesTarget(viewer), files)
  }).pipe(Effect.withSpan("DefinitionsApplier.applyAsBootstrapAdmin"))
