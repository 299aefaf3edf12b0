/**
 * An execution's reads of team secrets, recorded in the audit log (docs/audit.md): the harness's
 * auth secret, the MCP servers' secrets and the GitHub connection's secret when its token is
 * handed to the agent (`github_token`) are each one `secret.read` entry, by the run's executor
 * acting for the run. Best effort: an entry that cannot be written is logged, and the execution
 * goes on (its secrets are read already).
 *
 * The server's own executions read them as their plan is made (`planRecordingSecretReads`); a
 * self-hosted worker's are read by the server when the worker claims the run
 * (`resolveForWorker`), and handed to that worker with the claim.
 */
import { Clock, Effect, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import { holdsGitHubToken } from "../domain/AgentGitHubToken.js"
import { auditEntry } from "../domain/Audit.js"
import type { Ids } from "../domain/Ids.js"
import type { SecretName } from "../domain/Secret.js"
import type { AuditLog } from "../ports/AuditLog.js"
import type { RepoSource } from "../ports/RepoSource.js"
import type { SecretStore } from "../ports/SecretStore.js"
import { type ClaimedRun, type ExecutionPlan, type GivenSecrets, planOf, secretsFromStore } from "./ExecutionPlan.js"

/** The store, and the names of the secrets read through it (those that exist). */
const recording = (store: SecretStore["Type"]) => {
  const read = new Set<SecretName>()
  const recorder: SecretStore["Type"] = {
    ...store,
    get: (team, name) => Effect.tap(store.get(team, name), (value) => Effect.sync(() => Option.isSome(value) && read.add(name)))
  }
  return { recorder, read }
}

/** One `secret.read` entry per name, by the run's executor acting for the run. */
const recordReads = (claimed: ClaimedRun, read: ReadonlySet<SecretName>, log: AuditLog["Type"], ids: Ids["Type"]) =>
  Effect.gen(function*() {
    if (read.size === 0) return
    const run = claimed.run
    const agent: Viewer = {
      principal_uid: run.executor.uid,
      team_uid: claimed.team_uid,
      role: "member",
      instance_admin: false,
      acting_run_id: run.run_id,
      display_name: run.executor.display_name
    }
    const at = yield* Clock.currentTimeMillis
    yield* Effect.forEach([...read], (name) =>
      Effect.flatMap(ids.auditEntryId, (id) =>
        log.record(auditEntry(agent, agent.display_name ?? null, { action: "secret.read", resource: { type: "secret", id: name }, outcome: "succeeded" }, id, at))), { discard: true }).pipe(
      Effect.catchAll((e) => Effect.logWarning(`audit: could not record the secrets run ${run.run_id} read`, e))
    )
  })

/** The plan of a claimed run on the server, its secrets read from the store and recorded. */
export const planRecordingSecretReads = (
  claimed: ClaimedRun,
  sources: { readonly repos: RepoSource["Type"]; readonly store: SecretStore["Type"]; readonly debugWindows: boolean },
  log: AuditLog["Type"],
  ids: Ids["Type"]
): Effect.Effect<ExecutionPlan> =>
  Effect.gen(function*() {
    const { read, recorder } = recording(sources.store)
    const plan = yield* planOf(claimed, { repos: sources.repos, secrets: secretsFromStore(recorder), debugWindows: sources.debugWindows })
    // The GitHub connection's credential, when its token is the agent's (read with the claim).
    const github = claimed.github
    if (holdsGitHubToken(plan.agent_env) && github !== undefined && !("failure" in github)) read.add(github.secret)
    yield* recordReads(claimed, read, log, ids)
    return plan
  })

/**
 * The secrets a self-hosted worker's execution of a claimed run needs, read from the store and
 * recorded, in the order the server's own plan reads them (the MCP servers, then the agent CLI's
 * key). None are read for a run whose execution fails before its agent starts whatever they are:
 * refused (someone with fewer rights shaped it), its environment gone, or its agent to get the
 * team's GitHub token, which a worker's claim does not carry.
 */
export const resolveForWorker = (
  claimed: ClaimedRun,
  store: SecretStore["Type"],
  log: AuditLog["Type"],
  ids: Ids["Type"]
): Effect.Effect<GivenSecrets | undefined> =>
  Effect.gen(function*() {
    if (claimed.refusal !== null || claimed.environment_missing || claimed.run.agent_config.github_token === true) return undefined
    const { read, recorder } = recording(store)
    const source = secretsFromStore(recorder)
    const mcpServers = yield* source.mcpServers(claimed)
    const secrets = { mcpServers, agentAuth: yield* source.agentAuth(claimed) }
    yield* recordReads(claimed, read, log, ids)
    return secrets
  })
