/**
 * The scheduler of the bundled server: on every replica unless `AGENT_RUNS_SCHEDULER=off`, with
 * the configured catch-up grace. Composition only.
 */
import { Scheduler } from "@agent-runs/core"
import { Layer } from "effect"
import type { ServerConfig } from "./Config.js"

/** The scheduler's loop; needs the schedule and identity stores and the runs service. */
export const SchedulingLive = (config: ServerConfig) =>
  config.scheduler.enabled
    ? Scheduler.layer.pipe(
      Layer.provide(
        Layer.succeed(Scheduler.SchedulerConfig, {
          ...Scheduler.defaultSettings,
          catchUpGraceMs: Math.round(config.scheduler.graceSeconds * 1000)
        })
      )
    )
    : Layer.empty
