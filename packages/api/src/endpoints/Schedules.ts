/** Scheduled agents: CRUD, pause and resume, run now, and the preview of a cron expression. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Run, Schedule } from "@agent-runs/core"
import { IdempotentTeamHeaders } from "../Idempotency.js"
import * as Problems from "../Problems.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"
import * as P from "./Params.js"

/** The schedules group. */
export class SchedulesGroup extends HttpApiGroup.make("schedules")
  .add(
    HttpApiEndpoint.post("createSchedule", "/agent/schedules")
      .setHeaders(TeamHeaders)
      .setPayload(Schedule.CreateScheduledAgentRequest)
      .addSuccess(Schedule.ScheduledAgentItem, { status: 201 })
      .addError(Problems.FeatureNotAvailable, { status: 403 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Create a scheduled agent",
          "Runs the prompt on a cron schedule (5 fields, or 6 with seconds first) in `timezone` (default UTC). " +
            "400: missing fields or an invalid or never-matching cron expression; 403 feature_not_available: the " +
            "team lacks scheduled_agents."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("previewSchedule", "/agent/schedules/preview")
      .setHeaders(TeamHeaders)
      .setPayload(Schedule.PreviewScheduleRequest)
      .addSuccess(Schedule.SchedulePreview)
      .annotateContext(
        doc(
          "Preview a cron schedule",
          "The expression in words (`description`) and its next `count` fire times from now (1 to 20, default 5) " +
            "in `timezone` (default UTC), as the scheduler would fire them. 400 naming `cron_schedule` or " +
            "`timezone`, as schedule creation answers. Reads nothing stored: any team member may call it."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listSchedules", "/agent/schedules")
      .setHeaders(TeamHeaders)
      .addSuccess(Schedule.ListScheduledAgentsResponse)
      .annotateContext(doc("List scheduled agents", "Sorted alphabetically by name."))
  )
  .add(
    HttpApiEndpoint.get("getSchedule")`/agent/schedules/${P.scheduleId}`
      .setHeaders(TeamHeaders)
      .addSuccess(Schedule.ScheduledAgentItem)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Get a scheduled agent", "Its configuration, history and next scheduled run time."))
  )
  .add(
    HttpApiEndpoint.put("updateSchedule")`/agent/schedules/${P.scheduleId}`
      .setHeaders(TeamHeaders)
      .setPayload(Schedule.UpdateScheduledAgentRequest)
      .addSuccess(Schedule.ScheduledAgentItem)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc(
          "Replace a scheduled agent",
          "Every field except agent_config (and timezone) is required; omitted ones keep their values. " +
            "`enabled: false` pauses it."
        )
      )
  )
  .add(
    HttpApiEndpoint.del("deleteSchedule")`/agent/schedules/${P.scheduleId}`
      .setHeaders(TeamHeaders)
      .addSuccess(Schedule.DeleteScheduledAgentResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(doc("Delete a scheduled agent", "All future scheduled runs stop."))
  )
  .add(
    HttpApiEndpoint.post("pauseSchedule")`/agent/schedules/${P.scheduleId}/pause`
      .setHeaders(TeamHeaders)
      .addSuccess(Schedule.ScheduledAgentItem)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(doc("Pause a scheduled agent", "It fires nothing until resumed, and does not catch up."))
  )
  .add(
    HttpApiEndpoint.post("resumeSchedule")`/agent/schedules/${P.scheduleId}/resume`
      .setHeaders(TeamHeaders)
      .addSuccess(Schedule.ScheduledAgentItem)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(doc("Resume a scheduled agent", "It runs per its cron schedule again, from now on."))
  )
  .add(
    HttpApiEndpoint.post("runSchedule")`/agent/schedules/${P.scheduleId}/run`
      .setHeaders(IdempotentTeamHeaders)
      .addSuccess(Run.RunAgentResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.OperationNotSupported, { status: 422 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Run a scheduled agent now",
          "Starts one run from the schedule's prompt and agent_config at once, as the caller, with the checks, " +
            "admission and quota of POST /agent/runs (same answer). The run has source SCHEDULED_AGENT, the " +
            "schedule's id in `schedule`, metadata `manual: \"true\"`, and is listed in the schedule's " +
            "history.recent_runs. Allowed on a paused schedule (it stays paused). Who may: as for pause."
        )
      )
  )
  .middleware(Authentication)
  .annotateContext(doc("Schedules", "Agents that run on a cron schedule."))
{}
