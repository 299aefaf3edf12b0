/**
 * Usage errors the commands find before sending anything: `agent-runs` run in process (`main`, as
 * main.ts runs it, without a server: none is needed) prints one line and exits 2. The commands
 * against a server are tested black-box in examples/server/test/cli.test.ts and cli-sign-in.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, type Console, Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { exitCode, main } from "../src/Cli.js"

// No profile: the connection is the options' alone.
const home = mkdtempSync(join(tmpdir(), "agent-runs-usage-"))
const saved = process.env["XDG_CONFIG_HOME"]
beforeAll(() => {
  process.env["XDG_CONFIG_HOME"] = home
})
afterAll(() => {
  if (saved === undefined) delete process.env["XDG_CONFIG_HOME"]
  else process.env["XDG_CONFIG_HOME"] = saved
  rmSync(home, { recursive: true, force: true })
})

/** Nothing listens there: a command that sent a request would fail otherwise than with a usage error. */
const NOWHERE = ["--server", "http://127.0.0.1:9", "--token", "ar_not-sent"]

/** Runs `agent-runs ARGS` with no AGENT_RUNS_* variables; answers the exit code and the lines on stderr. */
const agentRuns = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const stderr: Array<string> = []
    const base = yield* Effect.console
    const capturing: Console.Console = {
      ...base,
      error: (...parts) => Effect.sync(() => void stderr.push(parts.join(" "))),
      unsafe: { ...base.unsafe, error: (...parts) => void stderr.push(parts.join(" ")) }
    }
    const exit = yield* main(["node", "agent-runs", ...args]).pipe(
      Effect.withConsole(capturing),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map())),
      Effect.exit
    )
    return { code: exitCode(exit), stderr }
  })

describe("usage errors", () => {
  it.effect("tokens create: --expires-at that is not an RFC 3339 time", () =>
    Effect.gen(function*() {
      expect(yield* agentRuns(["tokens", "create", "A".repeat(22), "--expires-at", "tomorrow", ...NOWHERE])).toEqual({
        code: 2,
        stderr: ["agent-runs: invalid --expires-at \"tomorrow\": not an RFC 3339 time"]
      })
    }))

  it.effect("login: --sso with --token", () =>
    Effect.gen(function*() {
      expect(yield* agentRuns(["login", "--sso", ...NOWHERE])).toEqual({
        code: 2,
        stderr: ["agent-runs: give either --token or --sso, not both"]
      })
    }))
})
