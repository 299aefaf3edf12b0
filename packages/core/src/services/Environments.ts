/**
 * Environments (docs/reference/access.md, docs/reference/api.md): create, list, get, replace and delete, with ownership,
 * guests and link sharing.
 *
 * Decisions:
 * - Who may read and use an environment: whoever `Access.canSee` lets see it (Team scope: its
 *   team; User scope: its creator and the team's admins), its guests (principals named in
 *   `sharing.guests`, from any team), and members of its team who reached it by link while link
 *   sharing is on. Reaching by link means reading it by uid (`GET /agent/environments/{uid}`): that
 *   read is remembered, so it is listed and usable afterwards. Anyone else gets a 404.
 * - Who may change or delete it: those `Access.canChange` allows (its team's members who can see
 *   it; viewers never); guests and link holders may use but not change it (403).
 * - Guests must be principals that exist (400 naming `sharing.guests[i]`).
 * - The list is sorted by `last_updated` (most recently updated first, ties by uid) or by `name`
 *   (code-point order, ties by uid); any other `sort_by` is a 400 naming it.
 * - A deleted environment is gone: runs and schedules naming it are refused like an unknown one.
 * - `config.github_repos` names only repositories of the environment's team (`RepoSource.has`):
 *   any other is a 400 naming `config.github_repos[i]` (Repositories.ts).
 * - Whoever creates or replaces an environment is its `editor`, with the role it acts with: the
 *   runs that execute in it act with no more than that role (Access.runTokenRole), so a member's
 *   setup commands or harness never run with an admin's token (docs/security.md).
 */
import { Clock, DateTime, Effect, Option } from "effect"
import { canChange, canCreate, canSee, scopeFor, shaperOf } from "../domain/Access.js"
import type { Viewer } from "../domain/Access.js"
import { Environment, ListEnvironmentsResponse } from "../domain/Environment.js"
import type { CreateEnvironmentRequest, EnvironmentSharing, UpdateEnvironmentRequest } from "../domain/Environment.js"
import { checkGitHubTokenRequest } from "../domain/AgentGitHubToken.js"
import { InvalidRequest, NotAuthorized, ResourceNotFound } from "../domain/Errors.js"
import { checkAuthSecretNames } from "../domain/HarnessSelection.js"
import { type EnvironmentUid, Ids } from "../domain/Ids.js"
import { storageUnavailable } from "../internal/Services.js"
import { EnvironmentStore } from "../ports/EnvironmentStore.js"
import type { StoredEnvironment } from "../ports/EnvironmentStore.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { RepoSource } from "../ports/RepoSource.js"
import { Audit } from "./Audit.js"
import { checkEnvironmentRepositories } from "./Repositories.js"

/** How the environment list may be sorted. */
export const ENVIRONMENT_SORTS = ["last_updated", "name"] as const

const ownership = (env: StoredEnvironment) => ({
  team_uid: env.team_uid,
  creator_uid: env.creator_uid,
  scope: env.item.scope
})

/**
 * Whether the viewer may read and use the environment without reaching it by link now: it sees
 * it, is a guest, or reached it by link before (the store lists it for the viewer).
 */
export const usableBy = (store: EnvironmentStore["Type"], viewer: Viewer, env: StoredEnvironment) =>
  Effect.gen(function*() {
    if (canSee(viewer, ownership(env))) return true
    if (env.item.sharing.guests.includes(viewer.principal_uid)) return true
    if (!env.item.sharing.link_sharing || env.team_uid !== viewer.team_uid) return false
    const reachable = yield* store.list(viewer)
    return reachable.some((e) => e.item.uid === env.item.uid)
  })

const byName = (a: StoredEnvironment, b: StoredEnvironment) =>
  a.item.config.name < b.item.config.name ? -1 : a.item.config.name > b.item.config.name ? 1 :
  a.item.uid < b.item.uid ? -1 : a.item.uid > b.item.uid ? 1 : 0

/** The environments service. */
/** An environment as an audited resource. */
const resource = (uid: EnvironmentUid | null) => ({ type: "environment", id: uid })

export class Environments extends Effect.Service<Environments>()("@agent-runs/core/Environments", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* EnvironmentStore
    const identities = yield* IdentityStore
    const ids = yield* Ids
    const repositories = yield* RepoSource

    const checkGuests = (sharing: EnvironmentSharing | undefined) =>
      Effect.gen(function*() {
        for (const [i, guest] of (sharing?.guests ?? []).entries()) {
          if (Option.isNone(yield* identities.getPrincipal(guest))) {
            return yield* InvalidRequest.forField(`sharing.guests[${i}]`, `no principal ${guest}`)
          }
        }
      })

    /** An environment the viewer may read (reaching it by link counts), else 404. */
    const readable = (viewer: Viewer, uid: EnvironmentUid, recordLink: boolean) =>
      Effect.gen(function*() {
        const found = yield* store.get(uid)
        if (Option.isNone(found)) return yield* ResourceNotFound.of("environment", uid)
        const env = found.value
        if (yield* usableBy(store, viewer, env)) return env
        if (recordLink && env.item.sharing.link_sharing && env.team_uid === viewer.team_uid) {
          yield* store.recordLinkAccess(uid, viewer.principal_uid)
          return env
        }
        return yield* ResourceNotFound.of("environment", uid)
      })

    const changeable = (viewer: Viewer, uid: EnvironmentUid) =>
      Effect.gen(function*() {
        const env = yield* readable(viewer, uid, false)
        if (!canChange(viewer, ownership(env))) {
          return yield* new NotAuthorized({ message: `you may use environment ${uid} but not change it` })
        }
        return env
      })

    const create = Effect.fn("Environments.create")(
      function*(viewer: Viewer, request: CreateEnvironmentRequest) {
        if (!canCreate(viewer)) return yield* new NotAuthorized({ message: "viewers cannot create environments" })
        yield* checkAuthSecretNames(viewer, request.config.harness_auth_secrets, "config")
        yield* checkGitHubTokenRequest(viewer, request.config.github_token, "config.github_token")
        yield* checkGuests(request.sharing)
        yield* checkEnvironmentRepositories(repositories, viewer.team_uid, request.config.github_repos)
        const at = DateTime.unsafeMake(yield* Clock.currentTimeMillis)
        const item = new Environment({
          uid: (yield* ids.uid22) as EnvironmentUid,
          config: request.config,
          sharing: request.sharing ?? { guests: [], link_sharing: false },
          setup_failed: false,
          last_task_created: null,
          scope: scopeFor(viewer, request.team),
          created_at: at,
          updated_at: at
        })
        const stored = { item, team_uid: viewer.team_uid, creator_uid: viewer.principal_uid, editor: shaperOf(viewer) }
        yield* audit.recording(viewer, store.create(stored), () => ({ action: "environment.create", resource: resource(item.uid) }))
        return item
      },
      storageUnavailable,
      audit.refusals("environment.create", () => resource(null))
    )

    const list = Effect.fn("Environments.list")(
      function*(viewer: Viewer, params: { readonly sort_by?: string | undefined }) {
        const sort = params.sort_by ?? "last_updated"
        if (!(ENVIRONMENT_SORTS as ReadonlyArray<string>).includes(sort)) {
          return yield* InvalidRequest.forField("sort_by", `must be one of ${ENVIRONMENT_SORTS.join(", ")}`)
        }
        const found = yield* store.list(viewer)
        const sorted = sort === "name" ? [...found].sort(byName) : found
        return new ListEnvironmentsResponse({ environments: sorted.map((e) => e.item) })
      },
      storageUnavailable
    )

    const get = Effect.fn("Environments.get")(
      function*(viewer: Viewer, uid: EnvironmentUid) {
        return (yield* readable(viewer, uid, true)).item
      },
      storageUnavailable
    )

    const update = Effect.fn("Environments.update")(
      function*(viewer: Viewer, uid: EnvironmentUid, request: UpdateEnvironmentRequest) {
        const env = yield* changeable(viewer, uid)
        yield* checkAuthSecretNames(viewer, request.config.harness_auth_secrets, "config")
        yield* checkGitHubTokenRequest(viewer, request.config.github_token, "config.github_token")
        yield* checkGuests(request.sharing)
        yield* checkEnvironmentRepositories(repositories, env.team_uid, request.config.github_repos)
        const item = new Environment({
          ...env.item,
          config: request.config,
          sharing: request.sharing ?? env.item.sharing,
          updated_at: DateTime.unsafeMake(yield* Clock.currentTimeMillis)
        })
        const stored = { ...env, item, editor: shaperOf(viewer) }
        yield* audit.recording(viewer, store.update(stored), () => ({ action: "environment.update", resource: resource(uid) }))
        return item
      },
      storageUnavailable,
      audit.refusals("environment.update", (uid: EnvironmentUid) => resource(uid))
    )

    const remove = Effect.fn("Environments.remove")(
      function*(viewer: Viewer, uid: EnvironmentUid) {
        yield* changeable(viewer, uid)
        yield* audit.recording(viewer, store.remove(uid), () => ({ action: "environment.delete", resource: resource(uid) }))
      },
      storageUnavailable,
      audit.refusals("environment.delete", (uid: EnvironmentUid) => resource(uid))
    )

    return { create, list, get, update, remove } as const
  })
}) {}
