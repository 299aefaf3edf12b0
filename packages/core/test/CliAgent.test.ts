/**
 * Archiving an agent CLI's session files (`CliAgent.archiveState`) in a sandbox that runs its
 * commands as local processes: the archive comes back as the gzipped tar `tar` and `base64` made,
 * and output that is not base64 is an `ExecutorError` (logged by the loop), not a defect.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Stream } from "effect"
import { spawn, spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { ExecutionId, RunId } from "../src/domain/Ids.js"
import { archiveState } from "../src/engine/CliAgent.js"
import { AGENT_HOME, type AgentHarness } from "../src/ports/AgentHarness.js"
import { type AgentProcess, ExecutorError, type Sandbox } from "../src/ports/Executor.js"

const scratch = mkdtempSync(join(tmpdir(), "agent-runs-cli-agent-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** A local process as an `AgentProcess`. */
const started = (command: ReadonlyArray<string>, cwd: string): AgentProcess => {
  const child = spawn(command[0]!, command.slice(1), { cwd, stdio: ["pipe", "pipe", "ignore"] })
  const exited = new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? 1)))
  return {
    stdout: Stream.fromAsyncIterable(child.stdout as AsyncIterable<Uint8Array>, (cause) => new ExecutorError({ message: "stdout", cause })),
    send: (message) => Effect.sync(() => void child.stdin.write(`${JSON.stringify(message)}\n`)),
    terminate: () => Effect.sync(() => void child.kill()),
    exitCode: Effect.promise(() => exited)
  }
}

/** A sandbox in `dir` that runs `replace` instead of the commands it is given, when there is one. */
const localSandbox = (dir: string, replace?: ReadonlyArray<string>): Sandbox => ({
  id: dir,
  run_id: "run" as RunId,
  execution_id: "execution" as ExecutionId,
  attachments: [],
  start: (command) =>
    Effect.acquireRelease(Effect.sync(() => started(replace ?? command, dir)), (process) => process.terminate(0)),
  release: Effect.void
})

const harness: AgentHarness = {
  type: "claude",
  launch: () => ({ command: ["true"], env: {}, files: [] }),
  decoder: () => () => [],
  sessionState: { paths: [".claude", "missing"] }
}

describe("archiveState", () => {
  it.live("answers the session files as the gzipped tar of the paths that exist", () =>
    Effect.gen(function*() {
      const dir = join(scratch, "archive")
      mkdirSync(join(dir, AGENT_HOME, ".claude", "projects"), { recursive: true })
      // Bytes of every value, so that a base64 mistake anywhere shows.
      const content = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) & 0xff))
      writeFileSync(join(dir, AGENT_HOME, ".claude", "projects", "session.jsonl"), content)
      const archive = yield* archiveState(localSandbox(dir), harness)
      expect(Option.isSome(archive)).toBe(true)
      const bytes = Option.getOrThrow(archive)
      const listing = spawnSync("tar", ["-tzf", "-"], { input: bytes, encoding: "utf8" })
      expect(listing.status).toBe(0)
      expect(listing.stdout).toContain(".claude/projects/session.jsonl")
      const extracted = spawnSync("tar", ["-xzOf", "-", ".claude/projects/session.jsonl"], { input: bytes })
      expect(Buffer.compare(extracted.stdout, content)).toBe(0)
    }))

  it.live("fails with an ExecutorError when the archive is not base64", () =>
    Effect.gen(function*() {
      const dir = join(scratch, "garbled")
      mkdirSync(dir, { recursive: true })
      const exit = yield* Effect.exit(archiveState(localSandbox(dir, ["sh", "-c", "echo 'not*base64'"]), harness))
      expect(exit).toStrictEqual(Exit.fail(new ExecutorError({ message: "the agent's session archive is not valid base64" })))
    }))
})
