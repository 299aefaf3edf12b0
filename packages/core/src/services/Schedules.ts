/**
 * Scheduled agents (docs/schedules.md): create, list, get, replace (PUT), delete, pause and
 * resume. The scheduler that fires ticks keeps `history.last_ran`, `recent_runs` and
 * `last_spawn_error`; this service computes `history.next_run` on every read (null while paused),
 * and shows each recent run's current state (one look-up for all the schedules of an answer).
 *
 * Decisions:
 * - Checks in order: a viewer is refused (403); a `prompt` or `agent_config.base_prompt` over the
 *   quota (Quotas.ts) is a 413 naming it; creating needs the team feature
 *   `scheduled_agents` (403 `feature_not_available`); the cron expression and time zone are
 *   parsed (400 naming `cron_schedule` or `timezone`, also for an expression that never fires);
 *   a referenced `agent_config.environment_id` must be usable by the caller (403 naming the field,
 *   unknown and hidden alike).
 * - Schedules follow the scope rules of runs: `team: true` at creation gives Team scope, default
 *   User; hidden or unknown is a 404; members change what they see, viewers nothing (403).
 * - PUT replaces name, cron, prompt and enabled (all required); an omitted `agent_config` or
 *   `timezone` keeps the current one. `enabled: false` pauses, `true` resumes; a changed
 *   expression or zone counts from the time of the change (nothing missed is caught up).
 * - Writes are guarded by `updated_at`: a lost race re-reads and applies again once, then answers
 *   409 retryable. Pausing a paused schedule (or resuming an active one) changes nothing but is a 200.
 * - Preview (`POST /agent/schedules/preview`) checks an expression and zone as creation does (400
 *   naming `cron_schedule` or `timezone`) and answers it in words (CronDescription.ts) with its next
 *   fire times from now (Cron.ts `nextFireTimes`, what the scheduler fires). It reads nothing
 *   stored: any member of the team may call it, viewers included.
 * - Run now (`POST /agent/schedules/{id}/run`) starts one run of the schedule at once, with the
 *   run request the scheduler makes for a tick (`scheduleRunRequest`: prompt, configuration, Team
 *   scope for a Team schedule, source `SCHEDULED_AGENT`, the schedule named on the run) plus
 *   metadata `manual: "true"`, through `Runs.create`: the checks, admission and creation quota of
 *   every run. Who may: as for pause and resume (404 hidden or unknown, 403 a viewer, with a
 *   message of its own: "viewers cannot run schedules"). The run is
 *   the caller's (creator and the checks of its references), not the schedule's last editor's:
 *   pressing the button gives no one else's permissions. A paused schedule can be run by hand; it
 *   stays paused, and nothing of its ticks changes (watermark, `last_ran`, `last_spawn_error`). The
 *   run is added to `history.recent_runs` (its `scheduled_for` the time it was started), by the
 *   scheduler's own compare-and-set (`ScheduleStore.recordTicksRetrying`), kept to the scheduler's
 *   `recentRuns` (`SchedulerConfig`); if that keeps losing or storage fails, the run stands (the
 *   caller still gets it) and only the listing is missing (logged). From the creation to the
 *   listing nothing is interrupted (a client hanging up), so a run created is listed unless that
 *   write fails. `Runs` comes from the caller's context, so that the run counts in the one
 *   creation quota of the service.
 */
import { Clock, DateTime, Effect, Either, Option } from "effect"
import { describe as describeCron } from "../domain/CronDescription.js"
import { actAsProblem, canChange, canCreate, canSee, scopeFor } from "../domain/Access.js"
import { budgetEscapeProblem } from "../domain/BudgetAccess.js"
import type { Viewer } from "../domain/Access.js"
import type { PrincipalRef } from "../domain/Common.js"
import { nextFireTimes, parseSchedule } from "../domain/Cron.js"
import { usableBy } from "./Environments.js"
import { checkRepoRefs } from "./Repositories.js"
import { checkGitHubTokenRequest } from "../domain/AgentGitHubToken.js"
import { Conflict, FeatureNotAvailable, NotAuthorized, ResourceNotFound } from "../domain/Errors.js"
import { Ids, type ScheduleId } from "../domain/Ids.js"
import { storageUnavailable } from "../internal/Services.js"
import { Audit } from "./Audit.js"
import { EnvironmentStore } from "../ports/EnvironmentStore.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { RunStore } from "../ports/RunStore.js"
import { recordTicksRetrying, ScheduleStore } from "../ports/ScheduleStore.js"
import { checkPromptSizes, Quotas } from "../domain/Quotas.js"
import type { StoredSchedule } from "../ports/ScheduleStore.js"
import { RunAgentRequest } from "../domain/Run.js"
import type { AgentConfig } from "../domain/Run.js"
import {
  DeleteScheduledAgentResponse,
  ListScheduledAgentsResponse,
  newestRunsFirst,
  ScheduledAgentItem,
  SchedulePreview
} from "../domain/Schedule.js"
import type {
  CreateScheduledAgentRequest,
  PreviewScheduleRequest,
  ScheduledRunRef,
  UpdateScheduledAgentRequest
} from "../domain/Schedule.js"
import { SchedulerConfig } from "../engine/Settings.js"
import { Runs } from "./Runs.js"
import type { EventRunRequest } from "./Runs.js"
import { initialState, isEnabled, nextRun, ScheduleEvent, transition } from "../domain/ScheduleStateMachine.js"

const ownership = (schedule: StoredSchedule) => ({
  team_uid: schedule.team_uid,
  creator_uid: schedule.creator_uid,
  scope: schedule.item.scope
})

/**
 * The run request of a schedule's run, made as `viewer`: its prompt and configuration, Team scope
 * for a Team schedule, source `SCHEDULED_AGENT`, the schedule named on the run, and `metadata`
 * (`backfilled` for a catch-up tick, `manual` for a run started by hand).
 */
export const scheduleRunRequest = (
  schedule: StoredSchedule,
  viewer: Viewer,
  metadata?: Readonly<Record<string, string>>
): EventRunRequest => {
  const item = schedule.item
  return {
    viewer,
    request: new RunAgentRequest(
      { prompt: item.prompt, config: item.agent_config, ...(item.scope.type === "Team" ? { team: true } : {}) },
      true
    ),
    options: {
      source: "SCHEDULED_AGENT",
      schedule: { schedule_id: item.id, schedule_name: item.name, cron_schedule: item.cron_schedule },
      metadata,
      // Whoever last set the prompt and config shaped the run, whoever starts it (a tick, or run now).
      shapers: [{ uid: item.updated_by.uid, role: schedule.editor_role }]
    }
  }
}

/** A schedule as an audited resource. */
const resource = (id: ScheduleId | null) => ({ type: "schedule", id })

/** The schedules service. */
export class Schedules extends Effect.Service<Schedules>()("@agent-runs/core/Schedules", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* ScheduleStore
    const environments = yield* EnvironmentStore
    const identities = yield* IdentityStore
    const runs = yield* RunStore
    const ids = yield* Ids
    const quotas = yield* Quotas
    const { recentRuns } = yield* SchedulerConfig

    /**
     * The items shown to callers: `enabled` from the state, `next_run` computed now, the recent
     * runs' states as they are now (a run no longer stored keeps the state it was recorded with).
     */
    const presentAll = (schedules: ReadonlyArray<StoredSchedule>, now: number) =>
      Effect.map(
        runs.states(schedules.flatMap((s) => s.item.history.recent_runs.map((r) => r.run_id))),
        (states) =>
          schedules.map((schedule) => {
            const parsed = parseSchedule(schedule.item.cron_schedule, schedule.item.timezone)
            const next = Either.isRight(parsed) ? nextRun(schedule.state, parsed.right, now) : null
            const history = schedule.item.history
            return new ScheduledAgentItem({
              ...schedule.item,
              enabled: isEnabled(schedule.state),
              history: {
                ...history,
                next_run: next === null ? null : DateTime.unsafeMake(next),
                recent_runs: history.recent_runs.map((r) => ({ ...r, state: states.get(r.run_id) ?? r.state }))
              }
            })
          })
      )

    const present = (schedule: StoredSchedule, now: number) =>
      Effect.map(presentAll([schedule], now), (items) => items[0]!)

    const principalRef = (viewer: Viewer) =>
      Effect.flatMap(
        identities.getPrincipal(viewer.principal_uid),
        Option.match({
          onNone: () => Effect.fail(new NotAuthorized({ message: "your principal no longer exists" })),
          onSome: (p): Effect.Effect<PrincipalRef> =>
            Effect.succeed({ type: p.type, uid: p.uid, display_name: p.display_name })
        })
      )

    /** The configuration of the referenced environment, which the caller must be able to use. */
    /** The schedule's runs act as its last editor: it must be allowed to name the config's identity. */
    const checkIdentity = (viewer: Viewer, config: AgentConfig) =>
      Effect.gen(function*() {
        if (config.agent_identity_uid === undefined) return
        const principal = yield* identities.getPrincipal(config.agent_identity_uid)
        const problem = Option.isNone(principal)
          ? `principal ${config.agent_identity_uid} does not exist`
          : actAsProblem(viewer, principal.value)
        if (problem !== undefined) return yield* new NotAuthorized({ message: `agent_config.agent_identity_uid: ${problem}` })
      })

    const environmentOf = (viewer: Viewer, config: AgentConfig) =>
      Effect.gen(function*() {
        const uid = config.environment_id
        if (uid === undefined) return null
        const env = yield* environments.get(uid)
        if (Option.isNone(env) || !(yield* usableBy(environments, viewer, env.value))) {
          return yield* new NotAuthorized({
            message: `agent_config.environment_id: no permission to use environment ${uid} (unknown or not shared with you)`
          })
        }
        return env.value.item.config
      })

    /**
     * What the schedule's runs will be made with, checked as a run's would be where it can be now:
     * the identity, the environment, the refs of its repositories, the GitHub token (admins only).
     * Answers the environment's configuration (null without one).
     */
    const checkConfig = (viewer: Viewer, config: AgentConfig) =>
      Effect.gen(function*() {
        yield* checkIdentity(viewer, config)
        const environment = yield* environmentOf(viewer, config)
        yield* checkGitHubTokenRequest(viewer, config.github_token, "agent_config.github_token")
        const named = environment === null || config.environment_id === undefined ? undefined : { uid: config.environment_id, config: environment }
        yield* checkRepoRefs(config.repo_refs, named, "agent_config.repo_refs")
        return environment
      })

    const visible = (viewer: Viewer, id: ScheduleId) =>
      Effect.gen(function*() {
        const found = Option.filter(yield* store.get(id), (s) => canSee(viewer, ownership(s)))
        if (Option.isNone(found)) return yield* ResourceNotFound.of("schedule", id)
        return found.value
      })

    /** The schedule, if the viewer may act on it: 404 when hidden, 403 (`refusal`) for a viewer. */
    const changeable = (viewer: Viewer, id: ScheduleId, refusal = "viewers cannot change schedules") =>
      Effect.gen(function*() {
        const schedule = yield* visible(viewer, id)
        if (!canChange(viewer, ownership(schedule))) return yield* new NotAuthorized({ message: refusal })
        return schedule
      })

    /** Applies `change` to the current schedule and writes it, retrying once after a lost race. */
    const modify = <E>(
      viewer: Viewer,
      id: ScheduleId,
      action: string,
      change: (current: StoredSchedule, now: number) => Effect.Effect<StoredSchedule, E>
    ) => {
      const once = Effect.gen(function*() {
        const current = yield* changeable(viewer, id)
        const now = yield* Clock.currentTimeMillis
        const next = yield* change(current, now)
        yield* audit.recording(viewer, store.update(next, DateTime.toEpochMillis(current.item.updated_at)), () => ({
          action,
          resource: resource(id)
        }))
        return yield* present(next, now)
      })
      return once.pipe(
        Effect.catchTag("StaleWrite", () => once),
        Effect.catchTag(
          "StaleWrite",
          () => Effect.fail(new Conflict({ message: "the schedule changed meanwhile; try again", retryable: true }))
        )
      )
    }

    const apply = (current: StoredSchedule, event: ScheduleEvent) =>
      Either.match(transition(current.state, event), {
        onLeft: () => Effect.fail(ResourceNotFound.of("schedule", current.item.id)),
        onRight: (t) => Effect.succeed(t.state)
      })

    const create = Effect.fn("Schedules.create")(
      function*(viewer: Viewer, request: CreateScheduledAgentRequest) {
        if (!canCreate(viewer)) return yield* new NotAuthorized({ message: "viewers cannot create schedules" })
        const escapes = budgetEscapeProblem(viewer, "create schedules")
        if (escapes !== undefined) return yield* new NotAuthorized({ message: escapes })
        yield* checkPromptSizes(quotas, request.prompt, request.agent_config)
        const team = yield* identities.getTeam(viewer.team_uid)
        if (Option.isNone(team)) return yield* new NotAuthorized({ message: `team ${viewer.team_uid} does not exist` })
        if (!team.value.features.scheduled_agents) {
          return yield* new FeatureNotAvailable({
            message: "scheduled agents are not enabled for this team",
            feature: "scheduled_agents"
          })
        }
        yield* parseSchedule(request.cron_schedule, request.timezone)
        const config = request.agent_config ?? {}
        const environment = yield* checkConfig(viewer, config)
        const now = yield* Clock.currentTimeMillis
        const at = DateTime.unsafeMake(now)
        const by = yield* principalRef(viewer)
        const stored: StoredSchedule = {
          team_uid: viewer.team_uid,
          creator_uid: viewer.principal_uid,
          editor_role: viewer.role,
          state: initialState({ enabled: request.enabled, createdAt: now }),
          item: new ScheduledAgentItem({
            id: (yield* ids.uid22) as ScheduleId,
            name: request.name,
            cron_schedule: request.cron_schedule.trim(),
            timezone: request.timezone,
            enabled: request.enabled,
            prompt: request.prompt,
            agent_config: config,
            environment,
            created_at: at,
            updated_at: at,
            created_by: by,
            updated_by: by,
            scope: scopeFor(viewer, request.team),
            history: { last_ran: null, next_run: null, recent_runs: [] },
            last_spawn_error: null
          })
        }
        yield* audit.recording(viewer, store.create(stored), () => ({ action: "schedule.create", resource: resource(stored.item.id) }))
        return yield* present(stored, now)
      },
      storageUnavailable,
      audit.refusals("schedule.create", () => resource(null))
    )

    const list = Effect.fn("Schedules.list")(
      function*(viewer: Viewer) {
        const now = yield* Clock.currentTimeMillis
        const schedules = yield* store.list(viewer)
        return new ListScheduledAgentsResponse({ schedules: yield* presentAll(schedules, now) })
      },
      storageUnavailable
    )

    const get = Effect.fn("Schedules.get")(
      function*(viewer: Viewer, id: ScheduleId) {
        return yield* present(yield* visible(viewer, id), yield* Clock.currentTimeMillis)
      },
      storageUnavailable
    )

    const update = Effect.fn("Schedules.update")(
      function*(viewer: Viewer, id: ScheduleId, request: UpdateScheduledAgentRequest) {
        return yield* modify(viewer, id, "schedule.update", (current, now) =>
          Effect.gen(function*() {
            const escapes = budgetEscapeProblem(viewer, "change schedules")
            if (escapes !== undefined) return yield* new NotAuthorized({ message: escapes })
            yield* checkPromptSizes(quotas, request.prompt, request.agent_config)
            const timezone = request.timezone ?? current.item.timezone
            const cron = request.cron_schedule.trim()
            yield* parseSchedule(cron, timezone)
            const config = request.agent_config ?? current.item.agent_config
            const environment = yield* checkConfig(viewer, config)
            const scheduleChanged = cron !== current.item.cron_schedule || timezone !== current.item.timezone
            const state = yield* apply(current, ScheduleEvent.Update({ enabled: request.enabled, scheduleChanged, at: now }))
            return {
              ...current,
              state,
              editor_role: viewer.role,
              item: new ScheduledAgentItem({
                ...current.item,
                name: request.name,
                cron_schedule: cron,
                timezone,
                enabled: isEnabled(state),
                prompt: request.prompt,
                agent_config: config,
                environment,
                updated_at: DateTime.unsafeMake(now),
                updated_by: yield* principalRef(viewer)
              })
            }
          }))
      },
      storageUnavailable,
      audit.refusals("schedule.update", (id: ScheduleId) => resource(id))
    )

    const stateChange = (name: string, action: string, event: (at: number) => ScheduleEvent) =>
      Effect.fn(name)(
        function*(viewer: Viewer, id: ScheduleId) {
          return yield* modify(viewer, id, action, (current, now) =>
            Effect.gen(function*() {
              const state = yield* apply(current, event(now))
              return {
                ...current,
                state,
                item: new ScheduledAgentItem({
                  ...current.item,
                  enabled: isEnabled(state),
                  // Not updated_by: it names who set the prompt and config, whom the runs act as.
                  updated_at: DateTime.unsafeMake(now)
                })
              }
            }))
        },
        storageUnavailable,
        audit.refusals(action, (id: ScheduleId) => resource(id))
      )

    const pause = stateChange("Schedules.pause", "schedule.pause", (at) => ScheduleEvent.Pause({ at }))
    const resuming = stateChange("Schedules.resume", "schedule.resume", (at) => ScheduleEvent.Resume({ at }))
    /** Resumes a schedule; not the agent of a run with a budget (the schedule's runs would not draw on it). */
    const resume = (viewer: Viewer, id: ScheduleId) => {
      const escapes = budgetEscapeProblem(viewer, "resume schedules")
      return escapes === undefined ? resuming(viewer, id) : Effect.fail(new NotAuthorized({ message: escapes }))
    }
    const removed = stateChange("Schedules.remove", "schedule.delete", (at) => ScheduleEvent.Delete({ at }))

    const remove = (viewer: Viewer, id: ScheduleId) =>
      Effect.as(removed(viewer, id), new DeleteScheduledAgentResponse({ success: true }))

    /** The expression in words and its next `count` fire times from now; reads nothing stored. */
    const preview = Effect.fn("Schedules.preview")(function*(request: PreviewScheduleRequest) {
      const schedule = yield* parseSchedule(request.cron_schedule, request.timezone)
      const now = yield* Clock.currentTimeMillis
      return new SchedulePreview({
        description: describeCron(schedule),
        next_runs: nextFireTimes(schedule, now, request.count).map((t) => DateTime.unsafeMake(t))
      })
    })

    /**
     * Adds a run started by hand to the schedule's recent runs (the newest `recentRuns`, as the
     * scheduler keeps them), leaving the rest of the scheduler's part as it is, by the scheduler's
     * compare-and-set (`recordTicksRetrying`). A failure is logged: the run stands.
     */
    const listRecentRun = (id: ScheduleId, run: ScheduledRunRef) =>
      recordTicksRetrying(store, id, (part) => ({
        lastTickAt: part.lastTickAt,
        last_ran: part.history.last_ran,
        last_spawn_error: part.last_spawn_error,
        recent_runs: newestRunsFirst([run, ...part.history.recent_runs.filter((r) => r.run_id !== run.run_id)], recentRuns)
      })).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning(`schedules: run ${run.run_id} started by hand is missing from the recent runs of schedule ${id}`, cause)
        )
      )

    const runNow = Effect.fn("Schedules.runNow")(
      function*(viewer: Viewer, id: ScheduleId) {
        const runs = yield* Runs
        // Refused here: recorded as such; past here, the run's creation records what happens (run.create).
        const schedule = yield* changeable(viewer, id, "viewers cannot run schedules").pipe(
          Effect.tapError((error) => audit.refused(viewer, "schedule.run", resource(id), error))
        )
        const { options, request } = scheduleRunRequest(schedule, viewer, { manual: "true" })
        // From the creation on, nothing is interrupted (a client that hangs up): a run created is listed.
        return yield* Effect.uninterruptible(Effect.gen(function*() {
          const created = yield* runs.create(viewer, request, options)
          const at = DateTime.unsafeMake(yield* Clock.currentTimeMillis)
          yield* listRecentRun(id, { run_id: created.run_id, state: created.state, scheduled_for: at })
          return created
        }))
      },
      storageUnavailable
    )

    return { create, list, get, update, remove, pause, resume, preview, runNow } as const
  })
}) {}
