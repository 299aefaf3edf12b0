/**
 * What the Docker executor does beyond the shared conformance suite (test/conformance.test.ts):
 * names, stderr, the engine's exit codes, process groups, labels and limits, network mode, the
 * container's removal, leftovers by root, lasting agents detached and adopted, engine errors. Against the real engine
 * (started by globalSetup) and the imported test image (busybox + this Node binary).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Executor } from "@agent-runs/core/ports/Executor"
import { sandboxSpec } from "@agent-runs/core/testing"
import { Effect, Exit, Scope } from "effect"
import { DockerExecutor } from "../src/index.js"
import { testImage } from "../testing/engine.js"
import { containerOf, docker, executorLayer, makeDirs, prepare, runIn, text, waitFor } from "./helpers.js"

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

  it.live("leftovers: a second executor on the same root finds the sandboxes and releases them; another root sees none", () =>
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
      expect(byExecution.get(busy.execution_id)?.run_id).toBe(busy.run_id)
      expect(yield* other.leftovers).toEqual([])
      // Nothing was left for adoption: an agent started with `start` ends with its connection.
      expect((yield* second.adoptable!).filter((a) => a.sandbox.run_id === busy.run_id)).toEqual([])

      yield* Effect.forEach(found, (sandbox) => sandbox.release)
      expect((yield* second.leftovers).filter((s) => s.execution_id === idle.execution_id || s.execution_id === busy.execution_id))
        .toEqual([])
      yield* Scope.close(scope, Exit.void)
    }), 60_000)

  it.live("a lasting agent outlives its process: detached, found by the next executor, adopted from a byte offset with its stdin open, twice", () =>
    Effect.gen(function*() {
      const dirs = makeDirs()
      const config = { root: dirs.root, reposDir: dirs.reposDir, image: testImage }
      const first = yield* DockerExecutor.make(config)
      const sandbox = yield* first.prepare(sandboxSpec())
      const script = [
        "echo ready; read a; echo \"got $a\"; sleep 1; echo later; read b; echo \"got $b\"",
        // Its files' directory is the executor's: nothing in it can be made or replaced.
        "touch /run/agent-runs/evil 2>/dev/null && echo made-a-file; ln -s /etc/passwd /run/agent-runs/link 2>/dev/null && echo made-a-link",
        "read c; echo \"got $c\""
      ].join("; ")

      // The first process: until `got 1`, then it stops, leaving the agent.
      const firstLife = yield* Scope.make()
      const agent = yield* sandbox.startLasting!(["sh", "-c", script], {}).pipe(Effect.provideService(Scope.Scope, firstLife))
      yield* waitFor(agent, "ready")
      yield* agent.send({ n: 1 })
      yield* waitFor(agent, "got {\"n\":1}")
      const offset = "ready\ngot {\"n\":1}\n".length
      yield* agent.detach
      yield* Scope.close(firstLife, Exit.void)

      // The next: the sandbox is not a leftover but adoptable; what the agent wrote meanwhile is there.
      const second = yield* DockerExecutor.make(config)
      expect((yield* second.leftovers).map((s) => s.execution_id)).not.toContain(sandbox.execution_id)
      const found = (yield* second.adoptable!).filter((a) => a.sandbox.execution_id === sandbox.execution_id)
      expect(found.map((a) => a.sandbox.run_id)).toEqual([sandbox.run_id])
      const secondLife = yield* Scope.make()
      const adopted = yield* found[0]!.adopt(offset).pipe(Effect.provideService(Scope.Scope, secondLife))
      expect((yield* second.adoptable!).filter((a) => a.sandbox.execution_id === sandbox.execution_id)).toEqual([])
      yield* waitFor(adopted, "later")
      yield* adopted.send({ n: 2 })
      yield* waitFor(adopted, "got {\"n\":2}")
      yield* adopted.detach
      yield* Scope.close(secondLife, Exit.void)

      // A third adopts it again, from where the second stopped reading: it has the rest, then the exit.
      const third = yield* DockerExecutor.make(config)
      const again = (yield* third.adoptable!).filter((a) => a.sandbox.execution_id === sandbox.execution_id)
      const rest = yield* Effect.scoped(Effect.gen(function*() {
        const last = yield* again[0]!.adopt("ready\ngot {\"n\":1}\nlater\ngot {\"n\":2}\n".length)
        yield* last.send({ n: 3 })
        return { stdout: yield* text(last.stdout), exitCode: yield* last.exitCode }
      }))
      expect(rest).toEqual({ stdout: "got {\"n\":3}\n", exitCode: 0 })
      yield* sandbox.release
      expect(Fs.readdirSync(dirs.root).flatMap((run) => Fs.readdirSync(Path.join(dirs.root, run)))).toEqual([])
    }), 60_000)

  it.live("a lasting agent not detached is stopped with its scope, and is nobody's to adopt; nor is one whose mark is not whole", () =>
    Effect.gen(function*() {
      const dirs = makeDirs()
      const executor = yield* DockerExecutor.make({ root: dirs.root, reposDir: dirs.reposDir, image: testImage })
      // Whatever the process's umask (a process executor's isolation makes it 077), the sandbox's user reaches its files.
      const umask = process.umask(0o077)
      const sandbox = yield* executor.prepare(sandboxSpec()).pipe(Effect.ensuring(Effect.sync(() => process.umask(umask))))
      const scope = yield* Scope.make()
      const agent = yield* sandbox.startLasting!(["sh", "-c", "echo ready; exec sleep 300"], {}).pipe(Effect.provideService(Scope.Scope, scope))
      yield* waitFor(agent, "ready")
      yield* Scope.close(scope, Exit.void)
      expect(yield* agent.exitCode).toBe(143)
      expect((yield* executor.adoptable!).filter((a) => a.sandbox.execution_id === sandbox.execution_id)).toEqual([])
      expect((yield* executor.leftovers).map((s) => s.execution_id)).toContain(sandbox.execution_id)
      // A mark cut short (a stop killed while it wrote it) is no agent to adopt: a leftover as any.
      const workdir = (yield* containerOf(sandbox)).Config.Labels["agent-runs.workdir"]!
      Fs.writeFileSync(Path.join(`${workdir}.io`, "agent-0-0.detached"), "")
      expect((yield* executor.adoptable!).filter((a) => a.sandbox.execution_id === sandbox.execution_id)).toEqual([])
      expect((yield* executor.leftovers).map((s) => s.execution_id)).toContain(sandbox.execution_id)
      yield* sandbox.release
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
