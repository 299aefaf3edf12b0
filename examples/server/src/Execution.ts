/**
 * The execution side of the bundled server: the executor the configuration picks (local
 * processes, or Docker containers) and the dispatcher over it, with the bundled scripted agent as
 * the default harness (CONTRACT §10). Composition only.
 */
import { Dispatcher } from "@agent-runs/core"
import { DockerExecutor } from "@agent-runs/executor-docker"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { AGENT_MOUNT, defaultHarness as harnessFor, packageDir } from "@agent-runs/scripted-agent/Location"
import { Layer } from "effect"
import { join } from "node:path"
import type { ServerConfig } from "./Config.js"

/** The directory of the bundled scripted agent's package (its `dist/main.js` is the program). */
export const scriptedAgentDir = packageDir

/** The default harness command: the scripted agent, run by this Node (or the image's `node`). */
export const defaultHarness = (config: ServerConfig) => harnessFor(config.execution.executor)

const executorLayer = (config: ServerConfig) => {
  const root = join(config.dataDir, "sandboxes")
  const { execution } = config
  return execution.executor === "docker"
    ? DockerExecutor.layer({
      root,
      reposDir: execution.reposDir,
      image: execution.dockerImage,
      network: execution.dockerNetwork,
      mounts: [{ host: scriptedAgentDir, container: AGENT_MOUNT, readOnly: true }]
    })
    : ProcessExecutor.layer({ root, reposDir: execution.reposDir })
}

/** The dispatcher on the configured executor; needs the stores, blob store, run tokens and ids. */
export const ExecutionLive = (config: ServerConfig) =>
  Dispatcher.layer.pipe(
    Layer.provide(executorLayer(config)),
    Layer.provide(
      Layer.succeed(Dispatcher.DispatcherConfig, {
        ...Dispatcher.defaultSettings(
          config.execution.harness._tag === "Some" ? config.execution.harness.value : defaultHarness(config),
          `${config.publicUrl}/api/v1`
        ),
        concurrency: config.execution.concurrency,
        leaseMs: config.execution.leaseSeconds * 1000,
        cancelGraceMs: config.execution.cancelGraceSeconds * 1000
      })
    )
  )
