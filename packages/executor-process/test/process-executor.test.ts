/** The process executor's own edge cases: names, markers, layout on disk, environment, errors. */
import { createTestRepositories, sandboxSpec } from "@agent-runs/core/testing"
import { Executor, Ids } from "@agent-runs/core"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, Option, Stream } from "effect"
import type { Scope } from "effect"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as fc from "fast-check"
import { type Config, defaultEnv, layer } from "../src/ProcessExecutor.js"
import { formatMarker, type Marker, parseMarker } from "../src/internal/marker.js"
import { attachmentNameProblem, isIdSegment, isRepositorySegment } from "../src/internal/names.js"
import { startWaitingAgent, unkillable, withWarnings } from "./unkillable.js"

const base = mkdtempSync(join(tmpdir(), "agent-runs-executor-process-unit-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))
const reposDir = join(base, "repos")
createTestRepositories(reposDir)

let counter = 0
/** A fresh, empty root for one test. */
const freshRoot = () => join(base, `root-${++counter}`)

const randomBytes = (n: number) => globalThis.crypto.getRandomValues(new Uint8Array(n))
const ids = () => ({
  run_id: Ids.formatUuidV7(Date.now(), randomBytes(10)) as Ids.RunId,
  execution_id: Ids.formatUuidV7(Date.now(), randomBytes(10)) as Ids.ExecutionId
})

/** Runs `f` with an executor on `root` (a fresh one by default). */
const withExecutor = <A, E>(
  f: (executor: Executor.Executor["Type"], root: string) => Effect.Effect<A, E, Scope.Scope>,
  options: { readonly root?: string } & Pick<Config, "setupTimeoutMs" | "env" | "killTimeoutMs"> = {}
) => {
  const { root = freshRoot(), ...settings } = options
  return Effect.scoped(Effect.provide(
    Effect.flatMap(Executor.Executor, (executor) => f(executor, root)),
    layer({ root, reposDir, terminateGraceMs: 500, ...settings })
  ))
}

const text = (stream: Stream.Stream<Uint8Array, unknown>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => Buffer.concat(Chunk.toReadonlyArray(chunks)).toString("utf8"))

const node = process.execPath

const marker = (overrides: Partial<Marker> = {}): Marker => ({
  version: 1,
  ...ids(),
  created_at: "2025-01-01T00:00:00.000Z",
  attachments: [],
  process_groups: [],
  ...overrides
})

describe("names", () => {
  it("repository segments stay inside the repos dir", () => {
    for (const good of ["acme", "widgets", "my-repo", "my.repo", "_x", "a"]) expect(isRepositorySegment(good)).toBe(true)
    for (const bad of ["", ".", "..", "-rf", "a/b", "a\\b", "a b", "x".repeat(101), "é"]) expect(isRepositorySegment(bad)).toBe(false)
  })

  it.prop("a valid segment never contains a separator and is never a parent reference", [fc.string()], ([segment]) => {
    if (isRepositorySegment(segment)) {
      expect(segment).not.toMatch(/[/\\]/)
      expect(segment === "." || segment === "..").toBe(false)
    }
  })

  it("attachment names are plain file names", () => {
    for (const good of ["notes.md", "event-payload.json", "a..b", "résumé.pdf", ".hidden"]) expect(attachmentNameProblem(good)).toBeUndefined()
    for (const bad of ["", ".", "..", "../x", "a/b", "a\\b", "nul\0", "x".repeat(256)]) expect(attachmentNameProblem(bad)).toBeDefined()
  })

  it("ids name directories only when they are plain", () => {
    expect(isIdSegment(ids().run_id)).toBe(true)
    for (const bad of ["", "..", "a/b", "a.b"]) expect(isIdSegment(bad)).toBe(false)
  })
})

describe("marker", () => {
  it("round trips when it lies where its ids say", () => {
    const m = marker({ process_groups: [42], attachments: [{ name: "a.txt", media_type: "text/plain", path: "/x/attachments/a.txt" }] })
    expect(parseMarker(formatMarker(m), { runDir: m.run_id, fileName: `${m.execution_id}.sandbox.json` })).toEqual(Option.some(m))
    // Rewritten in place, a shorter marker is padded with spaces.
    expect(parseMarker(`${formatMarker(m)}      `, { runDir: m.run_id, fileName: `${m.execution_id}.sandbox.json` })).toEqual(Option.some(m))
  })

  it("is refused when malformed, of another version, or placed under other ids", () => {
    const m = marker()
    const at = { runDir: m.run_id, fileName: `${m.execution_id}.sandbox.json` }
    expect(parseMarker("{", at)).toEqual(Option.none())
    expect(parseMarker(JSON.stringify({ ...m, version: 2 }), at)).toEqual(Option.none())
    expect(parseMarker(JSON.stringify({ ...m, run_id: "../etc" }), at)).toEqual(Option.none())
    expect(parseMarker(JSON.stringify({ ...m, process_groups: [-1] }), at)).toEqual(Option.none())
    expect(parseMarker(formatMarker(m), { runDir: ids().run_id, fileName: at.fileName })).toEqual(Option.none())
    expect(parseMarker(formatMarker(m), { runDir: m.run_id, fileName: `${ids().execution_id}.sandbox.json` })).toEqual(Option.none())
    expect(parseMarker(formatMarker(m), { runDir: m.run_id, fileName: `${m.execution_id}.json` })).toEqual(Option.none())
  })
})

describe("ProcessExecutor", () => {
  it.effect("lays out <root>/<run_id>/<execution_id>/ with a marker beside it; release removes both", () =>
    withExecutor((executor, root) =>
      Effect.gen(function*() {
        const spec = sandboxSpec({ attachments: [{ name: "a.txt", media_type: "text/plain", bytes: new TextEncoder().encode("A") }] })
        const sandbox = yield* executor.prepare(spec)
        const workdir = join(root, spec.run_id, spec.execution_id)
        expect(sandbox.id).toBe(workdir)
        expect(sandbox.attachments).toEqual([{ name: "a.txt", media_type: "text/plain", path: join(workdir, "attachments", "a.txt") }])
        expect(readFileSync(join(workdir, "attachments", "a.txt"), "utf8")).toBe("A")
        const onDisk = JSON.parse(readFileSync(join(root, spec.run_id, `${spec.execution_id}.sandbox.json`), "utf8"))
        expect(onDisk).toMatchObject({ run_id: spec.run_id, execution_id: spec.execution_id, attachments: sandbox.attachments, process_groups: [] })
        expect(Number.isNaN(Date.parse(onDisk.created_at))).toBe(false)
        // A child process ends with this process of the service: nothing of it can be adopted.
        expect(sandbox.startLasting).toBeUndefined()
        yield* sandbox.release
        expect(readdirSync(root)).toEqual([])
      })))

  it.effect("bad attachment names fail with an ExecutorError before anything is made", () =>
    withExecutor((executor, root) =>
      Effect.gen(function*() {
        for (const name of ["../escape.txt", "a/b", "..", ""]) {
          const error = yield* Effect.flip(executor.prepare(sandboxSpec({ attachments: [{ name, media_type: "text/plain", bytes: new Uint8Array() }] })))
          expect(error._tag).toBe("ExecutorError")
        }
        const twice = { name: "a", media_type: "text/plain", bytes: new Uint8Array() }
        expect((yield* Effect.flip(executor.prepare(sandboxSpec({ attachments: [twice, twice] }))))._tag).toBe("ExecutorError")
        expect(existsSync(root) ? readdirSync(root) : []).toEqual([])
        expect(existsSync(join(base, "escape.txt"))).toBe(false)
      })))

  it.effect("repositories that would leave the repos dir are SetupFailed naming them", () =>
    withExecutor((executor) =>
      Effect.gen(function*() {
        for (const repository of [{ owner: "..", repo: "repos" }, { owner: "acme", repo: "../acme" }, { owner: "-c", repo: "x" }]) {
          const error = yield* Effect.flip(executor.prepare(sandboxSpec({ repos: [repository] })))
          expect(error._tag).toBe("SetupFailed")
          if (error._tag === "SetupFailed") {
            expect(error.message).toContain(`${repository.owner}/${repository.repo}`)
            yield* error.sandbox.release
          }
        }
      })))

  it.effect("the setup time limit kills the running command: SetupFailed", () =>
    withExecutor((executor) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(executor.prepare(sandboxSpec({ setup_commands: ["echo started; sleep 30"] })))
        expect(error._tag).toBe("SetupFailed")
        expect(error.message).toContain("setup command 1 of 1 `echo started; sleep 30` did not finish within the setup time limit of 300 ms: started")
        if (error._tag === "SetupFailed") yield* error.sandbox.release
      }), { setupTimeoutMs: 300 }))

  it.effect("the setup failure message reads 'setup command i of n `cmd` exited with code: output'", () =>
    withExecutor((executor) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(executor.prepare(sandboxSpec({ setup_commands: ["true", "printf 'x%.0s' $(seq 1 6000); echo; echo last words; exit 2", "true"] })))
        expect(error._tag).toBe("SetupFailed")
        expect(error.message).toMatch(/^setup command 2 of 3 `printf .*; exit 2` exited with 2: x+\nlast words$/)
        expect(error.message.length).toBeLessThan(4096 + 200)
        if (error._tag === "SetupFailed") yield* error.sandbox.release
      })))

  it.effect("processes get PATH and HOME of the service, not the rest of its environment; a configured env replaces them", () =>
    Effect.gen(function*() {
      process.env.AGENT_RUNS_TEST_SECRET = "do not leak"
      const script = `console.log(JSON.stringify(Object.keys(process.env).filter((k) => k !== "PWD" && k !== "SHLVL" && k !== "_").sort()))`
      const keys = (env?: Record<string, string>) =>
        withExecutor((executor) =>
          Effect.gen(function*() {
            const sandbox = yield* Effect.acquireRelease(executor.prepare(sandboxSpec({ env: { SPEC: "1" } })), (s) => s.release)
            const agent = yield* sandbox.start([node, "-e", script], { GIVEN: "1" })
            return JSON.parse(yield* text(agent.stdout))
          }), env === undefined ? {} : { env })
      expect(yield* keys()).toEqual(Object.keys(defaultEnv()).concat(["GIVEN", "SPEC"]).sort())
      expect(yield* keys({ ONLY: "this" })).toEqual(["GIVEN", "ONLY", "SPEC"])
      delete process.env.AGENT_RUNS_TEST_SECRET
    }))

  it.effect("start fails with an ExecutorError: a command that does not exist, an empty command, a released sandbox", () =>
    withExecutor((executor) =>
      Effect.gen(function*() {
        const sandbox = yield* executor.prepare(sandboxSpec())
        expect((yield* Effect.flip(sandbox.start(["/no/such/agent"], {})))._tag).toBe("ExecutorError")
        expect((yield* Effect.flip(sandbox.start([], {})))._tag).toBe("ExecutorError")
        yield* sandbox.release
        const error = yield* Effect.flip(sandbox.start([node, "-e", ""], {}))
        expect(error.message).toContain("released")
      })))

  it.effect("stdout written before anyone reads it is kept; send to an exited agent is an ExecutorError", () =>
    withExecutor((executor) =>
      Effect.gen(function*() {
        const sandbox = yield* Effect.acquireRelease(executor.prepare(sandboxSpec()), (s) => s.release)
        const agent = yield* sandbox.start([node, "-e", `process.stdout.write("early\\n"); process.stderr.write("e".repeat(1 << 20))`], {})
        expect(yield* agent.exitCode).toBe(0)
        expect(yield* text(agent.stdout)).toBe("early\n")
        const error = yield* Effect.flip(agent.send({ type: "followup" }))
        expect(error._tag).toBe("ExecutorError")
      })))

  it.effect("send: a message that is not JSON, and an agent that closed its stdin, are ExecutorErrors (no crash)", () =>
    withExecutor((executor) =>
      Effect.gen(function*() {
        const sandbox = yield* Effect.acquireRelease(executor.prepare(sandboxSpec()), (s) => s.release)
        const agent = yield* sandbox.start([node, "-e", `require("fs").closeSync(0); console.log("closed"); setInterval(() => {}, 1000)`], {})
        expect(Either.isLeft(yield* Effect.either(agent.send({ n: 1n })))).toBe(true)
        const stdout = agent.stdout.pipe(Stream.takeUntil((chunk) => Buffer.from(chunk).toString().includes("closed")), Stream.runDrain)
        yield* stdout
        // The pipe's reader is gone: the write fails with EPIPE (maybe only on the second write).
        const results = yield* Effect.forEach([1, 2, 3], (n) => Effect.either(agent.send({ n })))
        expect(results.some(Either.isLeft)).toBe(true)
        yield* agent.terminate(500)
        expect(yield* agent.exitCode).toBe(128 + 15)
      })))

  it.effect("the marker records running process groups; the release of a leftover stops those of an earlier life", () =>
    Effect.gen(function*() {
      const root = freshRoot()
      const spec = sandboxSpec()
      const markerPath = join(root, spec.run_id, `${spec.execution_id}.sandbox.json`)
      const groups = () => JSON.parse(readFileSync(markerPath, "utf8")).process_groups as Array<number>
      yield* withExecutor((first) =>
        Effect.gen(function*() {
          const sandbox = yield* first.prepare(spec)
          const agent = yield* sandbox.start([node, "-e", `console.log("ready"); setInterval(() => {}, 1000)`], {})
          yield* agent.stdout.pipe(Stream.take(1), Stream.runDrain)
          expect(groups()).toHaveLength(1)
          // Another life of the service: it knows nothing of the agent but what the marker says.
          const leftovers = yield* withExecutor((second) => second.leftovers, { root })
          expect(leftovers.map((s) => s.execution_id)).toEqual([spec.execution_id])
          yield* leftovers[0]!.release
          if (existsSync("/proc/self/cwd")) expect(yield* agent.exitCode).toBe(128 + 9)
          expect(existsSync(markerPath)).toBe(false)
        }), { root })
    }))

  it.effect.skipIf(!existsSync("/proc/self/cwd"))("release kills what setup commands left running in the sandbox (Linux)", () =>
    withExecutor((executor, root) =>
      Effect.gen(function*() {
        const spec = sandboxSpec({ setup_commands: ["sleep 30 > /dev/null 2>&1 & echo $! > background.pid"] })
        const sandbox = yield* executor.prepare(spec)
        const pid = Number(readFileSync(join(root, spec.run_id, spec.execution_id, "background.pid"), "utf8"))
        const alive = () => {
          try {
            return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
          } catch {
            return false
          }
        }
        expect(alive()).toBe(true)
        yield* sandbox.release
        // SIGKILL is delivered asynchronously; wait for it without a clock.
        while (alive()) yield* Effect.yieldNow()
        expect(alive()).toBe(false)
      })))

  it.effect("a release whose agent does not die still ends: a warning names the agent, the sandbox is removed", () =>
    withExecutor((executor, root) =>
      Effect.gen(function*() {
        const spec = sandboxSpec()
        const sandbox = yield* executor.prepare(spec)
        const { agent, pid } = yield* startWaitingAgent(sandbox)
        const stuck = unkillable(pid)
        const [, warnings] = yield* withWarnings(sandbox.release).pipe(Effect.ensuring(Effect.sync(stuck.restore)))
        expect(warnings).toContainEqual(expect.stringContaining(`process ${pid} has not exited`))
        expect(existsSync(sandbox.id)).toBe(false)
        expect(existsSync(join(root, spec.run_id, `${spec.execution_id}.sandbox.json`))).toBe(false)
        process.kill(pid, "SIGKILL")
        expect(yield* agent.exitCode).toBe(128 + 9)
      }), { killTimeoutMs: 300 }))

  it.effect("a process group leaves the marker when it exits", () =>
    withExecutor((executor, root) =>
      Effect.gen(function*() {
        const spec = sandboxSpec()
        const sandbox = yield* Effect.acquireRelease(executor.prepare(spec), (s) => s.release)
        const agent = yield* sandbox.start([node, "-e", ""], {})
        expect(yield* agent.exitCode).toBe(0)
        const markerPath = join(root, spec.run_id, `${spec.execution_id}.sandbox.json`)
        // The marker is rewritten right after the exit; wait for it without a clock.
        while (JSON.parse(readFileSync(markerPath, "utf8")).process_groups.length > 0) yield* Effect.yieldNow()
        expect(JSON.parse(readFileSync(markerPath, "utf8")).process_groups).toEqual([])
      })))

  it.effect("leftovers skip malformed markers and stray files; an empty or missing root has none", () =>
    Effect.gen(function*() {
      expect(yield* withExecutor((executor) => executor.leftovers)).toEqual([])
      const root = freshRoot()
      const good = marker()
      mkdirSync(join(root, good.run_id), { recursive: true })
      writeFileSync(join(root, good.run_id, `${good.execution_id}.sandbox.json`), formatMarker(good))
      writeFileSync(join(root, good.run_id, `${ids().execution_id}.sandbox.json`), "not json")
      writeFileSync(join(root, good.run_id, "stray.txt"), "")
      writeFileSync(join(root, "stray.txt"), "")
      const found = yield* withExecutor((executor) => executor.leftovers, { root })
      expect(found.map((s) => [s.run_id, s.execution_id, s.id])).toEqual([[good.run_id, good.execution_id, join(root, good.run_id, good.execution_id)]])
    }))

  it.effect("preparing the same execution again starts from a fresh work directory", () =>
    withExecutor((executor, root) =>
      Effect.gen(function*() {
        const spec = sandboxSpec({ setup_commands: ["test ! -e old.txt && touch old.txt"] })
        yield* executor.prepare(spec)
        const again = yield* executor.prepare(spec)
        expect(readdirSync(join(root, spec.run_id))).toEqual([spec.execution_id, `${spec.execution_id}.sandbox.json`].sort())
        yield* again.release
      })))
})
