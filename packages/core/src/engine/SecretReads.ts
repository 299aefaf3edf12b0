/**
 * An execution's plan with its reads of team secrets recorded in the audit log (docs/audit.md):
 * the harness's auth secret, the MCP servers' secrets the plan reads and the GitHub connection's
 * secret when its token is handed to the agent (`github_token`) are each one `secret.read` entry,
 * by the run's executor acting for the run. Best effort: an entry that cannot be written is
 * logged, and the execution goes on (its secrets are read already).
 */
import { Clock, Effect, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import { holdsGitHubToken } from "../domain/AgentGitHubToken.js"
import { auditEntry } from "../domain/Audit.js"
import type { Ids } from "../domain/Ids.js"
import type { SecretName } from "../domain/Secret.js"
import type { AuditLog } from "../ports/AuditLog.js"
import type { SecretStore } from "../ports/SecretStore.js"
import { type ClaimedRun, type ExecutionPlan, type PlanSources, planOf } from "./ExecutionPlan.js"

/** The plan of a claimed run, its secret reads recorded (the sources' secrets read through a recorder). */
export const planRecordingSecretReads = (
  claimed: ClaimedRun,
  sources: PlanSources,
  log: AuditLog["Type"],
  ids: Ids["Type"]
): Effect.Effect<ExecutionPlan> =>
  Effect.gen(function*() {
    const read = new Set<SecretName>()
    const recording = Option.map(sources.secrets, (secrets): SecretStore["Type"] => ({
      ...secrets,
      get: (team, name) => Effect.tap(secrets.get(team, name), (value) => Effect.sync(() => Option.isSome(value) && read.add(name)))
    }))
    const plan = yield* planOf(claimed, { ...sources, secrets: recording })
    // The GitHub connection's credential, when its token is the agent's (read with the claim).
    const github = claimed.github
    if (holdsGitHubToken(plan.agent_env) && github !== undefined && !("failure" in github)) read.add(github.secret)
    if (read.size === 0) return plan
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
    return plan
  })
