/**
 * Definitions as code, black-box (docs/definitions.md).
 *
 * `agent-runs apply DIR` (the built CLI, spawned) against the bundled server in process, on SQLite
 * only: the CLI talks HTTP, whatever the store. In order, on one server: apply creates the webhooks
 * and automations of a directory (the webhooks authenticate with their team secrets); a dry run (the
 * server and token from AGENT_RUNS_URL and AGENT_RUNS_TOKEN) says what would change, finds the rest
 * unchanged and changes nothing; applying then updates only what changed; files with errors are all
 * reported, each naming its file and key, and nothing is applied; a member is refused (exit 4).
 * `github.yaml` against the GitHub double on loopback (an allowed host of the test servers): it
 * connects the team through `PUT /agent/github` (seen with `GET /agent/github`, audited once),
 * applying it again changes nothing, a member is refused, its errors come with the other files',
 * and a host the operator does not allow is refused by the connect, before anything else is written.
 *
 * The server applying `AGENT_RUNS_DEFINITIONS_DIR` at start-up, in process on SQLite and on
 * PostgreSQL (what it applies is kept by the store): as the bootstrap admin, saying what it did
 * (connecting GitHub too), again without changes on a restart, and not at all (start-up fails,
 * naming file and key) when a file is wrong, a team secret is missing or the directory is not
 * there. And the built server as a process: with a bad directory it does not start, and says
 * which file and key (exit 1).
 *
 * The rules (parsing, planning, secrets against auth modes, what may not change) are tested in
 * packages/core/test/Definitions.test.ts; reading a directory in
 * packages/cli/test/DefinitionsDirectory.test.ts; an unreachable server in
 * packages/cli/test/HttpTarget.test.ts.
 */
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { type FakeGitHub, startFakeGitHub } from "@agent-runs/testing"
import { Effect, Exit, Option, Redacted, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest"
import { makeTeam, startServer, suiteServer, type TestServer } from "./harness.js"
import { cli, directory, runToEnd, temporaryDir } from "./definitions-support.js"
import { assertBuilt, call, MAIN } from "./process.js"
import { freePort, tempDataDir } from "./support.js"

/** The GitHub double the `github.yaml` files connect to (on loopback, which the test servers allow). */
let host: FakeGitHub
beforeAll(async () => {
  host = await startFakeGitHub()
})
afterAll(() => host?.close())

/** A `github.yaml` connecting to the double with a personal token held as the team secret `secret`. */
const githubFile = (secret: string) => `baseUrl: ${host.url}\nauth:\n  type: token\n  tokenSecret: ${secret}\n`

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

/** The team's webhooks and automations (without the ingress URL, whose port changes on a restart). */
const list = async (server: Pick<TestServer, "url">, token: string) => {
  const webhooks = await call(server, "GET", "/api/v1/agent/webhooks", { token })
  const automations = await call(server, "GET", "/api/v1/agent/automations", { token })
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

const putSecret = async (server: Pick<TestServer, "url">, token: string, name: string, value: string) =>
  expect((await call(server, "PUT", `/api/v1/agent/secrets/${name}`, { token, body: { value } })).status).toBe(200)

describe("agent-runs apply", () => {
  const server = suiteServer("sqlite")
  const known = { admin: "", member: "", valid: "" }
  const asAdmin = () => ["--server", server().url, "--token", known.admin]

  beforeAll(async () => {
    const team = await makeTeam(server(), "Definitions")
    known.admin = team.tokens.admin
    known.member = team.tokens.member
    await putSecret(server(), known.admin, "GITHUB_SECRET", "gh-webhook-secret")
    await putSecret(server(), known.admin, "CI_TOKEN", CI_TOKEN)
    await putSecret(server(), known.admin, "NOT_URL_SAFE", "has spaces/and slashes")
    known.valid = directory(VALID)
  }, 60_000)

  it("creates a directory's webhooks and automations, taking credentials from team secrets", async () => {
    assertBuilt(inject("serverBuild"))
    const run = await cli(["apply", known.valid, ...asAdmin()])
    expect(run.stderr).toBe("")
    expect(run.code).toBe(0)
    const { automations, webhooks } = await list(server(), known.admin)
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
  }, 120_000)

  it("--dry-run (server and token from AGENT_RUNS_URL and AGENT_RUNS_TOKEN) prints what would change, finds the rest unchanged, and changes nothing", async () => {
    const before = await list(server(), known.admin)
    const edited = directory({ ...VALID, "webhooks/ci.yaml": `${CI}enabled: false\n` })
    const dry = await cli(["apply", edited, "--dry-run"], { AGENT_RUNS_URL: server().url, AGENT_RUNS_TOKEN: known.admin })
    expect(dry).toMatchObject({ code: 0, stderr: "" })
    const uid = (name: string) => before.webhooks.find((w) => w.name === name)!.uid
    // What the server answers for what was applied plans as unchanged: applying again changes nothing.
    expect(dry.stdout.trim().split("\n")).toEqual([
      `webhooks/ci.yaml: would update webhook "ci" (${uid("ci")}): enabled`,
      `webhooks/github.yaml: unchanged webhook "github" (${uid("github")})`,
      `automations/triage.yaml: unchanged automation "triage" (${before.automations[0]!.id})`,
      "0 to create, 1 to update, 2 unchanged (dry run: nothing changed)"
    ])
    expect(await list(server(), known.admin)).toEqual(before)
  }, 120_000)

  it("applying updates only what changed", async () => {
    const before = await list(server(), known.admin)
    const edited = directory({ ...VALID, "webhooks/ci.yaml": `${CI}enabled: false\n` })
    const run = await cli(["apply", edited, ...asAdmin()])
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/webhooks\/ci\.yaml: updated webhook "ci" \(\w{22}\): enabled\n/)
    expect(run.stdout).toContain("0 created, 1 updated, 2 unchanged")
    const after = await list(server(), known.admin)
    expect(after.webhooks.find((w) => w.name === "ci")!.enabled).toBe(false)
    expect(after.webhooks.find((w) => w.name === "github")).toEqual(before.webhooks.find((w) => w.name === "github"))
    expect(after.automations).toEqual(before.automations)
  }, 120_000)

  it("reports every error, naming the file and the key, and applies nothing", async () => {
    const before = await list(server(), known.admin)
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
    const run = await cli(["apply", bad, ...asAdmin()])
    expect(run.code).toBe(1)
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
    expect(await list(server(), known.admin)).toEqual(before)
  }, 120_000)

  it("says what the server refused: a member may not apply definitions (exit 4)", async () => {
    const run = await cli(["apply", known.valid, "--server", server().url, "--token", known.member])
    expect(run.code).toBe(4)
    expect(run.stderr).toContain("the server answered not_authorized: only team admins can manage webhooks")
  }, 120_000)

  it("github.yaml connects the team through PUT /agent/github; applying again changes nothing; a member is refused", async () => {
    const team = await makeTeam(server(), "Definitions GitHub")
    const as = (role: "admin" | "member") => ["--server", server().url, "--token", team.tokens[role]]
    const connection = async () => (await call(server(), "GET", "/api/v1/agent/github", { token: team.tokens.member })).body
    await putSecret(server(), team.tokens.admin, "GH_TOKEN", host.addToken({ repositories: "all", permission: "write" }))
    const dir = directory({ "github.yaml": githubFile("GH_TOKEN") })
    const described = `${host.url}, token secret GH_TOKEN`

    const refused = await cli(["apply", dir, ...as("member")])
    expect(refused.code).toBe(4)
    expect(refused.stderr).toContain("the server answered not_authorized: only team admins can manage secrets")
    const dry = await cli(["apply", dir, "--dry-run", ...as("admin")])
    expect(dry).toMatchObject({ code: 0, stderr: "" })
    expect(dry.stdout.trim().split("\n")).toEqual([
      `github.yaml: would connect GitHub (${described})`,
      "1 to create, 0 to update, 0 unchanged (dry run: nothing changed)"
    ])
    expect(await connection()).toEqual({ connected: false, connection: null })

    const run = await cli(["apply", dir, ...as("admin")])
    expect(run).toMatchObject({ code: 0, stderr: "" })
    expect(run.stdout.trim().split("\n")).toEqual([`github.yaml: connected GitHub (${described})`, "1 created, 0 updated, 0 unchanged"])
    const connected = await connection()
    expect(connected).toMatchObject({
      connected: true,
      connection: { base_url: host.url, auth: { type: "token", token_secret: "GH_TOKEN" }, connected_by: team.principals.admin }
    })

    const again = await cli(["apply", dir, ...as("admin")])
    expect(again.stdout.trim().split("\n")).toEqual([
      `github.yaml: unchanged GitHub connection (${described})`,
      "0 created, 0 updated, 1 unchanged"
    ])
    expect(await connection()).toEqual(connected)
    const audit = await call(server(), "GET", "/api/v1/agent/audit-log?limit=500", { token: team.tokens.admin })
    // Test code reads the JSON answers field by field.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    expect(audit.body.entries.filter((e: Record<string, any>) => e.action === "github.connect")).toHaveLength(1)
  }, 120_000)

  it("github.yaml: its errors come with the other files'; a host the operator does not allow stops the apply before anything else", async () => {
    const team = await makeTeam(server(), "Definitions GitHub errors")
    const admin = ["--server", server().url, "--token", team.tokens.admin]
    await putSecret(server(), team.tokens.admin, "GH_TOKEN", host.addToken({ repositories: "all", permission: "write" }))
    const bad = await cli(["apply", directory({
      "github.yaml": "auth: {type: token, tokenSecret: NO_SUCH_SECRET}\n",
      "webhooks/mode.yaml": "authMode: bearer\nsecretName: GH_TOKEN\n"
    }), ...admin])
    expect(bad.code).toBe(1)
    expect(bad.stderr.trim().split("\n")).toEqual([
      "2 errors in the definitions; nothing was applied:",
      "  github.yaml: auth.tokenSecret: no team secret named NO_SUCH_SECRET; put it with PUT /agent/secrets/NO_SUCH_SECRET first",
      "  webhooks/mode.yaml: authMode: must be one of token, url_token, signature; got \"bearer\""
    ])

    const elsewhere = await cli(["apply", directory({
      "github.yaml": "baseUrl: https://ghe.example.com\nauth: {type: token, tokenSecret: GH_TOKEN}\n",
      "webhooks/later.yaml": "secretName: GH_TOKEN\n"
    }), ...admin])
    expect(elsewhere.code).toBe(1)
    expect(elsewhere.stderr.trim().split("\n")).toEqual([
      "github.yaml: not applied: the server answered invalid_request: base_url: ghe.example.com is not a GitHub host this " +
      "server connects to (its operator names them: AGENT_RUNS_GITHUB_HOSTS)",
      "Nothing was applied before it."
    ])
    expect(await list(server(), team.tokens.admin)).toEqual({ webhooks: [], automations: [] })
    expect((await call(server(), "GET", "/api/v1/agent/github", { token: team.tokens.admin })).body.connected).toBe(false)
  }, 120_000)
})

describe.each(["sqlite", "postgres"] as const)("the server applies AGENT_RUNS_DEFINITIONS_DIR at start-up, in process (%s)", (kind) => {
  it("a new server cannot apply a webhook or GitHub connection whose team secret is not there yet: start-up fails naming file and key", async () => {
    const dir = directory({
      "github.yaml": githubFile("GH_TOKEN"),
      "webhooks/github.yaml": GITHUB,
      "automations/triage.yaml": `prompt: go\ntrigger: {filter: {webhookIds: [${"A".repeat(22)}]}}\n`
    })
    const exit = await Effect.runPromiseExit(Effect.scoped(startServer(kind, { definitionsDir: dir })))
    expect(Exit.isFailure(exit)).toBe(true)
    const message = Exit.isFailure(exit) ? String(exit.cause) : ""
    expect(message).toContain(`AGENT_RUNS_DEFINITIONS_DIR (${dir}): 3 errors in the definitions; nothing was applied:`)
    expect(message).toContain("github.yaml: auth.tokenSecret: no team secret named GH_TOKEN; put it with PUT /agent/secrets/GH_TOKEN first")
    expect(message).toContain(`automations/triage.yaml: trigger.filter.webhookIds[0]: no webhook ${"A".repeat(22)} in this team`)
    expect(message).toContain(
      "webhooks/github.yaml: secretName: no team secret named GITHUB_SECRET; put it with PUT /agent/secrets/GITHUB_SECRET first"
    )
  }, 60_000)

  it("as the bootstrap admin, saying what it did; again without changes on a restart; not at all when a file is wrong", async () => {
    const adminToken = `ar_${randomBytes(32).toString("base64url")}`
    const store = Effect.runSync(Scope.make())
    try {
      // One data directory (and database) for every start.
      const { database, dataDir } = await Effect.runPromise(Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        return {
          dataDir,
          database: kind === "sqlite"
            ? { _tag: "Sqlite" as const, filename: join(dataDir, "agent-runs.db") }
            : { _tag: "Postgres" as const, url: Redacted.make((yield* freshDatabase).url) }
        }
      }).pipe(Scope.extend(store)))
      /** Starts the server on the store (with `definitionsDir`); answers it, what it printed, and how to stop it. */
      const start = async (definitionsDir?: string) => {
        const scope = Effect.runSync(Scope.make())
        const printed: Array<string> = []
        const spy = vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => void printed.push(args.join(" ")))
        const exit = await Effect.runPromiseExit(Scope.extend(
          startServer(kind, {
            dataDir,
            database,
            blobDir: join(dataDir, "blobs"),
            adminToken: Option.some(Redacted.make(adminToken)),
            ...(definitionsDir === undefined ? {} : { definitionsDir })
          }),
          scope
        )).finally(() => spy.mockRestore())
        const stop = () => Effect.runPromise(Scope.close(scope, Exit.void))
        if (Exit.isFailure(exit)) await stop()
        return { exit, printed: printed.filter((line) => line.startsWith("Definitions: ")), stop }
      }
      const started = async (definitionsDir?: string) => {
        const { exit, printed, stop } = await start(definitionsDir)
        if (Exit.isFailure(exit)) throw new Error(`the server did not start: ${exit.cause}`)
        return { server: exit.value, printed, stop }
      }

      // The bootstrap admin's team needs the secret before the definitions can name it.
      const first = await started()
      await putSecret(first.server, adminToken, "STARTUP_TOKEN", "startup-token-value")
      await putSecret(first.server, adminToken, "STARTUP_GH", host.addToken({ repositories: "all", permission: "write" }))
      const other = await makeTeam({ url: first.server.url, adminToken }, "Other")
      await first.stop()

      const dir = directory({
        "github.yaml": githubFile("STARTUP_GH"),
        "webhooks/startup.yaml": "secretName: STARTUP_TOKEN\ndeliveryIdHeader: X-Delivery\n",
        "automations/on-startup.yaml": "prompt: Say hello.\ntrigger: {filter: {webhookNames: [startup]}}\n"
      })
      const applying = await started(dir)
      expect(applying.printed).toEqual([
        `Definitions: github.yaml: connected GitHub (${host.url}, token secret STARTUP_GH)`,
        expect.stringMatching(/^Definitions: webhooks\/startup\.yaml: created webhook "startup" \(\w{22}\)$/),
        expect.stringMatching(/^Definitions: automations\/on-startup\.yaml: created automation "on-startup" \(\S+\)$/)
      ])
      const applied = await list(applying.server, adminToken)
      const webhook = applied.webhooks.find((w) => w.name === "startup")!
      expect(webhook).toMatchObject({ auth_mode: "token", secret_name: "STARTUP_TOKEN", delivery_id_header: "X-Delivery" })
      expect(applied.automations.find((a) => a.name === "on-startup")!.trigger.filter.webhook_ids).toEqual([webhook.uid])
      const connection = (server: Pick<TestServer, "url">, token: string) =>
        call(server, "GET", "/api/v1/agent/github", { token }).then((r) => r.body)
      const connected = await connection(applying.server, adminToken)
      expect(connected.connection).toMatchObject({ base_url: host.url, auth: { type: "token", token_secret: "STARTUP_GH" } })
      // Not in the other team.
      expect(await list(applying.server, other.tokens.admin)).toEqual({ webhooks: [], automations: [] })
      expect((await connection(applying.server, other.tokens.admin)).connected).toBe(false)
      await applying.stop()

      // A file that is wrong (and one that would change what may not change), or no directory: the server does not start.
      const bad = directory({
        "webhooks/startup.yaml": "authMode: url_token\nsecretName: STARTUP_TOKEN\n",
        "webhooks/other.yaml": "authMode: basic\nsecretName: STARTUP_TOKEN\n"
      })
      const refused = await start(bad)
      expect(Exit.isFailure(refused.exit)).toBe(true)
      const message = Exit.isFailure(refused.exit) ? String(refused.exit.cause) : ""
      expect(message).toContain(`AGENT_RUNS_DEFINITIONS_DIR (${bad}): 2 errors in the definitions; nothing was applied:`)
      expect(message).toContain("webhooks/other.yaml: authMode: must be one of token, url_token, signature; got \"basic\"")
      expect(message).toContain("webhooks/startup.yaml: authMode: is url_token here but token on the server: cannot change")
      const nowhere = join(bad, "nowhere")
      const missing = await start(nowhere)
      expect(Exit.isFailure(missing.exit) ? String(missing.exit.cause) : "").toContain(
        `AGENT_RUNS_DEFINITIONS_DIR (${nowhere}): ${nowhere}: no such directory`
      )

      // A restart: nothing changes (nor did the refused start change anything).
      const again = await started(dir)
      expect(again.printed).toEqual([
        `Definitions: github.yaml: unchanged GitHub connection (${host.url}, token secret STARTUP_GH)`,
        expect.stringMatching(/^Definitions: webhooks\/startup\.yaml: unchanged webhook "startup"/),
        expect.stringMatching(/^Definitions: automations\/on-startup\.yaml: unchanged automation "on-startup"/)
      ])
      expect(await list(again.server, adminToken)).toEqual(applied)
      expect(await connection(again.server, adminToken)).toEqual(connected)
      await again.stop()
    } finally {
      await Effect.runPromise(Scope.close(store, Exit.void))
    }
  }, 120_000)
})

describe("the built server with AGENT_RUNS_DEFINITIONS_DIR", () => {
  it("does not start with a bad directory, and says which file and key (exit 1)", async () => {
    assertBuilt(inject("serverBuild"))
    const dataDir = temporaryDir("agent-runs-definitions-data-")
    const bad = directory({
      "webhooks/ci.yaml": "secretName: NO_SUCH_SECRET\n",
      "webhooks/other.yaml": "authMode: basic\nsecretName: NO_SUCH_SECRET\n"
    })
    // Started to its end, not polled for readiness: see docs/definitions.md on start-up failures.
    const refused = await runToEnd(MAIN, [], {
      PORT: String(await Effect.runPromise(freePort)),
      HOST: "127.0.0.1",
      AGENT_RUNS_DATA_DIR: dataDir,
      AGENT_RUNS_CONCURRENCY: "0",
      AGENT_RUNS_DEFINITIONS_DIR: bad
    })
    expect(refused.code).toBe(1)
    // The failure is on stderr (docs/reference/configuration.md, "When the server cannot start").
    expect(refused.stderr).toContain(`AGENT_RUNS_DEFINITIONS_DIR (${bad}): 2 errors in the definitions; nothing was applied:`)
    expect(refused.stderr).toContain(
      "webhooks/ci.yaml: secretName: no team secret named NO_SUCH_SECRET; put it with PUT /agent/secrets/NO_SUCH_SECRET first"
    )
    expect(refused.stderr).toContain("webhooks/other.yaml: authMode: must be one of token, url_token, signature; got \"basic\"")
    expect(refused.stdout + refused.stderr).not.toContain("Agent Runs is serving")
  }, 120_000)
})
