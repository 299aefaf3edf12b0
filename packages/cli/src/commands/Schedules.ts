/**
 * `agent-runs schedules list|get|pause|resume|run`: scheduled agents through the HTTP API (the
 * Effect client of `@agent-runs/client`); `run` starts one of its runs now, paused or not.
 */
import { Args, Command, Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import { Ids, Schedule } from "@agent-runs/core"
import { Console, Effect, Schema } from "effect"
import * as Format from "../Format.js"
import * as Connection from "./Connection.js"
import * as IdArgs from "./Ids.js"

const json = Options.boolean("json").pipe(Options.withDescription("print JSON (the API's answer) instead of text"))
const scheduleIdArg = Args.text({ name: "SCHEDULE_ID" }).pipe(Args.withDescription("the schedule's id"))
const decodeScheduleId = IdArgs.decode(Ids.ScheduleId, "schedule id")

const scheduleJson = (schedule: Schedule.ScheduledAgentItem): string =>
  JSON.stringify(Schema.encodeSync(Schedule.ScheduledAgentItem)(schedule))

const describeSchedule = (schedule: Schedule.ScheduledAgentItem): string => {
  const lines: Array<[string, string]> = [
    ["schedule", schedule.id],
    ["name", schedule.name],
    ["cron", `${schedule.cron_schedule} (${schedule.timezone})`],
    ["enabled", String(schedule.enabled)],
    ["last run", Format.date(schedule.history.last_ran)],
    ["next run", Format.date(schedule.history.next_run)],
    ["created", Format.date(schedule.created_at)]
  ]
  if (schedule.last_spawn_error !== null) lines.push(["last error", schedule.last_spawn_error])
  for (const run of schedule.history.recent_runs) lines.push(["recent run", JSON.stringify(run)])
  const width = Math.max(...lines.map(([key]) => key.length)) + 1
  return [...lines.map(([key, value]) => `${`${key}:`.padEnd(width)} ${value}`), "", schedule.prompt].join("\n")
}

const list = Command.make("list", { ...Connection.options, json }, (options) =>
  Effect.gen(function*() {
    const client = yield* AgentRunsClient.AgentRunsClient
    const { schedules } = yield* client.schedules.listSchedules({ headers: {} })
    if (options.json) return yield* Effect.forEach(schedules, (s) => Console.log(scheduleJson(s)), { discard: true })
    yield* Console.log(
      schedules.length === 0 ? "no schedules" : Format.table(
        ["SCHEDULE ID", "ENABLED", "CRON", "NEXT RUN", "NAME"],
        schedules.map((s) => [s.id, s.enabled ? "yes" : "no", s.cron_schedule, Format.date(s.history.next_run), s.name])
      )
    )
  }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(
    Command.withDescription("List the team's schedules: a table, or NDJSON with --json.")
  )

const get = Command.make("get", { ...Connection.options, scheduleId: scheduleIdArg, json }, (options) =>
  Effect.gen(function*() {
    const scheduleId = yield* decodeScheduleId(options.scheduleId)
    const client = yield* AgentRunsClient.AgentRunsClient
    const schedule = yield* client.schedules.getSchedule({ headers: {}, path: { scheduleId } })
    yield* Console.log(options.json ? scheduleJson(schedule) : describeSchedule(schedule))
  }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(Command.withDescription("Show a schedule."))

const toggle = (name: "pause" | "resume") =>
  Command.make(name, { ...Connection.options, scheduleId: scheduleIdArg }, (options) =>
    Effect.gen(function*() {
      const scheduleId = yield* decodeScheduleId(options.scheduleId)
      const client = yield* AgentRunsClient.AgentRunsClient
      const request = { headers: {}, path: { scheduleId } }
      const schedule = yield* (name === "pause"
        ? client.schedules.pauseSchedule(request)
        : client.schedules.resumeSchedule(request))
      yield* Console.log(`${name === "pause" ? "paused" : "resumed"} ${schedule.id} (${schedule.name})`)
    }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(
      Command.withDescription(name === "pause" ? "Pause a schedule: it starts no runs until resumed." : "Resume a paused schedule.")
    )

const runNow = Command.make("run", { ...Connection.options, scheduleId: scheduleIdArg, json }, (options) =>
  Effect.gen(function*() {
    const scheduleId = yield* decodeScheduleId(options.scheduleId)
    const client = yield* AgentRunsClient.AgentRunsClient
    const started = yield* client.schedules.runSchedule({ headers: {}, path: { scheduleId } })
    yield* Console.log(options.json ? JSON.stringify(started) : `started run ${started.run_id} (${started.state})`)
  }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(
    Command.withDescription("Run a schedule now, paused or not: one run on the schedule, with metadata manual=true.")
  )

/** `agent-runs schedules …`. */
export const schedulesCommand = Command.make("schedules").pipe(
  Command.withDescription("List, inspect, pause, resume and run scheduled agents."),
  Command.withSubcommands([list, get, toggle("pause"), toggle("resume"), runNow])
)
