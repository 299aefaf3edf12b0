/**
 * `agent-runs worker --server URL --token TOKEN --worker-id ID [--executor process|docker]
 * [--capacity N] [--team UID] [--data-dir DIR] [--repos-dir DIR] [--harness CMD]
 * [--docker-image IMAGE] [--display-name NAME] [--label L]... [--process-isolation auto|uid|none]
 * [--drain-seconds N]`: the self-hosted worker daemon
 * (`@agent-runs/worker`, docs/workers.md). It runs the runs whose `agent_config.worker_host` is
 * its id until it is stopped (SIGINT/SIGTERM). `--server`, `--token`, `--team` and `--worker-id`
 * default to `AGENT_RUNS_URL`, `AGENT_RUNS_TOKEN`, `AGENT_RUNS_TEAM` and `AGENT_RUNS_WORKER_ID`.
 */
import { Command, Options } from "@effect/cli"
import { Worker } from "@agent-runs/core"
import { Config, Data, Effect, Option, Schema } from "effect"
import { resolve } from "node:path"
import { HarnessesLive } from "../serve/Harnesses.js"
import { TelemetryLive } from "../serve/Telemetry.js"
import { TelemetryConfig } from "../serve/TelemetryConfig.js"
import * as Connection from "./Connection.js"

/** The worker stopped on a failure (the server refused it); main.ts prints the message. */
export class WorkerFailed extends Data.TaggedError("WorkerFailed")<{ readonly message: string }> {}

const server = Connection.server
const token = Connection.token("the API token of a service account of the team, role member or admin")
const team = Connection.team("work for")

const workerId = Options.text("worker-id").pipe(
  Options.withFallbackConfig(Config.string("AGENT_RUNS_WORKER_ID")),
  Options.withSchema(Worker.WorkerId),
  Options.withDescription("this worker's id: runs with agent_config.worker_host = ID run here (default: $AGENT_RUNS_WORKER_ID)")
)

const executor = Options.choice("executor", ["process", "docker"]).pipe(
  Options.withDefault("process" as const),
  Options.withDescription("run agents as local processes (default) or in Docker containers")
)

const capacity = Options.integer("capacity").pipe(
  Options.withSchema(Schema.Int.pipe(Schema.between(1, 1000))),
  Options.withDefault(4),
  Options.withDescription("how many runs this worker executes at once (default 4)")
)

const dataDir = Options.directory("data-dir").pipe(
  Options.withDefault("./agent-runs-worker"),
  Options.withDescription("where sandboxes live (default ./agent-runs-worker)")
)

const reposDir = Options.directory("repos-dir").pipe(
  Options.optional,
  Options.withDescription("where the team's git repositories are found, as <team_uid>/<owner>/<repo> (default <data-dir>/repos)")
)

const harness = Options.text("harness").pipe(
  Options.optional,
  Options.withDescription("the default agent command, a shell command (default: the bundled scripted agent)")
)

const dockerImage = Options.text("docker-image").pipe(
  Options.withDefault("agent-runs-agent:latest"),
  Options.withDescription("with --executor docker: the image of environments that name none")
)

const displayName = Options.text("display-name").pipe(
  Options.optional,
  Options.withDescription("the name the connected-workers list shows (default: the worker id)")
)

const labels = Options.text("label").pipe(
  Options.repeated,
  Options.withDescription("a label the connected-workers list shows (repeatable)")
)

const processIsolation = Options.choice("process-isolation", ["auto", "uid", "none"]).pipe(
  Options.withFallbackConfig(Config.literal("auto", "uid", "none")("AGENT_RUNS_PROCESS_ISOLATION")),
  Options.withDefault("auto" as const),
  Options.withDescription(
    "process sandboxes as users of their own: auto (default: when run as root), uid, or none " +
      "(agents can then read this worker's files; default: $AGENT_RUNS_PROCESS_ISOLATION)"
  )
)

// Off unless asked for: under a supervisor that signals the whole process group (systemd's default
// KillMode=control-group, `docker stop`) the agents get the SIGTERM too, and would end as failures
// while the worker waited for them (docs/workers.md).
const drainSeconds = Options.integer("drain-seconds").pipe(
  Options.withFallbackConfig(Config.integer("AGENT_RUNS_DRAIN_SECONDS")),
  Options.withSchema(Schema.Int.pipe(Schema.between(0, 3600))),
  Options.withDefault(0),
  Options.withDescription(
    "on SIGTERM, how long running agents may finish (0 to 3600) before they are stopped and their runs handed back " +
      "to the queue at the same attempt (default: $AGENT_RUNS_DRAIN_SECONDS, else 0: at once)"
  )
)

/** The daemon with the OpenTelemetry export the `OTEL_*` variables ask for, as the server's (docs/observability.md). */
const withTelemetry = <A, E, R>(daemon: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Effect.mapError(TelemetryConfig, (error) => ({ message: `telemetry: ${String(error)}` })),
    (telemetry) => Effect.provide(daemon, TelemetryLive(telemetry))
  )

export const workerCommand = Command.make(
  "worker",
  { server, token, team, workerId, executor, capacity, dataDir, reposDir, harness, dockerImage, displayName, labels, processIsolation, drainSeconds },
  (options) =>
    // The daemon (and its executors) is loaded only by this command, so that the others start quickly.
    Effect.flatMap(Effect.promise(() => import("@agent-runs/worker")), ({ WorkerDaemon }) => withTelemetry(WorkerDaemon.run({
      server: options.server,
      token: options.token,
      team: options.team,
      workerId: options.workerId,
      executor: options.executor,
      capacity: options.capacity,
      dataDir: resolve(options.dataDir),
      reposDir: Option.getOrUndefined(Option.map(options.reposDir, (dir) => resolve(dir))),
      harness: Option.getOrUndefined(options.harness),
      dockerImage: options.dockerImage,
      displayName: Option.getOrUndefined(options.displayName),
      labels: options.labels,
      processIsolation: options.processIsolation,
      drainSeconds: options.drainSeconds,
      harnesses: HarnessesLive
    }))).pipe(Effect.mapError((error) => new WorkerFailed({ message: error.message })))
).pipe(
  Command.withDescription(
    "Run a self-hosted worker: connect to the server, and run the runs whose agent_config.worker_host is this " +
      "worker's id with a local executor, until stopped."
  )
)
