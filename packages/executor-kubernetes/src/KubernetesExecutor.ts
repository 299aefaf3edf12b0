/**
 * The `Executor` port on Kubernetes: one `batch/v1` Job per execution, whose one pod is the
 * sandbox (Manifests.ts), its variables in a Secret owned by the Job.
 *
 * - `prepare` creates the Secret and the Job, waits for the pod to run (PodWait.ts), clones the
 *   repositories and writes the attachments on the server's side (as the Docker executor does),
 *   streams them into the pod's work directory `/work` (Upload.ts), then runs the setup commands in
 *   the pod, each over an exec.
 * - `start` runs the agent over an exec (PodAgent.ts): its stdout is the transcript, its stdin takes
 *   the follow-ups, its exit status ends it. The agent's own variables (harness credentials) reach
 *   it over an exec's stdin, never argv or the pod's spec.
 * - `release` deletes the Job (`Foreground`: its pod first) and the Secret; what still ran in the
 *   pod ends with it.
 * - `startLasting` runs the agent in the background over files of the pod instead
 *   (LastingPodAgent.ts), so that a stopping server can leave it running: the Job is then
 *   annotated with the agent's tag (and where each clone started), and the server's next process
 *   finds it in `adoptable` and reads on from where the last one stopped.
 * - `leftovers` are this server's other Jobs (label `agent-runs/instance`), found by label after a
 *   restart; the engine releases them or keeps them for an open debug window. An agent started
 *   with `start` that was running cannot be reattached (an exec's streams die with the
 *   connection): it is stopped with its sandbox.
 * - `shared` are every server's Jobs in the namespace: the engine's reaper releases those whose
 *   run ended, moved to another execution or is unknown (engine/SandboxReaper.ts in core).
 */
import { type Cloned, isSafeSegment, MirrorCache, publishClone, readClones, stageWorkspace, writeClones } from "@agent-runs/git"
import type { ExecutionId, RunId, TeamUid } from "@agent-runs/core/domain/Ids"
import type { Adoptable, Sandbox, SandboxAttachment, SandboxRepository, SandboxSpec } from "@agent-runs/core/ports/Executor"
import { Executor, ExecutorError, PublishFailed, SetupFailed } from "@agent-runs/core/ports/Executor"
import { PatchStrategy, setHeaderOptions, type V1Job, type V1Secret } from "@kubernetes/client-node"
import { Duration, Effect, Layer, Option } from "effect"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { type Cluster, call, callOrGone, callUnless, type ClusterSource, connect } from "./internal/Cluster.js"
import { adoptLastingAgent, type LeftAgent, startLastingAgent } from "./internal/LastingPodAgent.js"
import { startAgent } from "./internal/PodAgent.js"
import { runToEnd } from "./internal/PodExec.js"
import { waitForPod } from "./internal/PodWait.js"
import { isTag, isVariableName } from "./internal/Shell.js"
import { uploadDirectory } from "./internal/Upload.js"
import { inRealTime } from "./internal/WallClock.js"
import { jobOf, secretOf, WORK_DIR } from "./Manifests.js"
import {
  ATTACHMENTS_ANNOTATION,
  CLONES_ANNOTATION,
  type ExecutionRef,
  instanceSelector,
  jobName,
  Labels,
  labelValue,
  LEFT_AGENT_ANNOTATION,
  leftSelector,
  managedSelector,
  secretName
} from "./Names.js"
import { defaultSettings, type KubernetesSettings } from "./Settings.js"

export interface KubernetesExecutorConfig {
  /** Where the cluster is: `default` (`KUBECONFIG`, else the in-cluster service account) or a kubeconfig's content. */
  readonly cluster: ClusterSource
  /** Over `defaultSettings` (an undefined value keeps the default); the namespace defaults to the kubeconfig context's. */
  readonly settings?: { readonly [K in keyof KubernetesSettings]?: KubernetesSettings[K] | undefined } | undefined
  /** The teams' local repositories: `<reposDir>/<team_uid>/<owner>/<repo>`. */
  readonly reposDir: string
  /** The teams' mirrors of their Git host's repositories. Private to the executor. */
  readonly mirrorsDir: string
  /** The most bytes the mirrors may take (20 GiB by default). */
  readonly mirrorsMaxBytes?: number | undefined
  /** Where a work directory is made before it is streamed into its pod (removed then). */
  readonly scratchDir: string
}

/** The longest one repository's clone may take. */
const CLONE_TIMEOUT_MS = 10 * 60_000
/** How long a leftover's pod may take to be found running. */
const LEFTOVER_POD_WAIT_MS = 30_000

/** The attachments a Job's annotation lists; anything else is none (the annotation is not trusted). */
const attachmentsOf = (job: V1Job): ReadonlyArray<SandboxAttachment> => {
  try {
    const listed: unknown = JSON.parse(job.metadata?.annotations?.[ATTACHMENTS_ANNOTATION] ?? "[]")
    return Array.isArray(listed)
      ? listed.filter((a): a is SandboxAttachment =>
        typeof a === "object" && a !== null && typeof a.name === "string" && typeof a.media_type === "string" && typeof a.path === "string"
      )
      : []
  } catch {
    return []
  }
}

/** The annotation of a Job whose agent was left: its tag and its runner's pid. */
const leftAgentValue = (agent: LeftAgent) => `${agent.tag}:${agent.runner}`

/** Builds the executor on the cluster of `config`. */
export const make = (config: KubernetesExecutorConfig): Effect.Effect<Executor["Type"], ExecutorError> =>
  Effect.gen(function*() {
    const cluster: Cluster = yield* connect(config.cluster, config.settings?.namespace)
    const given = Object.fromEntries(Object.entries(config.settings ?? {}).filter(([, value]) => value !== undefined))
    const settings: KubernetesSettings = { ...defaultSettings, ...given, namespace: cluster.namespace }
    const setupTimeoutMs = settings.setupTimeoutSeconds * 1000
    const reposDir = Path.resolve(config.reposDir)
    const scratchDir = Path.resolve(config.scratchDir)
    const mirrors = MirrorCache.make({ root: Path.resolve(config.mirrorsDir), timeoutMs: CLONE_TIMEOUT_MS, maxBytes: config.mirrorsMaxBytes })

    const deleteJob = (name: string) =>
      callOrGone(`delete Job ${name}`, () =>
        cluster.batch.deleteNamespacedJob({ name, namespace: cluster.namespace, propagationPolicy: "Foreground" }))
    const deleteSecret = (name: string) =>
      callOrGone(`delete Secret ${name}`, () => cluster.core.deleteNamespacedSecret({ name, namespace: cluster.namespace }))

    const makeSandbox = (args: {
      readonly execution: ExecutionRef
      readonly attachments: ReadonlyArray<SandboxAttachment>
      /** The pod's name, once it runs. */
      readonly pod: Effect.Effect<string, ExecutorError>
      /** The team and where each clone started (a sandbox prepared here, or whose agent was left with them). */
      readonly clones?: { readonly team: string; readonly started: ReadonlyMap<string, Cloned> }
    }) => {
      const job = jobName(args.execution)
      let released = false
      const start = Effect.fn("KubernetesExecutor.start")(function*(command: ReadonlyArray<string>, env: Readonly<Record<string, string>>) {
        const pod = yield* args.pod
        return yield* startAgent({ cluster, pod, command, env, released: () => released })
      }, inRealTime)
      // Marked as left by the patch, or already taken by another server (which only a mark allows).
      const leftOrTaken = (found: V1Job, agent: LeftAgent) => {
        const labels = found.metadata?.labels ?? {}
        return (labels[Labels.left] === "true" && found.metadata?.annotations?.[LEFT_AGENT_ANNOTATION] === leftAgentValue(agent)) ||
          (labels[Labels.left] === undefined && labels[Labels.instance] !== labelValue(settings.instance))
      }
      const readJob = callOrGone(`read Job ${job}`, () => cluster.batch.readNamespacedJob({ name: job, namespace: cluster.namespace }))
      // Leaving an agent marks the Job with its tag and runner and where each clone started, for
      // the next process. A patch whose answer was lost may have been made: the Job says.
      const leave = (agent: LeftAgent) =>
        call(`mark Job ${job} as left`, () =>
          cluster.batch.patchNamespacedJob(
            {
              name: job,
              namespace: cluster.namespace,
              body: {
                metadata: {
                  labels: { [Labels.left]: "true" },
                  annotations: {
                    [LEFT_AGENT_ANNOTATION]: leftAgentValue(agent),
                    ...(args.clones === undefined ? {} : { [CLONES_ANNOTATION]: writeClones(args.clones.started) })
                  }
                }
              }
            },
            setHeaderOptions("Content-Type", PatchStrategy.MergePatch)
          )).pipe(
            Effect.asVoid,
            Effect.catchAll((error) =>
              Effect.flatMap(Effect.orElseSucceed(readJob, () => Option.none<V1Job>()), (found) =>
                Option.isSome(found) && leftOrTaken(found.value, agent) ? Effect.void : Effect.fail(error))
            )
          )
      const startLasting = Effect.fn("KubernetesExecutor.startLasting")(function*(command: ReadonlyArray<string>, env: Readonly<Record<string, string>>) {
        const pod = yield* args.pod
        return yield* startLastingAgent({ cluster, pod, command, env, released: () => released, leave })
      }, inRealTime)
      /** The agent an earlier process left in the pod (taken by this one: `take`), its stdout from `offset`. */
      const adopt = (left: LeftAgent) => (offset: number) =>
        Effect.gen(function*() {
          const pod = yield* args.pod
          return yield* adoptLastingAgent({ cluster, pod, released: () => released, leave }, left, offset)
        }).pipe(inRealTime, Effect.withSpan("KubernetesExecutor.adopt"))
      const release = Effect.gen(function*() {
        released = true
        yield* deleteJob(job)
        yield* deleteSecret(secretName(args.execution))
      }).pipe(
        Effect.tapError((error) => Effect.logWarning(`could not remove the sandbox ${job}: ${error.message}`)),
        Effect.ignore,
        Effect.withSpan("KubernetesExecutor.release")
      )
      const clones = args.clones
      const pushes = clones === undefined ? undefined : publishClone({ mirrors, ...clones, start, timeoutMs: CLONE_TIMEOUT_MS })
      const publish = pushes === undefined ? undefined : (repository: SandboxRepository, branch: string) =>
        pushes(repository, branch).pipe(Effect.mapError((e) => new PublishFailed({ message: e.message })))
      const sandbox: Sandbox = {
        id: job,
        run_id: args.execution.run_id as RunId,
        execution_id: args.execution.execution_id as ExecutionId,
        attachments: args.attachments,
        start,
        startLasting,
        release,
        ...(publish === undefined ? {} : { publish })
      }
      return { sandbox, adopt }
    }

    /** Creates the execution's Secret and Job (the Secret owned by the Job). */
    const createObjects = (spec: SandboxSpec, execution: ExecutionRef, attachments: ReadonlyArray<SandboxAttachment>) =>
      Effect.gen(function*() {
        yield* call(`create Secret ${secretName(execution)}`, () =>
          cluster.core.createNamespacedSecret({ namespace: cluster.namespace, body: secretOf(settings, execution, spec.env) }))
        const job = yield* call(`create Job ${jobName(execution)}`, () =>
          cluster.batch.createNamespacedJob({
            namespace: cluster.namespace,
            body: jobOf(settings, { execution, image: spec.docker_image, env: {}, secretVariables: Object.keys(spec.env), attachments })
          })).pipe(Effect.tapError(() => deleteSecret(secretName(execution)).pipe(Effect.ignore)))
        const owner = { name: jobName(execution), uid: job.metadata?.uid ?? "" }
        yield* call(`give Secret ${secretName(execution)} to its Job`, () =>
          cluster.core.patchNamespacedSecret(
            { name: secretName(execution), namespace: cluster.namespace, body: { metadata: secretOf(settings, execution, {}, owner).metadata } },
            setHeaderOptions("Content-Type", PatchStrategy.MergePatch)
          ))
      })

    /** The work directory made on the server and streamed into the pod: what could not be done, if anything. */
    const stage = (spec: SandboxSpec, pod: string, started: Map<string, Cloned>) =>
      Effect.acquireUseRelease(
        Effect.tryPromise({
          try: () => Fs.mkdtemp(Path.join(scratchDir, `${spec.execution_id}-`)),
          catch: (cause) => new ExecutorError({ message: `cannot make a scratch directory in ${scratchDir}: ${String(cause)}`, cause })
        }),
        (dir) =>
          Effect.gen(function*() {
            const staged = yield* stageWorkspace({ mirrors, reposDir, spec, dir, timeoutMs: CLONE_TIMEOUT_MS })
            for (const [repo, cloned] of staged.started) started.set(repo, cloned)
            yield* uploadDirectory(cluster, pod, dir).pipe(
              Effect.timeoutFail({
                duration: Duration.millis(setupTimeoutMs),
                onTimeout: () => new ExecutorError({ message: `copying the work directory into pod ${pod} took more than ${settings.setupTimeoutSeconds} s` })
              })
            )
            return staged.failure
          }),
        (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
      )

    const prepare = Effect.fn("KubernetesExecutor.prepare")(function*(spec: SandboxSpec) {
      if (!isSafeSegment(spec.run_id) || !isSafeSegment(spec.execution_id)) {
        return yield* new ExecutorError({ message: `run and execution ids must be plain names: ${spec.run_id}/${spec.execution_id}` })
      }
      const invalid = Object.keys(spec.env).find((name) => !isVariableName(name))
      if (invalid !== undefined) return yield* new ExecutorError({ message: `${JSON.stringify(invalid)} cannot be the name of a variable` })
      yield* Effect.tryPromise({
        try: () => Fs.mkdir(scratchDir, { recursive: true, mode: 0o700 }),
        catch: (cause) => new ExecutorError({ message: `cannot create the scratch directory ${scratchDir}: ${String(cause)}`, cause })
      })
      const execution: ExecutionRef = { run_id: spec.run_id, team_uid: spec.team_uid, execution_id: spec.execution_id }
      const attachments = spec.attachments.map((a) => ({ name: a.name, media_type: a.media_type, path: `${WORK_DIR}/attachments/${a.name}` }))
      yield* createObjects(spec, execution, attachments)
      const started = new Map<string, Cloned>()
      let podName: string | undefined
      const { sandbox } = makeSandbox({
        execution,
        attachments,
        pod: Effect.suspend(() => podName === undefined ? Effect.fail(new ExecutorError({ message: "the sandbox's pod is not running" })) : Effect.succeed(podName)),
        clones: { team: spec.team_uid, started }
      })
      const setupFailed = (message: string) => new SetupFailed({ message, sandbox })
      const steps = Effect.gen(function*() {
        const pod = yield* waitForPod(cluster, jobName(execution), settings.podStartTimeoutSeconds * 1000)
        podName = pod
        const failure = yield* stage(spec, pod, started)
        if (failure !== undefined) return yield* setupFailed(failure)
        for (const command of spec.setup_commands) {
          const finished = yield* runToEnd(cluster, pod, ["/bin/sh", "-c", command]).pipe(Effect.timeoutOption(Duration.millis(setupTimeoutMs)))
          if (Option.isNone(finished)) return yield* setupFailed(`setup command \`${command}\` did not finish within ${settings.setupTimeoutSeconds} s`)
          const result = finished.value
          if (result.exitCode !== 0) {
            return yield* setupFailed(
              `setup command \`${command}\` exited with code ${result.exitCode}${result.output === "" ? "" : `; end of its output:\n${result.output}`}`
            )
          }
        }
        return sandbox
      })
      // A failure of the cluster leaves nothing behind; a failed setup step keeps the sandbox for a debug session.
      return yield* steps.pipe(Effect.tapErrorTag("ExecutorError", () => sandbox.release))
    }, inRealTime)

    /** The agent a stopping process left running in the Job's pod, if any (the annotation is checked: it goes into commands). */
    const leftAgentOf = (job: V1Job): LeftAgent | undefined => {
      if (job.metadata?.labels?.[Labels.left] !== "true") return undefined
      const match = /^([^:]+):([1-9][0-9]{0,9})$/.exec(job.metadata.annotations?.[LEFT_AGENT_ANNOTATION] ?? "")
      return match === null || !isTag(match[1]!) ? undefined : { tag: match[1]!, runner: Number(match[2]) }
    }

    /**
     * Takes a Job whose agent was left for this server: unmarked and labelled as this server's, on
     * the condition that it did not change since it was listed (its resource version), so that of
     * servers looking at once one alone takes it. Whether this one did.
     */
    const take = (job: V1Job) =>
      callUnless(`take Job ${job.metadata?.name}`, [404, 409], () =>
        cluster.batch.patchNamespacedJob(
          {
            name: job.metadata?.name ?? "",
            namespace: cluster.namespace,
            body: {
              metadata: {
                resourceVersion: job.metadata?.resourceVersion,
                labels: { [Labels.left]: null, [Labels.instance]: labelValue(settings.instance) },
                annotations: { [LEFT_AGENT_ANNOTATION]: null }
              }
            }
          },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch)
        )).pipe(Effect.map(Option.isSome))

    /** The Jobs `labelSelector` selects (those being deleted are gone already), each with its sandbox. */
    const sandboxesOf = (what: string, labelSelector: string) =>
      Effect.gen(function*() {
        const jobs = yield* call(`list ${what}`, () => cluster.batch.listNamespacedJob({ namespace: cluster.namespace, labelSelector }))
        return jobs.items
          .filter((job) => job.metadata?.deletionTimestamp === undefined)
          .map((job) => {
            const labels = job.metadata?.labels ?? {}
            const annotations = job.metadata?.annotations ?? {}
            const execution: ExecutionRef = {
              run_id: labels[Labels.runId] ?? "",
              team_uid: (labels[Labels.team] ?? "") as TeamUid,
              execution_id: labels[Labels.execution] ?? ""
            }
            const made = makeSandbox({
              execution,
              attachments: attachmentsOf(job),
              pod: waitForPod(cluster, job.metadata?.name ?? jobName(execution), LEFTOVER_POD_WAIT_MS).pipe(inRealTime),
              ...(annotations[CLONES_ANNOTATION] === undefined || execution.team_uid === ""
                ? {}
                : { clones: { team: execution.team_uid, started: readClones(annotations[CLONES_ANNOTATION]) } })
            })
            return { ...made, job, left: leftAgentOf(job) }
          })
      })

    const leftovers = sandboxesOf("the Jobs of this server", instanceSelector(settings.instance)).pipe(
      Effect.map((found) => found.filter((each) => each.left === undefined).map((each) => each.sandbox)),
      Effect.withSpan("KubernetesExecutor.leftovers")
    )

    // The agents left running by any server of the namespace, each to be taken by one alone.
    const adoptable = sandboxesOf("the Jobs whose agents were left", leftSelector).pipe(
      Effect.map((found) =>
        found.flatMap(({ adopt, job, left, sandbox }): Array<Adoptable> =>
          left === undefined ? [] : [{ sandbox, take: take(job), adopt: adopt(left) }]
        )
      ),
      Effect.withSpan("KubernetesExecutor.adoptable")
    )

    /**
     * A Secret left without its Job (the Job's creation failed, and so did the Secret's deletion):
     * a sandbox with nothing to run in, whose release deletes the Secret.
     */
    const strayOf = (secret: V1Secret): Sandbox => {
      const labels = secret.metadata?.labels ?? {}
      const name = secret.metadata?.name ?? ""
      return {
        id: name,
        run_id: (labels[Labels.runId] ?? "") as RunId,
        execution_id: (labels[Labels.execution] ?? "") as ExecutionId,
        attachments: [],
        start: () => Effect.fail(new ExecutorError({ message: `Secret ${name} has no pod to run in` })),
        release: deleteSecret(name).pipe(Effect.ignore)
      }
    }

    // Every server's Jobs, and Secrets without a Job: the reaper releases those whose run no longer needs them.
    const shared = Effect.gen(function*() {
      const sandboxes = (yield* sandboxesOf("the Jobs of every server", managedSelector)).map((each) => each.sandbox)
      const secrets = yield* call("list the Secrets of every server", () =>
        cluster.core.listNamespacedSecret({ namespace: cluster.namespace, labelSelector: managedSelector }))
      const jobs = new Set(sandboxes.map((sandbox) => sandbox.id))
      const strays = secrets.items.filter((secret) =>
        secret.metadata?.deletionTimestamp === undefined && (secret.metadata?.ownerReferences ?? []).length === 0 &&
        !jobs.has((secret.metadata?.name ?? "").replace(/-env$/, ""))
      )
      return [...sandboxes, ...strays.map(strayOf)]
    }).pipe(Effect.withSpan("KubernetesExecutor.shared"))

    return Executor.of({ prepare, leftovers, adoptable, shared })
  })

/** The executor as a layer: fails when the cluster's configuration cannot be loaded; reaching it is checked on use. */
export const layer = (config: KubernetesExecutorConfig): Layer.Layer<Executor, ExecutorError> => Layer.effect(Executor, make(config))
