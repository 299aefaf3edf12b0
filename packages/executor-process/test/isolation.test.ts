/**
 * The process executor with isolation (a user per sandbox; the tests run as root, as CI does):
 * the whole executor conformance suite again, then what isolation itself promises — setup
 * commands and agents run as the sandbox's own uid, never root; the work directory is theirs
 * (0700) and the run directory and root are searchable only (0711); one sandbox cannot read
 * another's files or a file of the service; the marker records the uid, so the release by a
 * later life of the service kills every process of that uid, even one that left the sandbox's
 * directory and process group; and a release whose agent will not die still ends (issue 31).
 */
import { executorConformance, sandboxSpec } from "@agent-runs/core/testing"
import { Executor } from "@agent-runs/core"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import type { Scope } from "effect"
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Config, layer } from "../src/ProcessExecutor.js"
import { processesOf } from "../src/internal/users.js"
import { startWaitingAgent, unkillable, withWarnings } from "./unkillable.js"

const isRoot = process.getuid?.() === 0
const uids = { first: 1_500_000_000, count: 100_000 }

const base = mkdtempSync(join(tmpdir(), "agent-runs-executor-isolated-"))
// Sandbox users must reach the roots below (mkdtemp makes the directory private).
chmodSync(base, 0o711)
afterAll(() => rmSync(base, { recursive: true, force: true }))
const reposDir = join(base, "repos")

if (isRoot) {
  executorConformance("process, isolated", {
    layer: layer({ root: join(base, "sandboxes"), reposDir, terminateGraceMs: 1_000, isolation: { uids } }),
    reposDir,
    node: process.execPath
  })
}

let counter = 0
const withExecutor = <A, E>(
  f: (executor: Executor.Executor["Type"], root: string) => Effect.Effect<A, E, Scope.Scope>,
  root = join(base, `root-${++counter}`),
  settings: Pick<Config, "killTimeoutMs"> = {}
) =>
  Effect.scoped(Effect.provide(
    Effect.flatMap(Executor.Executor, (executor) => f(executor, root)),
    layer({ root, reposDir, terminateGraceMs: 500, isolation: { uids }, ...settings })
  ))

const text = (stream: Stream.Stream<Uint8Array, unknown>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => Buffer.concat(Chunk.toReadonlyArray(chunks)).toString("utf8"))

const ownerOf = (path: string) => statSync(path).uid
const modeOf = (path: string) => statSync(path).mode & 0o777

describe.runIf(isRoot)("ProcessExecutor with isolation", () => {
  it.effect("setup commands and agents run as the sandbox's own uid, in a work directory only it can enter", () =>
    withExecutor((executor, root) =>
      Effect.gen(function*() {
        const spec = sandboxSpec({ setup_commands: ["id -u > setup-uid; id -G > setup-groups"] })
        const sandbox = yield* executor.prepare(spec)
        const workdir = join(root, spec.run_id, spec.execution_id)
        const uid = ownerOf(workdir)
        expect(uid).toBeGreaterThanOrEqual(uids.first)
        expect(uid).toBeLessThan(uids.first + uids.count)
        expect(modeOf(workdir)).toBe(0o700)
        expect(modeOf(join(root, spec.run_id))).toBe(0o711)
        expect(modeOf(root)).toBe(0o711)
        expect(ownerOf(join(root, spec.run_id, `${spec.execution_id}.sandbox.json`))).toBe(0)
        expect(JSON.parse(readFileSync(join(root, spec.run_id, `${spec.execution_id}.sandbox.json`), "utf8")).uid).toBe(uid)
        expect(readFileSync(join(workdir, "setup-uid"), "utf8").trim()).toBe(String(uid))
        // No supplementary groups: only its own gid.
        expect(readFileSync(join(workdir, "setup-groups"), "utf8").trim()).toBe(String(uid))
        const agent = yield* sandbox.start([process.execPath, "-e", "console.log(process.getuid(), process.env.HOME)"], {})
        expect((yield* text(agent.stdout)).trim()).toBe(`${uid} ${workdir}`)
        yield* sandbox.release
      })))

  it.effect("one sandbox cannot read another's work directory, nor a private file of the service", () =>
    withExecutor((executor) =>
      Effect.gen(function*() {
        const secret = join(base, "service-secret")
        writeFileSync(secret, "s3cret", { mode: 0o600 })
        const victim = yield* executor.prepare(sandboxSpec({ setup_commands: ["echo victim-data > data.txt"] }))
        const attacker = yield* executor.prepare(sandboxSpec())
        const agent = yield* attacker.start(["/bin/sh", "-c", `cat '${join(victim.id, "data.txt")}' 2>&1; ls '${victim.id}' 2>&1; cat '${secret}' 2>&1; true`], {})
        const said = yield* text(agent.stdout)
        expect(said).not.toContain("victim-data")
        expect(said).not.toContain("s3cret")
        expect(said.match(/Permission denied/g)?.length).toBe(3)
        expect(ownerOf(victim.id)).not.toBe(ownerOf(attacker.id))
      })))

  it.effect("the release by a later life of the service kills every process of the sandbox's uid, wherever it went", () =>
    Effect.gen(function*() {
      const root = join(base, `root-${++counter}`)
      const spec = sandboxSpec({ setup_commands: ["cd / && setsid sleep 60 > /dev/null 2>&1 < /dev/null &"] })
      const uid = yield* withExecutor((executor) =>
        Effect.gen(function*() {
          const sandbox = yield* executor.prepare(spec)
          return ownerOf(sandbox.id)
        }), root)
      // The first life ended without releasing: the escaped sleep runs on, outside the sandbox.
      expect((yield* Effect.promise(() => processesOf(uid))).length).toBeGreaterThan(0)
      yield* withExecutor((executor) =>
        Effect.gen(function*() {
          const leftovers = yield* executor.leftovers
          expect(leftovers.map((s) => s.execution_id)).toEqual([spec.execution_id])
          yield* leftovers[0]!.release
        }), root)
      expect(yield* Effect.promise(() => processesOf(uid))).toEqual([])
    }))

  it.effect("a release whose agent does not die still ends: warnings name it, the sandbox is removed", () =>
    withExecutor((executor) =>
      Effect.gen(function*() {
        const sandbox = yield* executor.prepare(sandboxSpec())
        const { agent, pid } = yield* startWaitingAgent(sandbox)
        const stuck = unkillable(pid)
        const [, warnings] = yield* withWarnings(sandbox.release).pipe(Effect.ensuring(Effect.sync(stuck.restore)))
        expect(warnings).toContainEqual(expect.stringContaining(`process ${pid} has not exited`))
        // The look for the user's processes names it too (or says it could not finish the look in time).
        expect(warnings).toContainEqual(expect.stringContaining("of the sandbox's user"))
        expect(existsSync(sandbox.id)).toBe(false)
        expect(yield* executor.leftovers).toEqual([])
        process.kill(pid, "SIGKILL")
        expect(yield* agent.exitCode).toBe(128 + 9)
      }), undefined, { killTimeoutMs: 1_000 }))
})
