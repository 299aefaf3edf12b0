/**
 * Applies definition files (Definitions.ts) to a team, over `DefinitionsTarget`: a small record
 * of the operations applying needs. The server gives one over the core services
 * (`servicesTarget`, acting as the bootstrap administrator at start-up); the CLI gives one over
 * the HTTP API. Both run this one `apply`: parse, list what the team has, check every webhook's
 * team secret, plan, then (unless it is a dry run, and only when no file has an error) create and
 * update, webhooks first, then automations (whose `webhookNames` need the new webhooks' uids).
 *
 * Decisions:
 * - Nothing is applied while any file has an error (`DefinitionsRejected` lists them all).
 * - Applying what is already there changes nothing and calls no write operation; the outcome of
 *   each file says `created`, `updated` (with the keys that changed) or `unchanged`.
 * - A write the team refuses while applying (a concurrent change, storage down) stops the apply:
 *   `DefinitionsApplyFailed` names the file, the refusal, and what was applied before it;
 *   applying again resumes (what is done is `unchanged`).
 */
import { Data, Effect, Either } from "effect"
import type { Viewer } from "../domain/Access.js"
import type { Automation, CreateAutomationRequest, UpdateAutomationRequest } from "../domain/Automation.js"
import { Automations } from "./Automations.js"
import {
  automationCreateRequest,
  automationUpdateRequest,
  parse,
  plan,
  secretCheckKey,
  secretChecks
} from "../domain/Definitions.js"
import type { DefinitionError, DefinitionFile, Plan, SecretCheck, WebhookRef } from "../domain/Definitions.js"
import type { ApiError } from "../domain/Errors.js"
import type { AutomationId, WebhookUid } from "../domain/Ids.js"
import { BOOTSTRAP_ADMIN_NAME, memberViewer } from "./Identities.js"
import { storageUnavailable } from "../internal/Services.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { CheckWebhookSecretRequest } from "../domain/Webhook.js"
import type { CreateWebhookRequest, PatchWebhookRequest, Webhook } from "../domain/Webhook.js"
import { Webhooks } from "./Webhooks.js"

/** What applying definitions needs of a team, failing with `E`. */
export interface DefinitionsTarget<E> {
  readonly listWebhooks: Effect.Effect<ReadonlyArray<Webhook>, E>
  readonly createWebhook: (request: CreateWebhookRequest) => Effect.Effect<Webhook, E>
  readonly patchWebhook: (uid: WebhookUid, request: PatchWebhookRequest) => Effect.Effect<Webhook, E>
  readonly listAutomations: Effect.Effect<ReadonlyArray<Automation>, E>
  readonly createAutomation: (request: CreateAutomationRequest) => Effect.Effect<Automation, E>
  readonly updateAutomation: (id: AutomationId, request: UpdateAutomationRequest) => Effect.Effect<Automation, E>
  /** Why the named team secret does not suit a webhook of this mode (absent included); undefined when it does. */
  readonly secretProblem: (check: SecretCheck) => Effect.Effect<string | undefined, E>
}

/** What applying did (or, in a dry run, would do) to one file's webhook or automation. */
export interface Outcome {
  readonly kind: "webhook" | "automation"
  readonly path: string
  readonly name: string
  readonly action: "created" | "updated" | "unchanged"
  /** The uid or id (absent for a creation in a dry run). */
  readonly id: string | undefined
  /** The file keys that changed (updates only). */
  readonly changed: ReadonlyArray<string>
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

/** One line saying what happened to a file (`would ...` in a dry run). */
export const describeOutcome = (outcome: Outcome, dryRun = false): string => {
  const what = `${outcome.kind} ${JSON.stringify(outcome.name)}`
  const id = outcome.id === undefined ? "" : ` (${outcome.id})`
  const changed = outcome.changed.length === 0 ? "" : `: ${outcome.changed.join(", ")}`
  switch (outcome.action) {
    case "created":
      return `${outcome.path}: ${dryRun ? "would create" : "created"} ${what}${id}`
    case "updated":
      return `${outcome.path}: ${dryRun ? "would update" : "updated"} ${what}${id}${changed}`
    case "unchanged":
      return `${outcome.path}: unchanged ${what}${id}`
  }
}

/** The outcomes of a plan before anything is done (what a dry run reports). */
export const planned = (p: Plan): ReadonlyArray<Outcome> => [
  ...p.webhooks.map((step): Outcome => {
    const base = { kind: "webhook" as const, path: step.definition.path, name: step.definition.name }
    switch (step._tag) {
      case "CreateWebhook":
        return { ...base, action: "created", id: undefined, changed: [] }
      case "UpdateWebhook":
        return { ...base, action: "updated", id: step.current.uid, changed: step.changed }
      case "KeepWebhook":
        return { ...base, action: "unchanged", id: step.current.uid, changed: [] }
    }
  }),
  ...p.automations.map((step): Outcome => {
    const base = { kind: "automation" as const, path: step.definition.path, name: step.definition.name }
    switch (step._tag) {
      case "CreateAutomation":
        return { ...base, action: "created", id: undefined, changed: [] }
      case "UpdateAutomation":
        return { ...base, action: "updated", id: step.current.id, changed: step.changed }
      case "KeepAutomation":
        return { ...base, action: "unchanged", id: step.current.id, changed: [] }
    }
  })
]

/** Runs a plan's writes in order; a refused write stops it, naming the file. */
const execute = <E>(target: DefinitionsTarget<E>, p: Plan) =>
  Effect.gen(function*() {
    const done: Array<Outcome> = []
    const created = new Map<string, WebhookUid>()
    const step = <A>(path: string, write: Effect.Effect<A, E>) =>
      Effect.mapError(write, (cause) => new DefinitionsApplyFailed({ path, cause, applied: [...done] }))
    const outcomes = planned(p)
    let i = 0
    for (const s of p.webhooks) {
      const outcome = outcomes[i++]!
      switch (s._tag) {
        case "CreateWebhook": {
          const webhook = yield* step(s.definition.path, target.createWebhook(s.request))
          created.set(webhook.name, webhook.uid)
          done.push({ ...outcome, id: webhook.uid })
          break
        }
        case "UpdateWebhook":
          yield* step(s.definition.path, target.patchWebhook(s.current.uid, s.request))
          done.push(outcome)
          break
        case "KeepWebhook":
          done.push(outcome)
      }
    }
    const uids = (refs: ReadonlyArray<WebhookRef>) => refs.map((r) => (r._tag === "Existing" ? r.uid : created.get(r.name)!))
    for (const s of p.automations) {
      const outcome = outcomes[i++]!
      switch (s._tag) {
        case "CreateAutomation": {
          const automation = yield* step(
            s.definition.path,
            target.createAutomation(automationCreateRequest(s.definition, uids(s.webhooks)))
          )
          done.push({ ...outcome, id: automation.id })
          break
        }
        case "UpdateAutomation":
          yield* step(
            s.definition.path,
            target.updateAutomation(s.current.id, automationUpdateRequest(s.definition, uids(s.webhooks)))
          )
          done.push(outcome)
          break
        case "KeepAutomation":
          done.push(outcome)
      }
    }
    return done as ReadonlyArray<Outcome>
  })

/** Options of `apply`. */
export interface ApplyOptions {
  /** Plan and check only: report what would be done, write nothing. */
  readonly dryRun?: boolean | undefined
}

/**
 * Applies definition files to the target's team (see the module's decisions). Fails with
 * `DefinitionsRejected` (nothing applied), `DefinitionsApplyFailed` (a write refused midway), or
 * the target's own error while listing and checking (nothing applied).
 */
export const apply = <E>(
  target: DefinitionsTarget<E>,
  files: ReadonlyArray<DefinitionFile>,
  options: ApplyOptions = {}
): Effect.Effect<ReadonlyArray<Outcome>, E | DefinitionsRejected | DefinitionsApplyFailed<E>> =>
  Effect.gen(function*() {
    const parsed = parse(files)
    const [webhooks, automations] = yield* Effect.all([target.listWebhooks, target.listAutomations])
    const problems = new Map<string, string | undefined>()
    for (const check of secretChecks(parsed)) problems.set(secretCheckKey(check), yield* target.secretProblem(check))
    const result = plan(parsed, { webhooks, automations }, (check) => problems.get(secretCheckKey(check)))
    if (Either.isLeft(result)) return yield* new DefinitionsRejected({ errors: result.left })
    if (options.dryRun === true) return planned(result.right)
    return yield* execute(target, result.right)
  }).pipe(Effect.withSpan("DefinitionsApplier.apply", { attributes: { files: files.length } }))

/** The target of the core services, acting as `viewer` in its team. */
export const servicesTarget = (viewer: Viewer) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    const automations = yield* Automations
    const target: DefinitionsTarget<ApiError> = {
      listWebhooks: Effect.map(webhooks.list(viewer), (r) => r.webhooks),
      createWebhook: (request) => webhooks.create(viewer, request),
      patchWebhook: (uid, request) => webhooks.patch(viewer, uid, request),
      listAutomations: Effect.map(automations.list(viewer), (r) => r.automations),
      createAutomation: (request) => automations.create(viewer, request),
      updateAutomation: (id, request) => automations.update(viewer, id, request),
      secretProblem: (check) =>
        Effect.map(
          webhooks.checkSecret(
            viewer,
            new CheckWebhookSecretRequest({
              secret_name: check.secretName,
              auth_mode: check.authMode,
              ...(check.signatureScheme === null ? {} : { signature_scheme: check.signatureScheme })
            })
          ),
          (r) => r.problem
        )
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
