/**
 * What the Docker executor does beyond the shared conformance suite (test/conformance.test.ts):
 * names, stderr, the engine's exit codes, process groups, labels and limits, network mode, the
 * container's removal, leftovers by root with reattach, engine errors. Against the real engine
 * (started by globalSetup) and the imported test image (busybox + this Node binary).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Executor } from "@agent-runs/core/ports/Executor"
import { sandboxSpec } from "@agent-runs/core/testing"
import { Effect, Exit, Option, Scope } from "effect"
import { DockerExecutor } from "../src/index.js"
import { testImage } from "../testing/engine.js"
import { containerOf, docker, executorLayer, makeDirs, prepare, runIn, waitFor } from "./helpers.js"

describe("DockerExecutor", () => {
  it.layer(executorLayer({ memoryBytes: 256 * 1024 * 1024, nanoCpus: 500_000_000, pidsLimit: 200 }), { timeout: 60_000 })(
    "one executor",
    (it) => {
      it.scoped("names that would escape the work directory are refused", () =>
        Effect.gen(function*() {
          const executor = yield* Executor
          for (const bad of [
            { repos: [{ owner: "..", repo: "etc" }] },
            { attachments: [{ name: "../escape", media_type: "text/plain", bytes: new Uint8Array() }] }
          ]) {
            const failure = yield* executor.prepare(sandboxSpec(bad)).pipe(Effect.flip)
            expect(failure._tag).toBe("SetupFailed")
            if (failure._tag === "SetupFailed") yield* failure.sandbox.release
          }
        }))

      it.scoped("stderr is not part of stdout", () =>
        Effect.gen(function*() {
          const sandbox = yield* prepare()
          const result = yield* runIn(sandbox, ["sh", "-c", "echo out; echo noise >&2; echo more"])
          expect(result).toEqual({ stdout: "out\nmore\n", exitCode: 0 })
        }))

      it.scoped("exit codes as the engine reports them: 143 for an agent that SIGTERMs itself, 127 for a missing command", () =>
        Effect.gen(function*() {
          const sandbox = yield* prepare()
          expect((yield* runIn(sandbox, ["sh", "-c", "kill -s TERM $$; sleep 5"])).exitCode).toBe(143)
          expect((yield* runIn(sandbox, ["no-such-command"])).exitCode).toBe(127)
        }))

      it.scoped("terminate signals the agent's whole process group inside the container", () =>
        Effect.gen(function*() {
          const sandbox = yield* prepare()
          const agent = yield* sandbox.start(["sh", "-c", "sleep 300 & echo ready; wait"], {})
          yield* waitFor(agent, "ready")
          yield* agent.terminate(5_000)
          expect(yield* agent.exitCode).toBe(143)
          // The background sleep went with its group: only the container's own init sleep is left.
          const ps = yield* runIn(sandbox, ["ps", "-o", "args"])
          expect(ps.stdout).not.toContain("sleep 300")
        }))

      it.scoped("labels, limits and network mode none are on the container", () =>
        Effect.gen(function*() {
          const s = sandboxSpec()
          const executor = yield* Executor
          const sandbox = yield* Effect.acquireRelease(executor.prepare(s), (sandbox) => sandbox.release)
          const info = yield* containerOf(sandbox)
          expect(info.Config.Labels).toMatchObject({
            "agent-runs.managed": "true",
            "agent-runs.run-id": s.run_id,
            "agent-runs.execution-id": s.execution_id
          })
          expect(info.HostConfig.NetworkMode).toBe("none")
          expect(info.HostConfig.Memory).toBe(256 * 1024 * 1024)
          expect(info.HostConfig.NanoCpus).toBe(500_000_000)
          expect(info.HostConfig.PidsLimit).toBe(200)
          const interfaces = yield* runIn(sandbox, ["cat", "/proc/net/dev"])
          expect(interfaces.stdout).toContain("lo:")
          expect(interfaces.stdout).not.toContain("eth0")
        }))

      it.scoped("release stops the agent, removes the container and the work directory; twice is fine", () =>
        Effect.gen(function*() {
          const executor = yield* Executor
          const sandbox = yield* executor.prepare(sandboxSpec())
          const agent = yield* sandbox.start(["sh", "-c", "echo ready; exec sleep 300"], {})
          yield* waitFor(agent, "ready")
          const workdir = (yield* containerOf(sandbox)).Config.Labels["agent-runs.workdir"]!
          expect(Fs.existsSync(workdir)).toBe(true)
          yield* sandbox.release
          yield* sandbox.release
          const gone = yield* Effect.tryPromise(() => docker.getContainer(sandbox.id).inspect()).pipe(Effect.exit)
          expect(Exit.isFailure(gone)).toBe(true)
          expect(Fs.existsSync(workdir)).toBe(false)
        }))
    }
  )

  it.live("leftovers: a second executor on the same root finds the sandboxes, reattaches to a running agent and releases them", () =>
    Effect.gen(function*() {
      const dirs = makeDirs()
      const config = { root: dirs.root, reposDir: dirs.reposDir, image: testImage }
      const first = yield* DockerExecutor.make(config)
      const second = yield* DockerExecutor.make(config)
      const other = yield* DockerExecutor.make({ ...config, root: Path.join(dirs.base, "elsewhere") })

      const idle = yield* first.prepare(sandboxSpec({
        attachments: [{ name: "a.txt", media_type: "text/plain", bytes: new TextEncoder().encode("a") }]
      }))
      const busy = yield* first.prepare(sandboxSpec())
      // The first life of the service ends while the agent runs: its connection goes, the agent stays.
      const scope = yield* Scope.make()
      const agent = yield* busy.start(["sh", "-c", "echo ready; sleep 300"], {}).pipe(Effect.provideService(Scope.Scope, scope))
      yield* waitFor(agent, "ready")

      const found = yield* second.leftovers
      const byExecution = new Map(found.map((sandbox) => [sandbox.execution_id, sandbox]))
      expect(byExecution.get(idle.execution_id)?.run_id).toBe(idle.run_id)
      expect(byExecution.get(idle.execution_id)?.attachments).toEqual(idle.attachments)
      expect(Option.isNone(byExecution.get(idle.execution_id)!.reattach)).toBe(true)
      const leftover = byExecution.get(busy.execution_id)!
      expect(Option.isSome(leftover.reattach)).toBe(true)
      expect(yield* other.leftovers).toEqual([])

      // Reattached: the agent can be terminated and its exit code read.
      yield* Effect.scoped(Effect.gen(function*() {
        const again = yield* Option.getOrThrow(leftover.reattach)
        yield* again.terminate(2_000)
        expect(yield* again.exitCode).toBe(143)
      }))
      yield* Effect.forEach(found, (sandbox) => sandbox.release)
      expect((yield* second.leftovers).filter((s) => s.execution_id === idle.execution_id || s.execution_id === busy.execution_id))
        .toEqual([])
      yield* Scope.close(scope, Exit.void)
    }), 60_000)

  it.live("a missing image or an unreachable engine is an ExecutorError with a clear message", () =>
    Effect.gen(function*() {
      const dirs = makeDirs()
      const missing = yield* DockerExecutor.make({ root: dirs.root, reposDir: dirs.reposDir, image: "agent-runs-no-such-image:1" })
      const noImage = yield* missing.prepare(sandboxSpec()).pipe(Effect.flip)
      expect(noImage._tag).toBe("ExecutorError")
      expect(noImage.message).toContain("agent-runs-no-such-image:1")
      expect(noImage.message).toContain("not found")
      expect(Fs.readdirSync(dirs.root)).toEqual([])

      const nowhere = yield* DockerExecutor.make({
        root: dirs.root,
        reposDir: dirs.reposDir,
        image: testImage,
        socketPath: Path.join(dirs.base, "no-engine.sock")
      })
      const unreachable = yield* nowhere.leftovers.pipe(Effect.flip)
      expect(unreachable.message).toContain("unreachable")
      expect(unreachable.message).toContain("no-engine.sock")
    }))
})
