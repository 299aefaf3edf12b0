/**
 * `agent-runs login --sso` (the built CLI, spawned) against the bundled server (SQLite) whose
 * sign-in uses a real OpenID Connect provider on loopback: the CLI starts the device flow, prints
 * the code, opens the browser (`$BROWSER`, here a script that records the URL), and once the user
 * approved on the provider's pages saves the session as a profile with its expiry (a token of the
 * principal's, named for the CLI, which the other commands then use). A server without sign-in
 * (`--sso` says so: cli.test.ts, on its server) and `--sso` with `--token` (a usage error:
 * packages/cli/test/Usage.test.ts) are tested where they cost no server of their own.
 */
import { completeDeviceLogin, type OidcProviderServer, startOidcProvider } from "@agent-runs/testing"
import { Effect, Exit, Redacted, Scope } from "effect"
import { spawn } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { call, startServer, type TestServer } from "./harness.js"
import { assertBuilt, REPO_ROOT } from "./process.js"

const CLI = join(REPO_ROOT, "packages/cli/dist/main.js")

describe("agent-runs login --sso", () => {
  const scope = Effect.runSync(Scope.make())
  const dir = mkdtempSync(join(tmpdir(), "agent-runs-cli-sso-"))
  const opened = join(dir, "opened-url")
  const browser = join(dir, "browser.sh")
  let provider: OidcProviderServer
  let server: TestServer

  beforeAll(async () => {
    assertBuilt(inject("serverBuild"))
    writeFileSync(browser, `#!/bin/sh\nprintf '%s' "$1" > '${opened}'\n`)
    chmodSync(browser, 0o755)
    provider = await startOidcProvider({ users: [{ sub: "linus", email: "linus@example.com", email_verified: true, name: "Linus" }] })
    server = await Effect.runPromise(Scope.extend(startServer("sqlite", {
      signIn: { issuer: provider.issuer, clientId: provider.clientId, clientSecret: Redacted.make(provider.clientSecret), sessionHours: 24 }
    }), scope))
  }, 60_000)
  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await provider?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const cli = (args: ReadonlyArray<string>, onStderr?: (text: string) => void) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AGENT_RUNS_")))
      const child = spawn(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env: { ...inherited, XDG_CONFIG_HOME: dir, BROWSER: browser } })
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk
        onStderr?.(stderr)
      })
      child.stdin.end()
      const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
      child.once("error", reject)
      child.once("close", (code) => {
        clearTimeout(timer)
        resolve({ code, stdout, stderr })
      })
    })

  it("signs in through the device flow, opening the browser, and saves the session with its expiry", async () => {
    let approving: Promise<void> | undefined
    const login = await cli(["login", "--server", server.url, "--sso"], (stderr) => {
      const code = /enter the code (\S+)/.exec(stderr)?.[1]
      if (code === undefined || approving !== undefined) return
      approving = (async () => {
        for (let i = 0; i < 50 && !existsSync(opened); i++) await new Promise((r) => setTimeout(r, 100))
        await completeDeviceLogin(readFileSync(opened, "utf8"), code, "linus")
      })()
    })
    await approving
    expect(login.stderr).toMatch(/To sign in, open http:\/\/127\.0\.0\.1:\d+\/\S+ and enter the code \S+/)
    expect(login.stderr).toContain("signed in as Linus (")
    expect(login.code, login.stderr).toBe(0)
    const profiles = JSON.parse(readFileSync(join(dir, "agent-runs", "profiles.json"), "utf8"))
    const saved = profiles.profiles.default
    expect(saved.token).toMatch(/^ar_/)
    expect(Date.parse(saved.expires_at) - Date.now()).toBeGreaterThan(23 * 3_600_000)
    expect(login.stdout + login.stderr).not.toContain(saved.token)
    // The session is the principal's token like any other: the admin sees it, named for the CLI.
    const me = await call(server, "GET", "/api/v1/agent/me", { token: saved.token })
    expect(me.status).toBe(403) // a new user in no team yet
    const principals = await call(server, "GET", "/api/v1/admin/principals", { token: server.adminToken })
    const linus = principals.body.principals.find((p: { display_name: string }) => p.display_name === "Linus")
    const tokens = await call(server, "GET", `/api/v1/admin/principals/${linus.uid}/tokens`, { token: server.adminToken })
    expect(tokens.body.tokens.map((t: { name: string }) => t.name)).toEqual(["sign-in (CLI)"])
  }, 60_000)
})
