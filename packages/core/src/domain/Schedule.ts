/**
 * Scheduled agents (docs/schedules.md): the record, its history, and the create / update bodies.
 * Cron expressions are plain strings here (Cron.ts parses them); time zones are IANA names.
 *
 * `environment` is the configuration of the environment named by `agent_config.environment_id`
 * (`null` without one). In the history, `last_ran` and `next_run` are `null` when there is no
 * such time (never ran; paused). `last_spawn_error` is `null` unless the last tick failed to
 * start a run.
 */
import { DateTime, Option, Schema } from "effect"
import { NonBlankString, omittedWhenNull, optionalInput, PrincipalRef, requiredWith, Scope, Timestamp } from "./Common.js"
import { EnvironmentConfig } from "./Environment.js"
import { RunId, ScheduleId } from "./Ids.js"
import { AgentConfig } from "./Run.js"
import { RunState } from "./RunState.js"

/** The time zone of a schedule when none is given. */
export const DEFAULT_TIMEZONE = "UTC"

/** An IANA time zone name (`UTC`, `Europe/Paris`, ...). */
export const TimeZoneName = Schema.String.pipe(
  Schema.filter((s) => Option.isSome(DateTime.zoneMakeNamed(s)) || "must be an IANA time zone such as Europe/Paris", {
    description: "an IANA time zone name"
  })
).annotations({
  identifier: "TimeZoneName",
  arbitrary: () => (fc) =>
    fc.constantFrom("UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Sydney")
})

/** A recent run started by a schedule, with the tick it was started for. */
export const ScheduledRunRef = Schema.Struct({
  run_id: RunId,
  state: RunState,
  scheduled_for: Timestamp
}).annotations({ identifier: "ScheduledRunRef" })
export type ScheduledRunRef = typeof ScheduledRunRef.Type

/** How many runs `history.recent_runs` keeps by default (the scheduler's `recentRuns`). */
export const DEFAULT_RECENT_RUNS = 10

/** Recent runs newest first (by the time each was started for, then by run id, descending), at most `limit`. */
export const newestRunsFirst = (runs: Iterable<ScheduledRunRef>, limit: number): ReadonlyArray<ScheduledRunRef> =>
  [...runs]
    .sort((a, b) =>
      DateTime.toEpochMillis(b.scheduled_for) - DateTime.toEpochMillis(a.scheduled_for) ||
      (a.run_id < b.run_id ? 1 : a.run_id > b.run_id ? -1 : 0)
    )
    .slice(0, Math.max(0, limit))

/** Scheduler-derived history: newest runs first. */
export const ScheduleHistory = Schema.Struct({
  last_ran: Schema.NullOr(Timestamp),
  next_run: Schema.NullOr(Timestamp),
  recent_runs: Schema.Array(ScheduledRunRef)
}).annotations({ identifier: "ScheduleHistory" })
export type ScheduleHistory = typeof ScheduleHistory.Type

/** ScheduledAgentItem. */
export class ScheduledAgentItem extends Schema.Class<ScheduledAgentItem>("ScheduledAgentItem")({
  id: ScheduleId,
  name: Schema.String,
  cron_schedule: Schema.String,
  timezone: Schema.String,
  enabled: Schema.Boolean,
  prompt: Schema.String,
  agent_config: AgentConfig,
  environment: omittedWhenNull(EnvironmentConfig),
  created_at: Timestamp,
  updated_at: Timestamp,
  created_by: PrincipalRef,
  updated_by: PrincipalRef,
  scope: Scope,
  history: ScheduleHistory,
  last_spawn_error: Schema.NullOr(Schema.String)
}) {}

/** CreateScheduledAgentRequest: `timezone` defaults to UTC; `team: true` gives Team scope (default User). */
export class CreateScheduledAgentRequest extends Schema.Class<CreateScheduledAgentRequest>(
  "CreateScheduledAgentRequest"
)({
  name: NonBlankString,
  cron_schedule: NonBlankString,
  prompt: NonBlankString,
  enabled: requiredWith(
    Schema.Boolean,
    "is required: send true to run the schedule on its cron, or false to create it paused"
  ),
  agent_config: optionalInput(AgentConfig),
  timezone: Schema.optionalWith(TimeZoneName, { default: () => DEFAULT_TIMEZONE, nullable: true }),
  team: optionalInput(Schema.Boolean)
}) {}

/**
 * UpdateScheduledAgentRequest (PUT): every field except `agent_config` is required. An omitted
 * `agent_config` or `timezone` keeps the current one.
 */
export class UpdateScheduledAgentRequest extends Schema.Class<UpdateScheduledAgentRequest>(
  "UpdateScheduledAgentRequest"
)({
  name: NonBlankString,
  cron_schedule: NonBlankString,
  prompt: NonBlankString,
  enabled: requiredWith(
    Schema.Boolean,
    "is required (a PUT replaces every field): send true to keep the schedule running on its cron, or false to pause it"
  ),
  agent_config: optionalInput(AgentConfig),
  timezone: optionalInput(TimeZoneName)
}) {}

/** `GET /agent/schedules`, sorted by name. */
export class ListScheduledAgentsResponse extends Schema.Class<ListScheduledAgentsResponse>(
  "ListScheduledAgentsResponse"
)({
  schedules: Schema.Array(ScheduledAgentItem)
}) {}

/** `DELETE /agent/schedules/{scheduleId}`. */
export class DeleteScheduledAgentResponse extends Schema.Class<DeleteScheduledAgentResponse>(
  "DeleteScheduledAgentResponse"
)({
  success: Schema.Literal(true)
}) {}

/** The most fire times `POST /agent/schedules/preview` lists. */
export const MAX_PREVIEW_RUNS = 20

/** The fire times `POST /agent/schedules/preview` lists by default. */
export const DEFAULT_PREVIEW_RUNS = 5

/**
 * `POST /agent/schedules/preview`: a cron expression and time zone, checked as creation checks
 * them; `count` fire times (1 to 20, default 5).
 */
export class PreviewScheduleRequest extends Schema.Class<PreviewScheduleRequest>("PreviewScheduleRequest")({
  cron_schedule: NonBlankString,
  timezone: Schema.optionalWith(TimeZoneName, { default: () => DEFAULT_TIMEZONE, nullable: true }),
  count: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(1, MAX_PREVIEW_RUNS, { message: () => `must be an integer from 1 to ${MAX_PREVIEW_RUNS}` })),
    { default: () => DEFAULT_PREVIEW_RUNS, nullable: true }
  )
}) {}

/** The answer of `POST /agent/schedules/preview`: the expression in words and its next fire times, soonest first. */
export class SchedulePreview extends Schema.Class<SchedulePreview>("SchedulePreview")({
  description: Schema.String,
  next_runs: Schema.Array(Timestamp)
}) {}
