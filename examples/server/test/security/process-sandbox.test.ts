/**
 * Threat: a member's environment setup command or agent (any shell command, on the process
 * executor) reads the server's secrets — the bootstrap admin token, the secret key that encrypts
 * stored secrets and signs links, the database, the blob store, the server's environment — or
 * another run's work directory, and so becomes administrator or reads other teams' work.
 *
 * Attack: the built server runs as it would for `npm start` (root here, so isolation is `auto` →
 * a user per sandbox). A victim run writes a secret into its work directory and waits. An attacker
 * run, whose environment's setup command and whose agent both try to read every target (the
 * paths, and the victim's work directory, handed to them by this test), reports what it got.
 *
 * Expected: every read is refused (EACCES), the agent runs as neither root nor the server's user,
 * and neither the admin token, the secret key nor the victim's secret appears anywhere in the
 * attacker's conversation or transcript. Without isolation (AGENT_RUNS_PROCESS_ISOLATION=none) the
 * same attack reads them all: checked too, so the test proves it can see a leak.
 */
import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { assertBuilt, call, type ServerProcess, spawnServer, tempDataDir } from "../process.js"

const isRoot = process.getuid?.() === 0

/** The agent: a victim (writes a secret, waits) or an attacker (tries to read each path of its prompt). */
const AGENT = `
import { readFileSync, readdirSync, writeFileSync } from "node:fs"
import { createInterface } from "node:readline"
const out = (event) => process.stdout.write(JSON.stringify(event) + "\\n")
const lines = createInterface({ input: process.stdin })
lines.once("line", (line) => {
  const start = JSON.parse(line)
  const [role, ...targets] = start.prompt.split("\\n")
  if (role === "victim") {
    writeFileSync("victim-secret.txt", targets[0])
    out({ type: "message", role: "assistant", text: "victim ready in " + process.cwd() })
    return // waits for the cancel: stdin stays open
  }
  const report = { uid: process.getuid(), attempts: {} }
  for (const target of targets) {
    try {
      const listing = readdirSync(target)
      report.attempts[target] = "listed: " + listing.join(",")
    } catch (error) {
      if (error.code !== "ENOTDIR") { report.attempts[target] = "refused: " + error.code; continue }
      try { report.attempts[target] = "read: " + readFileSync(target, "latin1").replace(/[^\\x20-\\x7e]+/g, " ").slice(0, 8000) }
      catch (error) { report.attempts[target] = "refused: " + error.code }
    }
  }
  try { report.setup = readFileSync("setup-report.txt", "latin1").replace(/[^\\x20-\\x7e\\n]+/g, " ").slice(0, 4000) } catch (error) { report.setup = "missing: " + error.code }
  out({ type: "message", role: "assistant", text: JSON.stringify(report) })
  out({ type: "result", outcome: "succeeded" })
  process.exit(0)
})
`

interface Attack {
  readonly uid: number
  readonly attempts: Record<string, string>
  readonly setup: string
}

const waitFor = async <A>(what: string, probe: () => Promise<A | undefined>, timeoutMs = 20_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const attackOn = (isolation: "auto" | "none") => {
  const scope = Effect.runSync(Scope.make())
  let server: ServerProcess
  let agentDir: string
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const victimSecret = `victim-${randomBytes(12).toString("hex")}`

  beforeAll(async () => {
    assertBuilt(inject("serverBuild"))
    // The agent program where any user may read it (as an installed agent would be).
    agentDir = mkdtempSync(join(tmpdir(), "agent-runs-attacker-"))
    chmodSync(agentDir, 0o755)
    writeFileSync(join(agentDir, "agent.mjs"), AGENT, { mode: 0o644 })
    const dataDir = await Effect.runPromise(Scope.extend(tempDataDir, scope))
    server = await Effect.runPromise(Scope.extend(
      spawnServer({
        dataDir,
        env: {
          AGENT_RUNS_ADMIN_TOKEN: adminToken,
          AGENT_RUNS_HARNESS: `${process.execPath} ${join(agentDir, "agent.mjs")}`,
          AGENT_RUNS_PROCESS_ISOLATION: isolation,
          AGENT_RUNS_CONCURRENCY: "4"
        }
      }),
      scope
    ))
    // Starting a server process takes seconds on a loaded machine.
  }, 60_000)

  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(agentDir, { recursive: true, force: true })
  })

  const run = async (prompt: string, environmentId?: string) => {
    const created = await call(server, "POST", "/api/v1/agent/runs", {
      token: adminToken,
      body: { prompt, ...(environmentId === undefined ? {} : { config: { environment_id: environmentId } }) }
    })
    expect(created.status).toBe(200)
    return created.body.run_id as string
  }

  const conversationText = async (runId: string) =>
    JSON.stringify((await call(server, "GET", `/api/v1/agent/runs/${runId}/conversation`, { token: adminToken })).body)

  /** Runs the attack; returns what the attacker got, and everything it said. */
  const attack = async (): Promise<{ readonly report: Attack; readonly said: string }> => {
    const victim = await run(`victim\n${victimSecret}`)
    const victimDir = await waitFor("the victim to start", async () => {
      const text = await conversationText(victim)
      return /victim ready in ([^"\\]+)/.exec(text)?.[1]
    })
    const dataDir = server.dataDir
    const blob = readdirSync(join(dataDir, "blobs"), { recursive: true }).map(String)[0] ?? ""
    const targets = [
      join(dataDir, "admin-token"),
      join(dataDir, "secret-key"),
      join(dataDir, "agent-runs.db"),
      join(dataDir, "agent-runs.db-wal"),
      join(dataDir, "blobs"),
      join(dataDir, "blobs", blob),
      join(dataDir, "sandboxes"),
      join(dataDir, "sandboxes", victim),
      victimDir,
      join(victimDir, "victim-secret.txt"),
      `/proc/${server.pid}/environ`
    ]
    const script = targets.map((t) => `echo "== ${t}"; cat '${t}' 2>&1 || ls -la '${t}' 2>&1`).join("; ")
    const environment = await call(server, "POST", "/api/v1/agent/environments", {
      token: adminToken,
      body: { config: { name: "attacker", setup_commands: [`{ id -u; ${script}; } > setup-report.txt 2>&1; true`] } }
    })
    expect(environment.status, JSON.stringify(environment.body)).toBeLessThan(300)
    const attacker = await run(["attacker", ...targets].join("\n"), environment.body.uid)
    const ended = await waitFor("the attacker to end", async () => {
      const got = await call(server, "GET", `/api/v1/agent/runs/${attacker}`, { token: adminToken })
      return ["SUCCEEDED", "FAILED", "ERROR"].includes(got.body.state) ? got.body : undefined
    })
    expect(ended.state, JSON.stringify(ended.status_message)).toBe("SUCCEEDED")
    const said = await conversationText(attacker)
    const transcript = await call(server, "GET", `/api/v1/agent/runs/${attacker}/transcript`, { token: adminToken })
    const location = transcript.headers.get("location")
    const raw = location === null ? "" : await (await fetch(location)).text()
    const message = JSON.parse(said).steps.flatMap((s: { messages: Array<{ content: Array<{ text?: string }> }> }) =>
      s.messages.flatMap((m) => m.content.map((c) => c.text ?? ""))
    ).find((text: string) => text.startsWith("{\"uid\""))
    expect(message, said.slice(0, 2000)).toBeDefined()
    await call(server, "POST", `/api/v1/agent/runs/${victim}/cancel`, { token: adminToken })
    return { report: JSON.parse(message) as Attack, said: `${said}\n${raw}` }
  }

  return { attack, secrets: () => [adminToken, readFileSync(join(server.dataDir, "secret-key"), "utf8").trim(), victimSecret] }
}

describe.runIf(isRoot)("process executor: a member's setup command and agent cannot read the server's secrets", () => {
  const { attack, secrets } = attackOn("auto")

  it("every read of a secret, the database, the blobs or another run's directory is refused", async () => {
    const { report, said } = await attack()
    expect(report.uid).not.toBe(0)
    for (const [target, outcome] of Object.entries(report.attempts)) {
      expect(outcome, `the agent read ${target}`).toMatch(/^refused: (EACCES|ENOENT)/)
    }
    expect(report.setup).not.toMatch(/^0$/m) // the setup command's `id -u`
    for (const secret of secrets()) expect(said).not.toContain(secret)
  })
})

describe.runIf(isRoot)("process executor without isolation (AGENT_RUNS_PROCESS_ISOLATION=none): the same attack succeeds", () => {
  const { attack, secrets } = attackOn("none")

  it("reads the admin token, the secret key and the other run's secret (what isolation prevents)", async () => {
    const { report, said } = await attack()
    expect(report.uid).toBe(0)
    const [adminToken, , victimSecret] = secrets()
    expect(said).toContain(adminToken)
    expect(said).toContain(victimSecret)
  })
})
