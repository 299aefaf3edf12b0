/** Helpers of the Docker executor's own tests: temporary directories, sandboxes, running commands. */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { AgentProcess, Sandbox, SandboxSpec } from "@agent-runs/core/ports/Executor"
import { Executor } from "@agent-runs/core/ports/Executor"
import { sandboxSpec } from "@agent-runs/core/testing"
import Docker from "dockerode"
import { Chunk, Effect, Layer, Stream } from "effect"
import { DockerExecutor } from "../src/index.js"
import { testImage } from "../testing/engine.js"

export const docker = new Docker()

/** A temporary root and (empty) repository directory. */
export const makeDirs = () => {
  const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "executor-docker-"))
  const root = Path.join(base, "sandboxes")
  const reposDir = Path.join(base, "repos")
  Fs.mkdirSync(reposDir, { recursive: true })
  return { base, root, reposDir }
}

export const executorLayer = (config: Partial<DockerExecutor.DockerExecutorConfig> = {}) => {
  const dirs = makeDirs()
  return Layer.effect(Executor, DockerExecutor.make({ root: dirs.root, reposDir: dirs.reposDir, image: testImage, ...config }))
}

/** Prepares a sandbox released when the test's scope closes. */
export const prepare = (overrides: Partial<SandboxSpec> = {}) =>
  Effect.acquireRelease(
    Effect.flatMap(Executor, (executor) => executor.prepare(sandboxSpec(overrides))),
    (sandbox) => sandbox.release
  )

export const text = (stream: Stream.Stream<Uint8Array, unknown>) =>
  Stream.runCollect(stream).pipe(
    Effect.map((chunks) => Buffer.concat(Chunk.toReadonlyArray(chunks)).toString("utf8"))
  )

/** Runs a command to its end: stdout and exit code. */
export const runIn = (sandbox: Sandbox, command: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const agent = yield* sandbox.start(command, env)
    const stdout = yield* text(agent.stdout)
    return { stdout, exitCode: yield* agent.exitCode }
  }).pipe(Effect.scoped)

/** Reads stdout until it holds `needle`, then hands the process back. */
export const waitFor = (agent: AgentProcess, needle: string) =>
  agent.stdout.pipe(
    Stream.decodeText(),
    Stream.scan("", (seen, piece) => seen + piece),
    Stream.takeUntil((seen) => seen.includes(needle)),
    Stream.runDrain
  )

export const containerOf = (sandbox: Sandbox) => Effect.promise(() => docker.getContainer(sandbox.id).inspect())

/** The host work directory of a sandbox (its container's label). */
export const workdirOf = (sandbox: Sandbox) =>
  Effect.map(containerOf(sandbox), (info) => info.Config.Labels["agent-runs.workdir"]!)
