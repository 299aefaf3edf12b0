/**
 * The self-hosted worker daemon (`agent-runs worker`, docs/workers.md): connects to a server with
 * a service account's token, says it is there (a heartbeat every `heartbeat_seconds` the server
 * answers), and runs core's execution loop claiming the runs whose `agent_config.worker_host` is
 * its id, with a local executor (processes or Docker containers), the agent CLIs it is given
 * (`harnesses`, as the server's), and the server's worker endpoints as its execution host
 * (`RemoteHost`). The server decides the lease; the worker renews it every third.
 *
 * - Start: the first heartbeat is retried until the server answers (it may not be up yet); a
 *   refusal (401, 403, a bad worker id) ends the daemon with the server's message.
 * - While the server is away (a restart): the agents go on; requests are retried for up to
 *   `retryForMs`; the daemon reconnects by itself. A run whose lease expired meanwhile was
 *   requeued by the server: the worker's writes for it are refused (409) and it stops its agent.
 * - Stop (SIGINT/SIGTERM): it claims no more, its agents may finish for `drainSeconds` (renewing
 *   their leases), then the worker says it disconnects (no longer listed; the server answers no
 *   claim of it after), then the rest are stopped, their sandboxes released, their runs handed
 *   back to the queue at the same attempt (`HandOver`, ExecutionLoop.ts). Killed, its runs come back through the
 *   server's lease sweep (attempt + 1); either way to this worker id when a worker with it
 *   connects again.
 * - Start-up after a crash: sandboxes left in the data directory are released (their agents
 *   killed) before anything is claimed, so a run is never executed twice by one worker.
 */
import { Dispatcher, ExecutionLoop, Executor, Health, Ids, LiveExecutions, Worker } from "@agent-runs/core"
import { DockerExecutor } from "@agent-runs/executor-docker"
import { LocalRepoSource, ProcessExecutor, ProcessIsolation } from "@agent-runs/executor-process"
import { AGENT_MOUNT, defaultHarness, installCopy, packageDir } from "@agent-runs/scripted-agent/Location"
import { VERSION } from "@agent-runs/core/domain/Release"
import * as WorkerProtocol from "@agent-runs/core/domain/WorkerProtocol"
import { Console, Data, Duration, Effect, Fiber, Layer, Option, Ref, Schedule } from "effect"
import { join } from "node:path"
import type { AgentHarnesses } from "@agent-runs/core/ports/AgentHarness"
import type { Connection } from "./RemoteHost.js"
import * as RemoteHost from "./RemoteHost.js"

/** How the worker runs. */
export interface WorkerOptions extends Connection {
  readonly executor: "process" | "docker"
  /** Runs executed at once. */
  readonly capacity: number
  /** Sandboxes live under `<dataDir>/sandboxes`. */
  readonly dataDir: string
  /** Where repositories are found, as `<reposDir>/<team_uid>/<owner>/<repo>` like the server's (default `<dataDir>/repos`). */
  readonly reposDir?: string | undefined
  /** The default agent command (default: the bundled scripted agent). */
  readonly harness?: string | undefined
  /** Docker: the image of environments without one. */
  readonly dockerImage?: string | undefined
  readonly displayName?: string | undefined
  readonly labels?: ReadonlyArray<string> | undefined
  /** Process sandboxes as users of their own: `auto` (default: when root), `uid` or `none` (docs/security.md). */
  readonly processIsolation?: ProcessIsolation.Mode | undefined
  /**
   * On stop, how long running agents may finish before they are stopped and their runs handed back
   * (default 0: at once).
   */
  readonly drainSeconds?: number | undefined
  /** The agent CLIs runs may select with `config.harness.type`, as the server's (none: only the default agent). */
  readonly harnesses?: Layer.Layer<AgentHarnesses> | undefined
}

/** The server refused the worker (bad token, not a service account, bad worker id). */
export class WorkerRefused extends Data.TaggedError("WorkerRefused")<{ readonly message: string }> {}

const describe = (error: unknown) => {
  const e = error as { readonly message?: string; readonly errorCode?: string }
  return e.errorCode === undefined ? String(e.message ?? error) : `${e.errorCode}: ${e.message ?? ""}`
}

/** Where `owner/repo` repositories are: `--repos-dir`, else `<dataDir>/repos` (as the server's default). */
const reposDirOf = (options: WorkerOptions) => options.reposDir ?? join(options.dataDir, "repos")

const sandboxesOf = (options: WorkerOptions) => join(options.dataDir, "sandboxes")

/**
 * The process sandboxes' isolation (as the server's: docs/security.md) and the default harness:
 * with isolation, the scripted agent runs from a copy under `<dataDir>/agents/` sandbox users can read.
 */
const setUpExecution = (options: WorkerOptions) =>
  Effect.gen(function*() {
    if (options.executor !== "process") return { isolation: undefined, harness: options.harness ?? defaultHarness(options.executor) }
    const isolation = yield* ProcessIsolation.setUp({
      mode: options.processIsolation ?? "auto",
      uids: ProcessIsolation.DEFAULT_UIDS,
      dataDir: options.dataDir,
      root: sandboxesOf(options),
      private: [reposDirOf(options)]
    })
    const harness = options.harness ??
      (isolation === undefined
        ? defaultHarness("process")
        : yield* ProcessIsolation.sharedProgram(options.dataDir, "scripted-agent", installCopy))
    return { isolation, harness }
  })

const executorLayer = (options: WorkerOptions, isolation: ProcessExecutor.Isolation | undefined) => {
  const root = sandboxesOf(options)
  const reposDir = reposDirOf(options)
  return options.executor === "docker"
    ? DockerExecutor.layer({
      root,
      reposDir,
      image: options.dockerImage ?? "agent-runs-agent:latest",
      mounts: [{ host: packageDir, container: AGENT_MOUNT, readOnly: true }]
    })
    : ProcessExecutor.layer({ root, reposDir, isolation })
}

/**
 * Releases the sandboxes of an earlier life of the worker (their agents killed) before anything is
 * claimed: workers keep no debug windows, and the server requeues those runs once their leases expire.
 */
const releaseLeftovers = Layer.effectDiscard(
  Effect.gen(function*() {
    const executor = yield* Executor.Executor
    const leftovers = yield* executor.leftovers.pipe(
      Effect.catchAll((e) => Effect.as(Effect.logWarning("worker: could not list leftover sandboxes", e), []))
    )
    for (const sandbox of leftovers) yield* sandbox.release
    if (leftovers.length > 0) yield* Effect.logInfo(`worker: released ${leftovers.length} sandboxes of an earlier run of the worker`)
  })
)

/**
 * The worker protocol this worker and the server both speak (WorkerProtocol.ts): a server one minor
 * release apart is spoken to in the older one's; further apart, the worker stops with both named.
 */
const agreedProtocol = (options: WorkerOptions, answer: Worker.HeartbeatResponse) => {
  const theirs = WorkerProtocol.rangeSaid(answer)
  return Option.match(WorkerProtocol.agree(WorkerProtocol.spoken, theirs), {
    onSome: Effect.succeed,
    onNone: () =>
      Effect.fail(
        new WorkerRefused({
          message: `the server ${options.server} (release ${answer.version ?? "0.1"}) speaks worker protocols ` +
            `${WorkerProtocol.describe(theirs)} and this worker (release ${VERSION}) ${WorkerProtocol.describe(WorkerProtocol.spoken)}: ` +
            "run a worker of the server's release or one minor release apart"
        })
      )
  })
}

/** Runs the worker until interrupted. */
export const run = (options: WorkerOptions) =>
  Effect.gen(function*() {
    const execution = yield* setUpExecution(options)
    const server = yield* RemoteHost.presence(options)
    const beat = server.heartbeat(
      new Worker.HeartbeatRequest({
        capacity: options.capacity,
        protocol: WorkerProtocol.WORKER_PROTOCOL,
        oldest_protocol: WorkerProtocol.OLDEST_WORKER_PROTOCOL,
        version: VERSION,
        ...(options.displayName === undefined ? {} : { display_name: options.displayName }),
        ...(options.labels === undefined ? {} : { labels: options.labels })
      })
    )
    // The first heartbeat: wait for the server; a refusal ends the worker.
    const settings = yield* beat.pipe(
      Effect.tapError((e) =>
        RemoteHost.isTransient(e) ? Effect.logWarning(`worker: ${options.server} does not answer yet: ${describe(e)}`) : Effect.void
      ),
      Effect.retry({ while: RemoteHost.isTransient, schedule: Schedule.spaced(Duration.seconds(1)) }),
      Effect.mapError((e) => new WorkerRefused({ message: `the server refused worker ${options.workerId}: ${describe(e)}` }))
    )
    const protocol = yield* agreedProtocol(options, settings)
    yield* Console.log(
      `Worker ${options.workerId} connected to ${options.server} (${options.executor} executor, capacity ${options.capacity}, ` +
        `lease ${settings.lease_seconds} s, release ${settings.version ?? "0.1"}, worker protocol ${protocol})`
    )
    // It says it leaves when its loop stops executing (after the drain, before it hands its runs
    // back: the server answers no claim of it after, ExecutionLoop.ts), or at the latest when it
    // stops; its heartbeats stop first, so that none lands after the goodbye and lists it again.
    const heartbeats = yield* Ref.make<Option.Option<Fiber.RuntimeFiber<unknown, unknown>>>(Option.none())
    const goodbye = yield* Effect.once(
      Ref.get(heartbeats).pipe(
        Effect.flatMap(Option.match({ onNone: () => Effect.void, onSome: Fiber.interrupt })),
        // Interruptible, so that the timeout holds in a finalizer (a server that never answers).
        Effect.zipRight(server.disconnect.pipe(Effect.interruptible, Effect.timeout(Duration.seconds(5)))),
        Effect.catchAll((e) => Effect.logWarning(`worker: could not say goodbye: ${describe(e)}`))
      )
    )
    yield* Effect.addFinalizer(() => goodbye)
    // Heartbeats for as long as the worker lives, agreeing on the protocol again with a server that
    // was upgraded meanwhile.
    const agreed = yield* Ref.make(protocol)
    const beating = yield* beat.pipe(
      Effect.flatMap((answer) => agreedProtocol(options, answer)),
      Effect.flatMap((now) => Ref.set(agreed, now)),
      Effect.catchAll((e) => Effect.logWarning(`worker: heartbeat failed: ${describe(e)}`)),
      Effect.repeat(Schedule.spaced(Duration.seconds(settings.heartbeat_seconds))),
      Effect.delay(Duration.seconds(settings.heartbeat_seconds)),
      Effect.forkScoped
    )
    yield* Ref.set(heartbeats, Option.some(beating))
    const loop = ExecutionLoop.layer.pipe(
      Layer.provide(releaseLeftovers),
      Layer.provide(options.harnesses ?? Layer.empty),
      Layer.provide(executorLayer(options, execution.isolation)),
      // Skills are read when a run is claimed (docs/skills.md): from this worker's repositories.
      Layer.provide(RemoteHost.layer(options, Ref.get(agreed), goodbye).pipe(Layer.provide(LocalRepoSource.layer({ reposDir: reposDirOf(options) })))),
      Layer.provide(Ids.IdsLive),
      Layer.provide(Health.layer),
      Layer.provide(LiveExecutions.LiveExecutions.Default),
      Layer.provide(
        Layer.succeed(Dispatcher.DispatcherConfig, {
          ...Dispatcher.defaultSettings(execution.harness, `${options.server.replace(/\/+$/, "")}/api/v1`),
          concurrency: options.capacity,
          leaseMs: settings.lease_seconds * 1000,
          drainMs: (options.drainSeconds ?? 0) * 1000,
          // The server's output limit (it refuses transcript bytes past it), and its runtime ceiling.
          ...(settings.max_output_bytes === undefined ? {} : { maxOutputBytes: settings.max_output_bytes }),
          // None from a server older than the setting: no limit (it would not know the error code).
          maxRuntimeSeconds: settings.max_runtime_seconds
        })
      )
    )
    return yield* Layer.launch(loop)
  }).pipe(Effect.scoped)
