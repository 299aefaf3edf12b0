/** Handlers of the schedules group. */
import { HttpApiBuilder } from "@effect/platform"
import { Schedules } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { SchedulesGroup } from "@agent-runs/api/endpoints/Schedules"
import { CurrentViewer } from "@agent-runs/api/Security"
import { idempotent } from "../Idempotent.js"

export const SchedulesLive = HttpApiBuilder.group(Api, "schedules", (handlers) =>
  Effect.gen(function*() {
    const schedules = yield* Schedules.Schedules
    const ranNow = (yield* idempotent)(SchedulesGroup, "runSchedule")
    return handlers
      .handle("previewSchedule", ({ payload }) => schedules.preview(payload))
      .handle("createSchedule", ({ payload }) => Effect.flatMap(CurrentViewer, (v) => schedules.create(v, payload)))
      .handle("listSchedules", () => Effect.flatMap(CurrentViewer, (v) => schedules.list(v)))
      .handle("getSchedule", ({ path }) => Effect.flatMap(CurrentViewer, (v) => schedules.get(v, path.scheduleId)))
      .handle("updateSchedule", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => schedules.update(v, path.scheduleId, payload)))
      .handle("deleteSchedule", ({ path }) => Effect.flatMap(CurrentViewer, (v) => schedules.remove(v, path.scheduleId)))
      .handle("pauseSchedule", ({ path }) => Effect.flatMap(CurrentViewer, (v) => schedules.pause(v, path.scheduleId)))
      .handle("resumeSchedule", ({ path }) => Effect.flatMap(CurrentViewer, (v) => schedules.resume(v, path.scheduleId)))
      .handle("runSchedule", ({ headers, path }) =>
        Effect.flatMap(CurrentViewer, (v) => ranNow(v, { key: headers["idempotency-key"] }, schedules.runNow(v, path.scheduleId))))
  }))
