/**
 * Definitions as code, black-box (docs/definitions.md): the built CLI (`node
 * packages/cli/dist/main.js apply DIR ...`) against the built server as a process, and the server
 * applying `AGENT_RUNS_DEFINITIONS_DIR` at start-up, on SQLite and on PostgreSQL. Per database, in
 * order, on one data directory: apply creates the webhooks and automations of a directory (the
 * webhooks authenticate with their team secrets); applying again changes nothing; a dry run
 * changes nothing; files with errors are all reported, each naming its file and key, and nothing
 * is applied; the server applies a directory at start-up as the bootstrap admin (and again
 * without changes on a restart), and does not start with a bad directory.
 */
import { Effect, Exit } from "effect"
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { makeTeam, startServer } from "./harness.js"
import { lifecycle } from "./lifecycle.js"
import { call, MAIN, REPO_ROOT, type ServerProcess } from "./process.js"
import { freePort } from "./support.js"

/** The built CLI. */
const CLI = join(REPO_ROOT, "packages/cli/dist/main.js")

const ADMIN_TOKEN = `ar_${randomBytes(32).toString("base64url")}`

interface CliRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a built entry point to its end (asynchronously: the server under test must keep answering). */
const runToEnd = (main: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>>): Promise<CliRun> =>
  new Promise((resolve, reject) => {
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith("AGENT_RUNS_") && name !== "PORT" && name !== "HOST")
    )
    const child = spawn(process.execPath, [main, ...args], { cwd: REPO_ROOT, env: { ...inherited, ...env } })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
    child.once("error", reject)
    child.once("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

/** Runs the built CLI. */
const cli = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) => runToEnd(CLI, args, env)

const roots: Array<string> = []
afterAll(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })))

/** A definitions directory with these files (path relative to it → text). */
const directory = (files: Readonly<Record<string, string>>): string => {
  const root = mkdtempSync(join(tmpdir(), "agent-runs-definitions-"))
  roots.push(root)
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

const GITHUB = "authMode: signature\nsignatureScheme: github\nsecretName: GITHUB_SECRET\ndeliveryIdHeader: X-GitHub-Delivery\n"
const CI = "authMode: url_token\nsecretName: CI_TOKEN\n"
const TRIAGE = [
  "prompt: Triage the new issue.",
  "trigger:",
  "  filter:",
  "    webhookNames: [github]",
  "    payload: { action: [opened] }",
  "agentConfig:",
  "  modelId: scripted",
  ""
].join("\n")
const VALID = { "webhooks/github.yaml": GITHUB, "webhooks/ci.yaml": CI, "automations/triage.yaml": TRIAGE }

const CI_TOKEN = "ci-token_0123456789.abc~XYZ"

describe.each(["sqlite", "postgres"] as const)("definitions as code (%s)", (kind) => {
  const life = lifecycle(kind, { AGENT_RUNS_CONCURRENCY: "0", AGENT_RUNS_ADMIN_TOKEN: ADMIN_TOKEN })
  const known = { server: undefined as ServerProcess | undefined, admin: "", member: "", valid: "" }
  const server = () => known.server!

  /** The team's webhooks and automations (without the ingress URL, whose port changes on a restart). */
  const list = async (token: string) => {
    const webhooks = await call(server(), "GET", "/api/v1/agent/webhooks", { token })
    const automations = await call(server(), "GET", "/api/v1/agent/automations", { token })
    expect(webhooks.status).toBe(200)
    expect(automations.status).toBe(200)
    // Test code reads the JSON answers field by field.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    type Items = Array<Record<string, any>>
    return {
      webhooks: (webhooks.body.webhooks as Items).map(({ ingress_url: _, ...w }) => w),
      automations: automations.body.automations as Items
    }
  }

  const putSecret = async (token: string, name: string, value: string) =>
    expect((await call(server(), "PUT", `/api/v1/agent/secrets/${name}`, { token, body: { value } })).status).toBe(200)

  it("agent-runs apply creates a directory's webhooks and automations, taking credentials from team secrets", async () => {
    known.server = await life.start()
    const team = await makeTeam({ url: server().url, adminToken: ADMIN_TOKEN }, "Definitions")
    known.admin = team.tokens.admin
    known.member = team.tokens.member
    await putSecret(known.admin, "GITHUB_SECRET", "gh-webhook-secret")
    await putSecret(known.admin, "CI_TOKEN", CI_TOKEN)
    await putSecret(known.admin, "NOT_URL_SAFE", "has spaces/and slashes")
    known.valid = directory(VALID)

    const run = await cli(["apply", known.valid, "--server", server().url, "--token", known.admin])
    expect(run.stderr).toBe("")
    expect(run.code).toBe(0)
    const { automations, webhooks } = await list(known.admin)
    const github = webhooks.find((w) => w.name === "github")!
    const ci = (await call(server(), "GET", `/api/v1/agent/webhooks/${webhooks.find((w) => w.name === "ci")!.uid}`, {
      token: known.admin
    })).body
    expect(github).toMatchObject({
      auth_mode: "signature",
      signature_scheme: "github",
      secret_name: "GITHUB_SECRET",
      delivery_id_header: "X-GitHub-Delivery",
      enabled: true
    })
    expect(ci).toMatchObject({ auth_mode: "url_token", signature_scheme: null, secret_name: "CI_TOKEN", enabled: true })
    expect(automations).toHaveLength(1)
    expect(automations[0]).toMatchObject({
      name: "triage",
      enabled: true,
      prompt: "Triage the new issue.",
      agent_config: { model_id: "scripted" },
      trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [github.uid], payload: { action: ["opened"] } } }
    })
    expect(run.stdout.trim().split("\n")).toEqual([
      `webhooks/ci.yaml: created webhook "ci" (${ci.uid})`,
      `webhooks/github.yaml: created webhook "github" (${github.uid})`,
      `automations/triage.yaml: created automation "triage" (${automations[0]!.id})`,
      "3 created, 0 updated, 0 unchanged"
    ])
    // The url_token webhook authenticates with the team secret's value as its token.
    const path = new URL(ci.ingress_url.replace("{token}", CI_TOKEN)).pathname
    expect((await call(server(), "POST", path, { body: { hello: "world" } })).status).toBe(202)
    expect((await call(server(), "POST", path.replace(CI_TOKEN, "wrong-token"), { body: {} })).status).toBe(401)
  })

  it("applying again (server and token from AGENT_RUNS_URL and AGENT_RUNS_TOKEN) changes nothing", async () => {
    const before = await list(known.admin)
    const run = await cli(["apply", known.valid], { AGENT_RUNS_URL: server().url, AGENT_RUNS_TOKEN: known.admin })
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/webhooks\/ci\.yaml: unchanged webhook "ci" \(\w{22}\)\n/)
    expect(run.stdout).toMatch(/automations\/triage\.yaml: unchanged automation "triage" \(\w{22}\)\n/)
    expect(run.stdout).toContain("0 created, 0 updated, 3 unchanged")
    expect(await list(known.admin)).toEqual(before)
  })

  it("--dry-run prints what would change and changes nothing; applying then updates only what changed", async () => {
    const before = await list(known.admin)
    const edited = directory({ ...VALID, "webhooks/ci.yaml": `${CI}enabled: false\n` })
    const dry = await cli(["apply", edited, "--dry-run", "--server", server().url, "--token", known.admin])
    expect(dry.code).toBe(0)
    expect(dry.stdout).toMatch(/webhooks\/ci\.yaml: would update webhook "ci" \(\w{22}\): enabled\n/)
    expect(dry.stdout).toContain("0 to create, 1 to update, 2 unchanged (dry run: nothing changed)")
    expect(await list(known.admin)).toEqual(before)

    const run = await cli(["apply", edited, "--server", server().url, "--token", known.admin])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/webhooks\/ci\.yaml: updated webhook "ci" \(\w{22}\): enabled\n/)
    const after = await list(known.admin)
    expect(after.webhooks.find((w) => w.name === "ci")!.enabled).toBe(false)
    expect(after.webhooks.find((w) => w.name === "github")).toEqual(before.webhooks.find((w) => w.name === "github"))
    expect(after.automations).toEqual(before.automations)
    // Back as the directory says (re-enabling re-reads the team secret).
    expect((await cli(["apply", known.valid, "--server", server().url, "--token", known.admin])).code).toBe(0)
    expect((await list(known.admin)).webhooks.find((w) => w.name === "ci")!.enabled).toBe(true)
  })

  it("reports every error, naming the file and the key, and applies nothing", async () => {
    const before = await list(known.admin)
    const bad = directory({
      ...VALID,
      "automations/triage.yaml": TRIAGE.replace("Triage the new issue.", "A changed prompt."),
      "webhooks/new.yaml": "secretName: CI_TOKEN\n",
      "webhooks/missing.yaml": "secretName: NO_SUCH_SECRET\n",
      "webhooks/unsafe.yaml": "authMode: url_token\nsecretName: NOT_URL_SAFE\n",
      "webhooks/mode.yaml": "authMode: bearer\nsecretName: CI_TOKEN\n",
      "webhooks/extra.yaml": "secretName: CI_TOKEN\nsecret: hunter2\n",
      "webhooks/broken.yaml": "secretName: [CI_TOKEN\nenabled: true\n"
    })
    const run = await cli(["apply", bad, "--server", server().url, "--token", known.admin])
    expect(run.code).not.toBe(0)
    expect(run.stdout).toBe("")
    const lines = run.stderr.trim().split("\n")
    expect(lines[0]).toBe("5 errors in the definitions; nothing was applied:")
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^ {2}webhooks\/broken\.yaml: line \d+, column \d+: /),
      "  webhooks/extra.yaml: secret: is not a known key (expected authMode, signatureScheme, secretName, deliveryIdHeader, enabled)",
      "  webhooks/missing.yaml: secretName: no team secret named NO_SUCH_SECRET; put it with PUT /agent/secrets/NO_SUCH_SECRET first",
      "  webhooks/mode.yaml: authMode: must be one of token, url_token, signature; got \"bearer\"",
      "  webhooks/unsafe.yaml: secretName: the value of team secret NOT_URL_SAFE must be URL-safe (letters, digits, '-', " +
      "'.', '_', '~') for a url_token webhook"
    ])
    expect(await list(known.admin)).toEqual(before)
  })

  it("says what the server refused: a member may not apply definitions", async () => {
    const run = await cli(["apply", known.valid, "--server", server().url, "--token", known.member])
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain("the server answered not_authorized: only team admins can manage webhooks")
    const unreachable = await cli(["apply", known.valid, "--server", "http://127.0.0.1:9", "--token", known.admin])
    expect(unreachable.code).not.toBe(0)
    expect(unreachable.stderr).toContain("could not reach http://127.0.0.1:9")
    const missing = await cli(["apply", join(known.valid, "nope"), "--server", server().url, "--token", known.admin])
    expect(missing.stderr).toContain(`${join(known.valid, "nope")}: no such directory`)
    // Three CLI processes one after the other: each takes seconds to start on a loaded machine.
  }, 90_000)

  it("the server applies AGENT_RUNS_DEFINITIONS_DIR at start-up as the bootstrap admin, and again without changes", async () => {
    // The bootstrap admin's team needs the secret before the definitions can name it.
    await putSecret(ADMIN_TOKEN, "STARTUP_TOKEN", "startup-token-value")
    await life.stop()
    const startup = directory({
      "webhooks/startup.yaml": "secretName: STARTUP_TOKEN\ndeliveryIdHeader: X-Delivery\n",
      "automations/on-startup.yaml": "prompt: Say hello.\ntrigger: {filter: {webhookNames: [startup]}}\n"
    })
    known.server = await life.start({ AGENT_RUNS_DEFINITIONS_DIR: startup })
    expect(server().stdout()).toMatch(/Definitions: webhooks\/startup\.yaml: created webhook "startup" \(\w{22}\)/)
    expect(server().stdout()).toMatch(/Definitions: automations\/on-startup\.yaml: created automation "on-startup"/)
    const first = await list(ADMIN_TOKEN)
    const webhook = first.webhooks.find((w) => w.name === "startup")!
    expect(webhook).toMatchObject({ auth_mode: "token", secret_name: "STARTUP_TOKEN", delivery_id_header: "X-Delivery" })
    expect(first.automations.find((a) => a.name === "on-startup")!.trigger.filter.webhook_ids).toEqual([webhook.uid])
    // Not in the other team.
    expect((await list(known.admin)).webhooks.map((w) => w.name).sort()).toEqual(["ci", "github"])

    await life.stop()
    known.server = await life.start({ AGENT_RUNS_DEFINITIONS_DIR: startup })
    expect(server().stdout()).toMatch(/Definitions: webhooks\/startup\.yaml: unchanged webhook "startup"/)
    expect(server().stdout()).toMatch(/Definitions: automations\/on-startup\.yaml: unchanged automation "on-startup"/)
    expect(await list(ADMIN_TOKEN)).toEqual(first)
  }, 120_000)

  it("does not start with a bad AGENT_RUNS_DEFINITIONS_DIR, and says which file and key", async () => {
    const before = await list(ADMIN_TOKEN)
    await life.stop()
    const bad = directory({
      "webhooks/startup.yaml": "authMode: url_token\nsecretName: STARTUP_TOKEN\n",
      "webhooks/other.yaml": "authMode: basic\nsecretName: STARTUP_TOKEN\n"
    })
    // Started to its end, not polled for readiness: see docs/definitions.md on start-up failures.
    const start = async (dir: string) =>
      runToEnd(MAIN, [], {
        ...life.env,
        PORT: String(await Effect.runPromise(freePort)),
        HOST: "127.0.0.1",
        AGENT_RUNS_DATA_DIR: life.dataDir,
        AGENT_RUNS_DEFINITIONS_DIR: dir
      })
    // The failure is one line on stderr (docs/reference/configuration.md, "When the server cannot start").
    const refused = await start(bad)
    expect(refused.code).toBe(1)
    const said = refused.stdout + refused.stderr
    expect(said).toContain(`AGENT_RUNS_DEFINITIONS_DIR (${bad}): 2 errors in the definitions; nothing was applied:`)
    expect(said).toContain("webhooks/other.yaml: authMode: must be one of token, url_token, signature; got \"basic\"")
    expect(said).toContain("webhooks/startup.yaml: authMode: is url_token here but token on the server: cannot change")
    expect(said).not.toContain("Agent Runs is serving")
    const nowhere = join(bad, "nowhere")
    const missing = await start(nowhere)
    expect(missing.code).toBe(1)
    expect(missing.stdout + missing.stderr).toContain(`AGENT_RUNS_DEFINITIONS_DIR (${nowhere}): ${nowhere}: no such directory`)

    known.server = await life.start()
    expect(await list(ADMIN_TOKEN)).toEqual(before)
  }, 120_000)
})

describe.each(["sqlite", "postgres"] as const)("definitions at start-up, in process (%s)", (kind) => {
  it("a new server cannot apply a webhook whose team secret is not there yet: start-up fails naming file and key", async () => {
    const dir = directory({
      "webhooks/github.yaml": GITHUB,
      "automations/triage.yaml": `prompt: go\ntrigger: {filter: {webhookIds: [${"A".repeat(22)}]}}\n`
    })
    const exit = await Effect.runPromiseExit(Effect.scoped(startServer(kind, { definitionsDir: dir })))
    expect(Exit.isFailure(exit)).toBe(true)
    const message = Exit.isFailure(exit) ? String(exit.cause) : ""
    expect(message).toContain(`AGENT_RUNS_DEFINITIONS_DIR (${dir}): 2 errors in the definitions; nothing was applied:`)
    expect(message).toContain(`automations/triage.yaml: trigger.filter.webhookIds[0]: no webhook ${"A".repeat(22)} in this team`)
    expect(message).toContain(
      "webhooks/github.yaml: secretName: no team secret named GITHUB_SECRET; put it with PUT /agent/secrets/GITHUB_SECRET first"
    )
  })
})
