import { Command } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { afterAll, beforeEach, describe, expect, it, vi } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Option, Redacted, TestClock } from "effect"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Connection from "../src/commands/Connection.js"
import * as Profiles from "../src/Profiles.js"

const home = mkdtempSync(join(tmpdir(), "agent-runs-profiles-"))
const saved = { XDG_CONFIG_HOME: process.env["XDG_CONFIG_HOME"], AGENT_RUNS_PROFILE: process.env["AGENT_RUNS_PROFILE"] }
afterAll(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
  rmSync(home, { recursive: true, force: true })
})

const file = join(home, "agent-runs", "profiles.json")

beforeEach(() => {
  process.env["XDG_CONFIG_HOME"] = home
  delete process.env["AGENT_RUNS_PROFILE"]
  rmSync(join(home, "agent-runs"), { recursive: true, force: true })
})

interface Parsed {
  readonly server: string
  readonly token: string
  readonly team: Option.Option<string>
}

/** Parses the connection options of `args` with these environment variables. */
const parse = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) => {
  let parsed: Parsed | undefined
  const probe = Command.make("probe", Connection.options, (o) =>
    Effect.sync(() => {
      parsed = { server: o.server, token: Redacted.value(o.token), team: o.team }
    }))
  return Command.run(probe, { name: "probe", version: "0" })(["node", "probe", ...args]).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.provide(NodeContext.layer),
    Effect.either,
    Effect.map((result) => (Either.isRight(result) ? Either.right(parsed!) : Either.left(result.left)))
  )
}

describe("Profiles", () => {
  it("is under XDG_CONFIG_HOME, else ~/.config", () => {
    expect(Profiles.path({ XDG_CONFIG_HOME: "/x" })).toBe("/x/agent-runs/profiles.json")
    expect(Profiles.path({})).toMatch(/\/\.config\/agent-runs\/profiles\.json$/)
  })

  it.effect("saves profiles with mode 0600, keeping the others", () =>
    Effect.gen(function*() {
      yield* Profiles.save("default", { server: "http://a", token: "ar_a" })
      yield* Profiles.save("other", { server: "http://b", token: "ar_b", team: "T" })
      yield* Profiles.save("default", { server: "http://c", token: "ar_c" })
      expect(statSync(file).mode & 0o777).toBe(0o600)
      expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
        profiles: { default: { server: "http://c", token: "ar_c" }, other: { server: "http://b", token: "ar_b", team: "T" } }
      })
    }))

  it.effect("the connection options take the flag, else the environment, else the profile", () =>
    Effect.gen(function*() {
      yield* Profiles.save("default", { server: "http://profile", token: "ar_profile", team: "ProfileTeam" })
      yield* Profiles.save("ci", { server: "http://ci", token: "ar_ci" })
      expect(yield* parse([])).toEqual(
        Either.right({ server: "http://profile", token: "ar_profile", team: Option.some("ProfileTeam") })
      )
      expect(yield* parse(["--server", "http://flag"], { AGENT_RUNS_URL: "http://env", AGENT_RUNS_TOKEN: "ar_env" })).toEqual(
        Either.right({ server: "http://flag", token: "ar_env", team: Option.some("ProfileTeam") })
      )
      process.env["AGENT_RUNS_PROFILE"] = "ci"
      expect(yield* parse([])).toEqual(Either.right({ server: "http://ci", token: "ar_ci", team: Option.none() }))
      process.env["AGENT_RUNS_PROFILE"] = "missing"
      expect(Either.isLeft(yield* parse([]))).toBe(true)
    }))

  it.effect("without a profile file, missing options are missing; a file that is not JSON is an error", () =>
    Effect.gen(function*() {
      expect(Either.isLeft(yield* parse([]))).toBe(true)
      expect(yield* parse(["--server", "http://s", "--token", "ar_t"])).toEqual(
        Either.right({ server: "http://s", token: "ar_t", team: Option.none() })
      )
      mkdirSync(join(home, "agent-runs"), { recursive: true })
      writeFileSync(file, "{")
      expect(() => Profiles.readSync(file)).toThrow(/is not JSON/)
      expect(yield* Effect.either(Profiles.save("default", { server: "http://s", token: "ar_t" }))).toMatchObject(
        Either.left({ _tag: "ProfileFileError" })
      )
      expect(Either.isLeft(yield* parse([]))).toBe(true)
    }))
})

describe("a profile's expiry", () => {
  const connection = (token: string) => ({ server: "http://s", token: Redacted.make(token), team: Option.none() })
  /** The lines the connection's warning prints on stderr at `now`. */
  const warnings = (token: string, now: string) =>
    Effect.gen(function*() {
      const printed: Array<string> = []
      const spy = vi.spyOn(console, "error").mockImplementation((line: string) => void printed.push(line))
      yield* TestClock.setTime(Date.parse(now))
      yield* Connection.warnOfProfileExpiry(connection(token)).pipe(Effect.ensuring(Effect.sync(() => spy.mockRestore())))
      return printed
    })

  it.effect("is saved and read as a string; anything else makes the file unusable", () =>
    Effect.gen(function*() {
      yield* Profiles.save("default", { server: "http://a", token: "ar_a", expires_at: "2026-12-01T00:00:00.000Z" })
      expect(Profiles.readSync(file).profiles["default"]?.expires_at).toBe("2026-12-01T00:00:00.000Z")
      writeFileSync(file, JSON.stringify({ profiles: { default: { server: "http://a", token: "ar_a", expires_at: 1 } } }))
      expect(() => Profiles.readSync(file)).toThrow(/"expires_at" are strings/)
    }))

  it.effect("the profile in use is the current one, only while the command uses its token", () =>
    Effect.gen(function*() {
      yield* Profiles.save("default", { server: "http://a", token: "ar_a" })
      yield* Profiles.save("ci", { server: "http://b", token: "ar_b" })
      expect(Profiles.inUse("ar_a")?.name).toBe("default")
      expect(Profiles.inUse("ar_b")).toBeUndefined()
      process.env["AGENT_RUNS_PROFILE"] = "ci"
      expect(Profiles.inUse("ar_b")?.name).toBe("ci")
      expect(Connection.tokenSource(connection("ar_b")).whose).toBe("the token of profile \"ci\"")
      expect(Connection.tokenSource(connection("ar_other")).whose).toBe("this token")
    }))

  it.effect("resolving the connection warns once within 7 days and after; not before, nor for another token", () =>
    Effect.gen(function*() {
      yield* Profiles.save("default", { server: "http://a", token: "ar_a", expires_at: "2026-12-01T00:00:00.000Z" })
      expect(yield* warnings("ar_a", "2026-11-28T00:00:00Z")).toEqual([
        "warning: the token of profile \"default\" expires on 2026-12-01T00:00:00Z; run agent-runs login again"
      ])
      expect(yield* warnings("ar_a", "2026-12-02T00:00:00Z")).toEqual([
        "warning: the token of profile \"default\" expired on 2026-12-01T00:00:00Z; run agent-runs login again"
      ])
      expect(yield* warnings("ar_a", "2026-11-20T00:00:00Z")).toEqual([])
      expect(yield* warnings("ar_flag", "2026-11-30T00:00:00Z")).toEqual([])
      yield* Profiles.save("default", { server: "http://a", token: "ar_a", expires_at: "not a date" })
      expect(yield* warnings("ar_a", "2026-11-30T00:00:00Z")).toEqual([])
    }))
})
