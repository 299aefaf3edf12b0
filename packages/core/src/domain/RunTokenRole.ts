/**
 * The role a run's token acts with now (docs/security.md): the least of its executor's and
 * creator's roles in the run's team and, for everyone recorded as having shaped the run
 * (`RunStore.shapers`), the role it shaped with and its role now (Access.runTokenRole). Undefined
 * when one of them is no longer a member of the team (or no longer exists).
 */
import { Effect, Option } from "effect"
import { runTokenRole } from "./Access.js"
import { adminOnlySecretOf, shapedSecretProblem } from "./AdminOnlySecrets.js"
import type { PrincipalUid } from "./Ids.js"
import { activeMemberships, type Role } from "./Identity.js"
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
      roles.set(uid, principal === undefined ? undefined : activeMemberships(principal).find((m) => m.team_uid === run.team_uid)?.role)
    }
    return runTokenRole(executor, creator, shapers, (uid) => roles.get(uid))
  })

/**
 * Why an execution of the run may not hand its agent the secrets only admins may hand out
 * (AdminOnlySecrets.ts): someone with fewer rights shaped it. Null when it may, or holds none.
 */
export const secretsRefusalOf = (store: RunStore["Type"], identities: IdentityStore["Type"], run: StoredRun) =>
  adminOnlySecretOf(run.item.agent_config) === undefined
    ? Effect.succeed(null)
    : Effect.map(runTokenRoleOf(store, identities, run), (role) => shapedSecretProblem(run.item.agent_config, role) ?? null)
