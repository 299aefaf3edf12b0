/**
 * `agent-runs outbound-webhooks` against the server on SQLite with the scripted agent and a receiver
 * on loopback (docs/outbound-webhooks.md): create prints the uid and the secret once; a run's events
 * arrive signed with it; list and deliveries show them (a table, and NDJSON with --json); redeliver
 * sends one again under the same id, and --since the failed ones; a member is refused; bad input is
 * a usage error (exit 2) before anything is sent.
 */
import { eventually, Receiver } from "@agent-runs/testing"
import { afterAll, describe, expect, it } from "vitest"
import { inProcess } from "./cliInProcess.js"
import { call, makeTeam, suiteServer, waitForRun } from "./harness.js"

const lines = (text: string) => text.split("\n").filter((line) => line !== "")

describe("agent-runs outbound-webhooks", () => {
  const server = suiteServer("sqlite", { outboundWebhooks: { allowedRanges: ["127.0.0.0/8"], dispatch: { everyMs: 50 } } }, { concurrency: 2 })
  const receiver = new Receiver()
  afterAll(() => receiver.kill())

  it("creates an endpoint, lists it and its deliveries, and redelivers; refuses members and bad input", async () => {
    await receiver.start()
    const { tokens } = await makeTeam(server(), "cli-outbound")
    const as = (token: string) => ["--server", server().url, "--token", token]

    const created = await inProcess(["outbound-webhooks", "create", "--url", receiver.url, "--event", "run.created", "--event", "run.succeeded", ...as(tokens.admin)])
    expect(created).toMatchObject({ code: 0, stderr: "" })
    const [uid, secretLine] = lines(created.stdout)
    expect(uid).toMatch(/^[A-Za-z0-9]{22}$/)
    receiver.secrets = [/^secret: (whsec_\S+) \(shown this once\)$/.exec(secretLine!)![1]!]

    const run = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "@say hi", team: true } })
    await waitForRun(server(), tokens.member, run.body.run_id)
    expect(await eventually(() => receiver.distinct().length === 2)).toBe(true)
    expect(receiver.badSignatures).toBe(0)

    const [list, table, json] = await Promise.all([
      inProcess(["outbound-webhooks", "list", ...as(tokens.admin)]),
      inProcess(["outbound-webhooks", "deliveries", uid!, "--state", "delivered", ...as(tokens.admin)]),
      inProcess(["outbound-webhooks", "deliveries", uid!, "--json", ...as(tokens.admin)])
    ])
    expect(list.code).toBe(0)
    expect(list.stdout).toMatch(new RegExp(`${uid} +- +on +run.created,run.succeeded +${receiver.url.replace(/[.]/g, "\\.")}`))
    expect(table.code).toBe(0)
    expect(lines(table.stdout)).toHaveLength(3)
    expect(table.stdout).toContain("run.succeeded")
    const logged = lines(json.stdout).map((line) => JSON.parse(line) as { delivery_id: string; event_type: string; state: string })
    expect(logged.map((d) => [d.event_type, d.state])).toEqual([["run.succeeded", "delivered"], ["run.created", "delivered"]])

    const again = await inProcess(["outbound-webhooks", "redeliver", uid!, logged[1]!.delivery_id, ...as(tokens.admin)])
    expect(again).toMatchObject({ code: 0, stdout: `queued ${logged[1]!.delivery_id} again\n` })
    expect(await eventually(() => receiver.accepted.filter((r) => r.id === logged[1]!.delivery_id).length === 2)).toBe(true)
    const since = await inProcess(["outbound-webhooks", "redeliver", uid!, "--since", "2020-01-01T00:00:00Z", ...as(tokens.admin)])
    expect(since).toMatchObject({ code: 0, stdout: "queued 0 failed deliveries again\n" })

    const refused = await inProcess(["outbound-webhooks", "list", ...as(tokens.member)])
    expect(refused.code).toBe(4)
    expect(refused.stderr).toMatch(/^agent-runs: .*only team admins/)
    for (const bad of [
      ["outbound-webhooks", "create", "--url", "ftp://example.com/", "--event", "run.created"],
      ["outbound-webhooks", "create", "--url", receiver.url],
      ["outbound-webhooks", "deliveries", "nope"],
      ["outbound-webhooks", "redeliver", uid!],
      ["outbound-webhooks", "redeliver", uid!, "--since", "yesterday"]
    ]) {
      const answer = await inProcess([...bad, ...as(tokens.admin)])
      expect(answer.code).toBe(2)
      expect(lines(answer.stderr)).toHaveLength(1)
    }

    // Named, signing with a team secret: the secret is never printed.
    const value = `whsec_${Buffer.from("a".repeat(32)).toString("base64")}`
    expect((await call(server(), "PUT", "/api/v1/agent/secrets/OUT_SIGNING", { token: tokens.admin, body: { value } })).status).toBe(200)
    const named = await inProcess([
      "outbound-webhooks", "create", "--url", receiver.url, "--event", "run.failed", "--name", "pager", "--secret-name", "OUT_SIGNING",
      ...as(tokens.admin)
    ])
    expect(named).toMatchObject({ code: 0, stderr: "" })
    expect(lines(named.stdout)[1]).toBe("signing with team secret OUT_SIGNING")
    expect((await inProcess(["outbound-webhooks", "list", ...as(tokens.admin)])).stdout).toMatch(/ pager +on +run\.failed /)
  }, 60_000)
})
