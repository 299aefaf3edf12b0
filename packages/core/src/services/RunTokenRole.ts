/**
 * The role a run's token acts with now (docs/security.md): the least of its executor's and
 * creator's roles in the run's team and, for everyone recorded as having shaped the run
 * (`RunStore.shapers`), the role it shaped with and its role now (Access.runTokenRole). Undefined
 * when one of them is no longer a member of the team (or no longer exists).
 */
import { Effect, Option } from "effect"
import { runTokenRole } from "../domain/Access.js"
import type { PrincipalUid } from "../domain/Ids.js"
import type { Role } from "../domain/Identity.js"
import type { IdentityStore } from "../ports/IdentityStore.js"
import type { RunStore, StoredRun } from "../ports/RunStore.js"

export const runTokenRoleOf = (store: RunStore["Type"], identities: IdentityStore["Type"], run: StoredRun) =>
  Effect.gen(function* () {
    const shapers = yield* store.shapers([run.item.run_id])
    const executor = run.item.executor.uid
    const creator = run.item.creator.uid
    const roles = new Map<PrincipalUid, Role | undefined>()
    for (const uid of new Set([executor, creator, ...shapers.map((s) => s.uid)])) {
      const principal = Option.getOrUndefined(yield* identities.getPrincipal(uid))
      roles.set(uid, principal?.memberships.find((m) => m.team_uid === run.team_uid)?.role)
    }
    return runTokenRole(executor, creator, shapers, (uid) => roles.get(uid))
  })
