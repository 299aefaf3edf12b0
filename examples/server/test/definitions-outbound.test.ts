/**
 * Outbound webhooks as code, black-box (docs/definitions.md, docs/outbound-webhooks.md):
 * `agent-runs apply DIR` (the built CLI, spawned) against the bundled server in process on SQLite,
 * its outbound webhooks allowed to reach loopback. A file `outbound-webhooks/<name>.yaml` creates
 * the endpoint of that name, signing with the Standard Webhooks secret of the team secret it names
 * (a receiver checks the signature of a run's event with that value); applying again changes
 * nothing; an edited file patches what changed and, for a new `secretName`, rotates to that secret
 * with the old one signing beside it; wrong files are all reported, naming file and key, and
 * nothing is applied. The rules are unit-tested in packages/core/test/Definitions.test.ts.
 */
import { eventually, Receiver } from "@agent-runs/testing"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { cli, directory } from "./definitions-support.js"
import { call, makeTeam, suiteServer } from "./harness.js"
import { assertBuilt } from "./process.js"

const signingSecret = () => `whsec_${randomBytes(32).toString("base64")}`
const FIRST = signingSecret()
const SECOND = signingSecret()

const alerts = (url: string, extra: ReadonlyArray<string> = []) =>
  [`url: ${url}`, "events: [run.succeeded]", "description: Tell the alerts channel", "secretName: OUT_SIGNING", ...extra, ""].join("\n")

describe("agent-runs apply: outbound webhooks", () => {
  const server = suiteServer("sqlite", { outboundWebhooks: { allowedRanges: ["127.0.0.0/8"], dispatch: { everyMs: 50 } } }, {
    concurrency: 2
  })
  const known = { admin: "", member: "" }
  const asAdmin = () => ["--server", server().url, "--token", known.admin]
  const hooks = new Receiver()

  const putSecret = async (name: string, value: string) =>
    expect((await call(server(), "PUT", `/api/v1/agent/secrets/${name}`, { token: known.admin, body: { value } })).status).toBe(200)
  const endpoints = async () =>
    (await call(server(), "GET", "/api/v1/agent/outbound-webhooks", { token: known.admin })).body.outbound_webhooks as Array<
      Record<string, unknown>
    >
  /** Runs a prompt to success; the delivery of its `run.succeeded` as the receiver accepted it. */
  const succeeded = async () => {
    const created = await call(server(), "POST", "/api/v1/agent/runs", { token: known.member, body: { prompt: "@say hi", team: true } })
    expect(created.status).toBe(200)
    const mine = () => hooks.distinct().find((r) => r.body.data.run.run_id === created.body.run_id)
    expect(await eventually(() => mine() !== undefined)).toBe(true)
    return mine()!
  }

  beforeAll(async () => {
    await hooks.start()
    const team = await makeTeam(server(), "Outbound definitions")
    known.admin = team.tokens.admin
    known.member = team.tokens.member
    await putSecret("OUT_SIGNING", FIRST)
    await putSecret("OUT_SIGNING_2", SECOND)
    await putSecret("NOT_A_SIGNING_SECRET", "has spaces, not base64")
  }, 60_000)
  afterAll(() => hooks.kill())

  it("creates the endpoint of a file, signing with its team secret's value; applying again changes nothing", async () => {
    assertBuilt(inject("serverBuild"))
    const dir = directory({ "outbound-webhooks/alerts.yaml": alerts(hooks.url) })
    const run = await cli(["apply", dir, ...asAdmin()])
    expect(run).toMatchObject({ code: 0, stderr: "" })
    const [endpoint] = await endpoints()
    expect(endpoint).toMatchObject({
      name: "alerts",
      url: hooks.url,
      events: ["run.succeeded"],
      filters: {},
      description: "Tell the alerts channel",
      enabled: true,
      secret_name: "OUT_SIGNING"
    })
    expect(run.stdout.trim().split("\n")).toEqual([
      `outbound-webhooks/alerts.yaml: created outbound webhook "alerts" (${endpoint!["uid"]})`,
      "1 created, 0 updated, 0 unchanged"
    ])
    // Signed with the team secret's value, which no response showed.
    hooks.secrets = [FIRST]
    expect((await succeeded()).body.type).toBe("run.succeeded")
    expect(hooks.badSignatures).toBe(0)

    const again = await cli(["apply", dir, ...asAdmin()])
    expect(again.stdout.trim().split("\n")).toEqual([
      `outbound-webhooks/alerts.yaml: unchanged outbound webhook "alerts" (${endpoint!["uid"]})`,
      "0 created, 0 updated, 1 unchanged"
    ])
    expect(await endpoints()).toEqual([endpoint])
  }, 120_000)

  it("an edited file patches what changed and rotates to a new secretName, the old secret signing beside it", async () => {
    const [before] = await endpoints()
    const edited = alerts(hooks.url, ["enabled: true"])
      .replace("events: [run.succeeded]", "events: [run.failed, run.succeeded]")
      .replace("OUT_SIGNING", "OUT_SIGNING_2")
    const run = await cli(["apply", directory({ "outbound-webhooks/alerts.yaml": edited }), ...asAdmin()])
    expect(run).toMatchObject({ code: 0, stderr: "" })
    expect(run.stdout.trim().split("\n")).toEqual([
      `outbound-webhooks/alerts.yaml: updated outbound webhook "alerts" (${before!["uid"]}): events, secretName`,
      "0 created, 1 updated, 0 unchanged"
    ])
    const [after] = await endpoints()
    expect(after).toMatchObject({ uid: before!["uid"], events: ["run.failed", "run.succeeded"], secret_name: "OUT_SIGNING_2" })
    expect(after!["previous_secret_expires_at"]).not.toBeNull()
    // The new secret alone verifies; during the overlap the old one signs too.
    hooks.secrets = [SECOND]
    const delivery = await succeeded()
    expect(delivery.signatures).toHaveLength(2)
    expect(hooks.badSignatures).toBe(0)
  }, 120_000)

  it("reports every error of outbound webhook files, naming file and key, and applies nothing", async () => {
    const before = await endpoints()
    const run = await cli([
      "apply",
      directory({
        "outbound-webhooks/alerts.yaml": alerts(hooks.url).replace("OUT_SIGNING", "NOT_A_SIGNING_SECRET"),
        "outbound-webhooks/broken.yaml": "events: [run.exploded]\nfilters: { scheduleIds: nope, colour: red }\n",
        "outbound-webhooks/new.yaml": alerts(hooks.url).replace("OUT_SIGNING", "NO_SUCH_SECRET")
      }),
      ...asAdmin()
    ])
    expect(run.code).not.toBe(0)
    const lines = run.stderr.trim().split("\n")
    expect(lines[0]).toBe("7 errors in the definitions; nothing was applied:")
    expect(lines).toContain(
      "  outbound-webhooks/alerts.yaml: secretName: the value of team secret NOT_A_SIGNING_SECRET must be a Standard Webhooks secret: base64, optionally prefixed whsec_"
    )
    expect(lines).toContain("  outbound-webhooks/broken.yaml: url: is required")
    expect(lines).toContain(
      "  outbound-webhooks/broken.yaml: events[0]: must be one of run.created, run.state_changed, run.succeeded, run.failed, run.blocked, run.errored, run.cancelled; got \"run.exploded\""
    )
    expect(lines).toContain("  outbound-webhooks/broken.yaml: filters.scheduleIds: must be a list; got \"nope\"")
    expect(lines.some((l) => l.startsWith("  outbound-webhooks/broken.yaml: filters.colour: is not a known key"))).toBe(true)
    expect(lines.some((l) => l.startsWith("  outbound-webhooks/broken.yaml: secretName: is required"))).toBe(true)
    expect(lines.some((l) => l.startsWith("  outbound-webhooks/new.yaml: secretName: ") && l.includes("NO_SUCH_SECRET"))).toBe(true)
    expect(await endpoints()).toEqual(before)
  }, 120_000)
})
