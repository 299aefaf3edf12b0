/**
 * The principals of the instance, for instance administrators (`/admin/principals`, docs/reference/access.md):
 * listing, reading, renaming, granting or withdrawing instance administration, disabling and
 * enabling, and deleting. Memberships change through `TeamMembers`, tokens through `Tokens`.
 *
 * Decisions:
 * - Disabling takes effect on the next request: the principal's tokens and its runs' tokens are
 *   refused, its schedules and automations stop acting as it; enabling restores all of it.
 * - Deleting keeps a tombstone with the name (runs and audit entries show it), removes the
 *   memberships and revokes every token, in one transaction; it cannot be undone, and a deleted
 *   principal is a 404 everywhere in the admin API.
 * - The instance keeps at least one instance administrator who is neither disabled nor deleted:
 *   a change that would leave none is a 409.
 */
import { Clock, Effect, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import { Conflict } from "../domain/Errors.js"
import type { PrincipalUid } from "../domain/Ids.js"
import { ListPrincipalsResponse, type PatchPrincipalRequest, type Principal } from "../domain/Identity.js"
import { livePrincipal, requireInstanceAdmin } from "../internal/Principals.js"
import { storageUnavailable } from "../internal/Services.js"
import { IdentityStore, type PrincipalPage } from "../ports/IdentityStore.js"
import { Audit } from "./Audit.js"


const isActiveInstanceAdmin = (p: Principal) => p.instance_admin && p.disabled_at === null && p.deleted_at === null

export class Principals extends Effect.Service<Principals>()("@agent-runs/core/Principals", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* IdentityStore

    /** 409 when `principal` is the last active instance administrator and would stop being one. */
    const keepsAnInstanceAdmin = (principal: Principal) =>
      Effect.gen(function*() {
        if (!isActiveInstanceAdmin(principal)) return
        const others = (yield* store.instanceAdmins).filter((p) => p.uid !== principal.uid && isActiveInstanceAdmin(p))
        if (others.length === 0) {
          return yield* new Conflict({ message: "the instance would be left without an instance administrator" })
        }
      })

    /** A page of principals (of one team's when named), in uid order. */
    const list = Effect.fn("Principals.list")(
      function*(viewer: Viewer, page: PrincipalPage) {
        yield* requireInstanceAdmin(viewer)
        const found = yield* store.listPrincipals({ ...page, limit: page.limit + 1 })
        const principals = found.slice(0, page.limit)
        const last = principals[principals.length - 1]
        return new ListPrincipalsResponse({
          principals,
          next_cursor: found.length > page.limit && last !== undefined ? last.uid : null
        })
      },
      storageUnavailable
    )

    const get = Effect.fn("Principals.get")(
      function*(viewer: Viewer, uid: PrincipalUid) {
        yield* requireInstanceAdmin(viewer)
        return yield* livePrincipal(store, uid)
      },
      storageUnavailable
    )

    /** Changes only the given keys. */
    const update = Effect.fn("Principals.update")(
      function*(viewer: Viewer, uid: PrincipalUid, request: PatchPrincipalRequest) {
        yield* requireInstanceAdmin(viewer)
        const principal = yield* livePrincipal(store, uid)
        const changes = {
          display_name: request.display_name?.trim() ?? principal.display_name,
          instance_admin: request.instance_admin ?? principal.instance_admin,
          disabled_at: request.disabled === undefined
            ? principal.disabled_at?.epochMillis ?? null
            : request.disabled
            ? principal.disabled_at?.epochMillis ?? (yield* Clock.currentTimeMillis)
            : null
        }
        if (!changes.instance_admin || changes.disabled_at !== null) yield* keepsAnInstanceAdmin(principal)
        yield* audit.recording(viewer, store.updatePrincipal(uid, changes), () => ({
          action: "principal.update",
          resource: { type: "principal", id: uid },
          team_uid: null
        }))
        return Option.getOrThrow(yield* store.getPrincipal(uid))
      },
      storageUnavailable,
      audit.refusals("principal.update", (uid: PrincipalUid) => ({ type: "principal", id: uid }))
    )

    const remove = Effect.fn("Principals.remove")(
      function*(viewer: Viewer, uid: PrincipalUid) {
        yield* requireInstanceAdmin(viewer)
        const principal = yield* livePrincipal(store, uid)
        yield* keepsAnInstanceAdmin(principal)
        const at = yield* Clock.currentTimeMillis
        yield* audit.recording(viewer, store.deletePrincipal(uid, at), () => ({
          action: "principal.delete",
          resource: { type: "principal", id: uid },
          team_uid: null
        }))
      },
      storageUnavailable,
      audit.refusals("principal.delete", (uid: PrincipalUid) => ({ type: "principal", id: uid }))
    )

    return { list, get, update, remove } as const
  })
}) {}
