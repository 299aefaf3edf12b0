/**
 * The execution side of the bundled server: the executor the configuration picks (local
 * processes, Docker containers, or Kubernetes Jobs), with the bundled scripted agent as the default harness
 * (docs/reference/configuration.md). Composition only.
 */
import { DockerExecutor } from "@agent-runs/executor-docker"
import { KubernetesExecutor } from "@agent-runs/executor-kubernetes"
import { ProcessExecutor, ProcessIsolation } from "@agent-runs/executor-process"
import { AGENT_MOUNT, defaultHarness as harnessFor, installCopy, packageDir } from "@agent-runs/scripted-agent/Location"
import { Effect, Option } from "effect"
import { join } from "node:path"
import type { ServerConfig } from "./Config.js"

/** The directory of the bundled scripted agent's package (its `dist/main.js` is the program). */
export const scriptedAgentDir = packageDir

/** The default harness command: the scripted agent, run by this Node (or the image's `node`). */
export const defaultHarness = (config: ServerConfig) => harnessFor(config.execution.executor)

/** What executing runs needs decided at start: the process sandboxes' isolation and the default harness. */
export interface ExecutionSetup {
  readonly isolation: ProcessExecutor.Isolation | undefined
  readonly harness: string
}

const sandboxesOf = (config: ServerConfig) => join(config.dataDir, "sandboxes")
/** The teams' mirrors of their GitHub repositories (private to the server, as the data directory's entries are), and their bound. */
export const mirrorsOf = (config: ServerConfig) => ({ mirrorsDir: join(config.dataDir, "mirrors"), mirrorsMaxBytes: config.mirrorsMaxBytes })

/**
 * Decides the isolation of process sandboxes and prepares the data directory for it (before
 * storage opens, so the database is created private). With isolation and no `AGENT_RUNS_HARNESS`,
 * the scripted agent runs from a copy in `<data dir>/agents/` that sandbox users can read.
 */
export const setUpExecution = (config: ServerConfig) =>
  Effect.gen(function*() {
    const { execution } = config
    const configured = Option.getOrUndefined(execution.harness)
    if (execution.executor !== "process" || execution.concurrency === 0) {
      return { isolation: undefined, harness: configured ?? defaultHarness(config) } satisfies ExecutionSetup
    }
    const isolation = yield* ProcessIsolation.setUp({
      mode: execution.processIsolation ?? "auto",
      uids: execution.sandboxUids ?? ProcessIsolation.DEFAULT_UIDS,
      dataDir: config.dataDir,
      root: sandboxesOf(config),
      private: [config.blobDir, execution.reposDir]
    })
    const harness = configured ??
      (isolation === undefined
        ? defaultHarness(config)
        : yield* ProcessIsolation.sharedProgram(config.dataDir, "scripted-agent", installCopy))
    return { isolation, harness } satisfies ExecutionSetup
  })

/** The Kubernetes executor: the cluster of `KUBECONFIG` (or the pod's service account); work directories made in `<data dir>/scratch`. */
const kubernetesLayer = (config: ServerConfig) =>
  KubernetesExecutor.layer({
    cluster: "default",
    settings: config.execution.kubernetes,
    reposDir: config.execution.reposDir,
    ...mirrorsOf(config),
    scratchDir: join(config.dataDir, "scratch")
  })

/** The configured executor: local processes, Docker containers, or Kubernetes Jobs. */
export const executorLayer = (config: ServerConfig, setup: ExecutionSetup) => {
  const root = sandboxesOf(config)
  const { execution } = config
  if (execution.executor === "kubernetes") return kubernetesLayer(config)
  return execution.executor === "docker"
    ? DockerExecutor.layer({
      root,
      reposDir: execution.reposDir,
      ...mirrorsOf(config),
      image: execution.dockerImage,
      network: execution.dockerNetwork,
      ...execution.dockerSandbox,
      mounts: [{ host: scriptedAgentDir, container: AGENT_MOUNT, readOnly: true }]
    })
    : ProcessExecutor.layer({ root, reposDir: execution.reposDir, ...mirrorsOf(config), isolation: setup.isolation })
}
