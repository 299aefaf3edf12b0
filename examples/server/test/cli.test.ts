/**
 * The everyday API commands of the `agent-runs` command line, black-box: the bundled server
 * in-process (SQLite, process executor, the scripted agent) and the built CLI (`node
 * packages/cli/dist/main.js`) spawned against it, with `XDG_CONFIG_HOME` in a temporary directory.
 * `runs create` (the prompt as an option and on stdin), `runs watch` to each outcome (exit 0 with
 * the agent's message, 5 FAILED, 6 CANCELLED by `runs cancel`, 130 on Ctrl-C), `runs logs -f`
 * (also of a run that ends between its first reads: a proxy holds the timeline until the run is cancelled),
 * `runs list --json` (NDJSON) and as a table, `runs logs`, `runs get` of an unknown run (exit 1,
 * one line), a bad token (exit 4, `apply` too),
 * `login` and then commands without connection options (the profile): `webhooks deliveries`,
 * `schedules pause` and `list`, `runs followup` and `runs watch` of the continued run; `whoami` (the
 * principal, teams, the token's expiry and limits) and the one warning line of a token that expires
 * within 7 days, from the server's answer or from a profile's `expires_at`; `tokens create|list|revoke`
 * (a team admin's service-account token, limited to the team, shown once; a member refused).
 * CLI processes run in parallel where they can: each takes seconds on a loaded machine.
 */
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createServer, request as httpRequest } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { call, makeTeam, suiteServer } from "./harness.js"
import { assertBuilt, REPO_ROOT } from "./process.js"

/** The built CLI. */
const CLI = join(REPO_ROOT, "packages/cli/dist/main.js")

interface CliRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const configHome = mkdtempSync(join(tmpdir(), "agent-runs-cli-config-"))
afterAll(() => rmSync(configHome, { recursive: true, force: true }))

/**
 * Runs the built CLI to its end (asynchronously: the in-process server must keep answering), with
 * none of the caller's AGENT_RUNS_* variables and `XDG_CONFIG_HOME` in a temporary directory.
 */
const cli = (
  args: ReadonlyArray<string>,
  options: {
    readonly env?: Readonly<Record<string, string>>
    readonly stdin?: string
    /** Sends SIGINT once stderr satisfies this (as Ctrl-C would). */
    readonly interruptWhen?: (stderr: string) => boolean
  } = {}
): Promise<CliRun> =>
  new Promise((resolve, reject) => {
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AGENT_RUNS_")))
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: REPO_ROOT,
      env: { ...inherited, XDG_CONFIG_HOME: configHome, ...options.env }
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    let interrupted = false
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
      if (!interrupted && options.interruptWhen?.(stderr) === true) {
        interrupted = true
        child.kill("SIGINT")
      }
    })
    child.stdin.end(options.stdin ?? "")
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000)
    child.once("error", reject)
    child.once("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

/** The lines of a text, without the empty last one. */
const lines = (text: string) => text.split("\n").filter((line) => line !== "")

describe("agent-runs: the API commands", () => {
  const server = suiteServer("sqlite", {}, { concurrency: 4, cancelGraceSeconds: 1 })
  let admin = ""
  /** `--server URL --token TOKEN` of the team's admin. */
  const connection = () => ["--server", server().url, "--token", admin]

  beforeAll(async () => {
    admin = (await makeTeam(server(), "CLI")).tokens.admin
  }, 60_000)

  const runIds: Array<string> = []

  it("runs create, then runs watch exits with the run's outcome: 0 with the agent's messages, 5 FAILED, 6 CANCELLED", async () => {
    assertBuilt(inject("serverBuild"))
    const [hello, failing] = await Promise.all([
      cli(["runs", "create", "--prompt", "@say hello from the cli", "--title", "greeting", ...connection()]),
      cli(["runs", "create", "--prompt", "-", ...connection()], { stdin: "Break it\n@fail some_code it broke on purpose\n" })
    ])
    expect(hello).toMatchObject({ code: 0, stderr: "" })
    expect(failing).toMatchObject({ code: 0, stderr: "" })
    const helloId = hello.stdout.trim()
    const failingId = failing.stdout.trim()
    expect(helloId).toMatch(/^[0-9a-f-]{36}$/)
    const sleeping = await call(server(), "POST", "/api/v1/agent/runs", { token: admin, body: { prompt: "@sleep 60000" } })
    expect(sleeping.status).toBe(200)
    const sleepingId = sleeping.body.run_id as string
    runIds.push(helloId, failingId, sleepingId)

    const watch = (id: string) => cli(["runs", "watch", id, ...connection()])
    const watches = Promise.all([watch(helloId), watch(failingId), watch(sleepingId)])
    const followedLogs = cli(["runs", "logs", sleepingId, "-f", ...connection()])
    // Ctrl-C while the run runs: not a success.
    const interrupted = cli(["runs", "watch", sleepingId, ...connection()], {
      interruptWhen: (stderr) => stderr.includes("run_in_progress")
    })
    // Cancel the sleeping run once it runs.
    for (let i = 0; i < 200; i++) {
      const run = await call(server(), "GET", `/api/v1/agent/runs/${sleepingId}`, { token: admin })
      if (run.body.state === "INPROGRESS") break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const cancel = await cli(["runs", "cancel", sleepingId, ...connection()])
    expect(cancel).toMatchObject({ code: 0, stdout: `cancelled ${sleepingId}\n`, stderr: "" })
    const [watchedHello, watchedFailing, watchedSleeping] = await watches

    expect(watchedHello.code).toBe(0)
    expect(watchedHello.stdout).toBe("hello from the cli\n")
    // The progress lines (not a terminal: one per event) name the run, its state and the event.
    expect(watchedHello.stderr).toContain(`${helloId} SUCCEEDED`)
    expect(watchedHello.stderr).toContain("run_succeeded")

    expect(watchedFailing.code).toBe(5)
    expect(lines(watchedFailing.stderr).at(-1)).toBe(`agent-runs: run ${failingId} FAILED: agent_failed: it broke on purpose`)

    expect(watchedSleeping.code).toBe(6)
    expect(lines(watchedSleeping.stderr).at(-1)).toMatch(new RegExp(`^agent-runs: run ${sleepingId} CANCELLED`))
    expect((await interrupted).code).toBe(130)
    // logs -f follows the timeline until the run ends.
    const followed = await followedLogs
    expect(followed.code).toBe(0)
    expect(followed.stdout).toMatch(/^\[[^\]]+\] run_in_progress/m)
    expect(followed.stdout).toMatch(/^\[[^\]]+\] run_cancelled/m)
  }, 120_000)

  it("runs logs -f prints a run's last events when the run ends between its first reads", async () => {
    assertBuilt(inject("serverBuild"))
    const sleeping = await call(server(), "POST", "/api/v1/agent/runs", { token: admin, body: { prompt: "@sleep 60000" } })
    expect(sleeping.status).toBe(200)
    const runId = sleeping.body.run_id as string
    runIds.push(runId)
    const stateOf = async () => (await call(server(), "GET", `/api/v1/agent/runs/${runId}`, { token: admin })).body.state
    for (let i = 0; i < 200 && (await stateOf()) !== "INPROGRESS"; i++) await new Promise((resolve) => setTimeout(resolve, 100))
    expect(await stateOf()).toBe("INPROGRESS")
    // A proxy in front of the server: the first read of the run's timeline is answered as it was,
    // but only after the run has been cancelled, so the CLI's next reads see a run that has ended.
    const target = new URL(server().url)
    let timelineReads = 0
    const proxy = createServer((incoming, outgoing) => {
      const forward = httpRequest(
        { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
        async (answer) => {
          if (incoming.url?.endsWith(`/agent/runs/${runId}/timeline`) === true && timelineReads++ === 0) {
            const chunks: Array<Buffer> = []
            for await (const chunk of answer) chunks.push(chunk as Buffer)
            await call(server(), "POST", `/api/v1/agent/runs/${runId}/cancel`, { token: admin })
            for (let i = 0; i < 200 && (await stateOf()) !== "CANCELLED"; i++) await new Promise((resolve) => setTimeout(resolve, 50))
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(chunks))
            return
          }
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(outgoing)
        }
      )
      forward.on("error", () => outgoing.destroy())
      incoming.pipe(forward)
    })
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
    try {
      const viaProxy = ["--server", `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, "--token", admin]
      const followed = await cli(["runs", "logs", runId, "-f", ...viaProxy])
      expect(timelineReads).toBe(1)
      expect(followed.code).toBe(0)
      expect(followed.stdout).toMatch(/^\[[^\]]+\] run_in_progress/m)
      expect(followed.stdout).toMatch(/^\[[^\]]+\] run_cancelled/m)
    } finally {
      proxy.closeAllConnections()
      await new Promise((resolve) => proxy.close(resolve))
    }
  }, 120_000)

  it("runs list --json is NDJSON, runs logs prints the conversation, an unknown run exits 1, a bad token 4", async () => {
    assertBuilt(inject("serverBuild"))
    const [helloId] = runIds
    const unknown = "01890a5d-ac96-774b-bcce-b302099a8057"
    const definitions = mkdtempSync(join(tmpdir(), "agent-runs-cli-definitions-"))
    mkdirSync(join(definitions, "webhooks"))
    const [list, table, onePage, logs, missing, badToken, badApply] = await Promise.all([
      cli(["runs", "list", "--json", "--limit", "10", ...connection()]),
      cli(["runs", "list", "--state", "SUCCEEDED", "--state", "FAILED", ...connection()]),
      cli(["runs", "list", "--limit", "1", ...connection()]),
      cli(["runs", "logs", helloId!, ...connection()]),
      cli(["runs", "get", unknown, ...connection()]),
      cli(["runs", "list", "--server", server().url, "--token", "ar_not-a-valid-token"]),
      cli(["apply", definitions, "--server", server().url, "--token", "ar_not-a-valid-token"])
    ])
    rmSync(definitions, { recursive: true, force: true })
    expect(list).toMatchObject({ code: 0, stderr: "" })
    const listed = lines(list.stdout).map((line) => JSON.parse(line) as { run_id: string; state: string })
    expect(listed.map((run) => run.run_id).sort()).toEqual([...runIds].sort())
    expect(listed.find((run) => run.run_id === helloId)?.state).toBe("SUCCEEDED")

    expect(table.code).toBe(0)
    const rows = lines(table.stdout)
    expect(rows[0]).toMatch(/^RUN ID\s+STATE\s+CREATED\s+TITLE$/)
    expect(rows).toHaveLength(3)
    expect(rows.some((row) => row.startsWith(helloId!) && row.includes("SUCCEEDED") && row.endsWith("greeting"))).toBe(true)

    expect(onePage.code).toBe(0)
    expect(lines(onePage.stdout)).toHaveLength(2)
    expect(onePage.stderr).toBe("(more runs: --all, or a larger --limit)\n")

    expect(logs.code).toBe(0)
    expect(logs.stdout).toContain("run_in_progress")
    expect(logs.stdout).toContain("run_succeeded")
    expect(logs.stdout).toContain("assistant: hello from the cli")

    expect(missing.code).toBe(1)
    expect(missing.stdout).toBe("")
    expect(lines(missing.stderr)).toHaveLength(1)
    expect(missing.stderr).toMatch(/^agent-runs: .*not found/)

    expect(badToken.code).toBe(4)
    expect(lines(badToken.stderr)).toHaveLength(1)
    expect(badToken.stderr).toMatch(/^agent-runs: /)
    expect(badApply.code).toBe(4)
  }, 120_000)

  it("audit export writes the team's log as JSON lines, oldest first; audit list is a table; a member is refused (4)", async () => {
    assertBuilt(inject("serverBuild"))
    const member = (await makeTeam(server(), "CLI audit")).tokens.member
    expect((await call(server(), "POST", "/api/v1/agent/runs", { token: admin, body: { prompt: "audited" } })).status).toBe(200)
    const [exported, filtered, table, refused] = await Promise.all([
      cli(["audit", "export", ...connection()]),
      cli(["audit", "export", "--action", "run.create", ...connection()]),
      cli(["audit", "list", "--limit", "1", ...connection()]),
      cli(["audit", "export", "--server", server().url, "--token", member])
    ])
    expect(exported).toMatchObject({ code: 0, stderr: "" })
    const entries = lines(exported.stdout).map((line) => JSON.parse(line) as { id: string; action: string })
    expect(entries.length).toBeGreaterThan(0)
    expect(entries.map((e) => e.id)).toEqual(entries.map((e) => e.id).sort())
    expect(entries.map((e) => e.action)).toContain("run.create")
    expect(filtered.code).toBe(0)
    expect(new Set(lines(filtered.stdout).map((line) => (JSON.parse(line) as { action: string }).action))).toEqual(new Set(["run.create"]))
    expect(table.code).toBe(0)
    expect(lines(table.stdout)[0]).toMatch(/^AT\s+ACTOR\s+ACTION\s+RESOURCE\s+OUTCOME\s+FROM$/)
    expect(lines(table.stdout)).toHaveLength(2)
    expect(refused.code).toBe(4)
    expect(refused.stderr).toBe("agent-runs: only team admins read the team's audit log\n")
  }, 120_000)

  it("whoami says who the token is and its limits; a token expiring within 7 days gets one warning line, from the server or the profile", async () => {
    assertBuilt(inject("serverBuild"))
    const team = await makeTeam(server(), "CLI whoami")
    const soon = new Date(Date.now() + 3 * 86_400_000).toISOString()
    const shown = soon.replace(/\.\d{3}Z$/, "Z")
    const limited = await call(server(), "POST", `/api/v1/admin/principals/${team.principals.member}/tokens`, {
      token: server().adminToken,
      body: { name: "ci", expires_at: soon, team_uid: team.uid, max_role: "viewer" }
    })
    expect(limited.status).toBe(201)
    const token = limited.body.token as string
    // Profiles of their own: the limited token expiring soon, and the admin's said to have expired.
    const home = mkdtempSync(join(tmpdir(), "agent-runs-cli-expiry-"))
    mkdirSync(join(home, "agent-runs"))
    writeFileSync(join(home, "agent-runs", "profiles.json"), JSON.stringify({
      profiles: {
        default: { server: server().url, token, expires_at: soon },
        past: { server: server().url, token: team.tokens.admin, expires_at: "2020-01-01T00:00:00.000Z" }
      }
    }))
    const inHome = { env: { XDG_CONFIG_HOME: home } }
    const [admins, flagged, json, profiled, listed, past] = await Promise.all([
      cli(["whoami", "--server", server().url, "--token", team.tokens.admin]),
      cli(["whoami", "--server", server().url, "--token", token]),
      cli(["whoami", "--json", "--server", server().url, "--token", token]),
      cli(["whoami"], inHome),
      cli(["runs", "list", "--limit", "1"], inHome),
      cli(["runs", "list", "--limit", "1"], { env: { XDG_CONFIG_HOME: home, AGENT_RUNS_PROFILE: "past" } })
    ])
    rmSync(home, { recursive: true, force: true })

    expect(admins).toMatchObject({ code: 0, stderr: "" })
    expect(admins.stdout).toMatch(new RegExp(`^principal: +CLI whoami admin \\(user ${team.principals.admin}\\)$`, "m"))
    expect(admins.stdout).toMatch(/^instance administrator: +no$/m)
    expect(admins.stdout).toMatch(/^expires: +never$/m)
    expect(admins.stdout).toMatch(/^limited to team: +no$/m)
    expect(admins.stdout).toMatch(new RegExp(`^${team.uid} +CLI whoami +admin +yes$`, "m"))

    expect(flagged.code).toBe(0)
    expect(flagged.stdout).toMatch(/^token: +ci \(\w{22}\)$/m)
    expect(flagged.stdout).toMatch(new RegExp(`^expires: +${shown}$`, "m"))
    expect(flagged.stdout).toMatch(new RegExp(`^limited to team: +CLI whoami \\(${team.uid}\\)$`, "m"))
    expect(flagged.stdout).toMatch(/^max role: +viewer$/m)
    expect(flagged.stderr).toBe(`warning: this token expires on ${shown}; ask for a new one\n`)
    expect(JSON.parse(json.stdout)).toMatchObject({
      principal: { uid: team.principals.member },
      token: { name: "ci", expires_at: soon, team_uid: team.uid, max_role: "viewer" }
    })

    // From the profile: one line, the server's expiry, naming the profile.
    expect(profiled.code).toBe(0)
    expect(profiled.stderr).toBe(`warning: the token of profile "default" expires on ${shown}; run agent-runs login again\n`)
    // Any other command warns from the profile's expires_at, and goes on.
    expect(listed.code).toBe(0)
    expect(lines(listed.stderr)).toContain(`warning: the token of profile "default" expires on ${shown}; run agent-runs login again`)
    expect(past.code).toBe(0)
    expect(lines(past.stderr)).toContain(`warning: the token of profile "past" expired on 2020-01-01T00:00:00Z; run agent-runs login again`)
  }, 120_000)

  it("tokens create|list|revoke: a service account's token limited to the team, shown once; a bad time is a usage error, a member is refused", async () => {
    assertBuilt(inject("serverBuild"))
    const team = await makeTeam(server(), "CLI tokens")
    const account = await call(server(), "POST", "/api/v1/agent/team/service-accounts", {
      token: team.tokens.admin,
      body: { display_name: "ci bot", role: "member" }
    })
    expect(account.status).toBe(201)
    const uid = account.body.uid as string
    const asAdmin = ["--server", server().url, "--token", team.tokens.admin]
    const later = new Date(Date.now() + 30 * 86_400_000).toISOString()
    const [created, badTime, refused] = await Promise.all([
      cli(["tokens", "create", uid, "--name", "ci", "--expires-at", later, "--max-role", "viewer", ...asAdmin]),
      cli(["tokens", "create", uid, "--expires-at", "tomorrow", ...asAdmin]),
      cli(["tokens", "list", uid, "--server", server().url, "--token", team.tokens.member])
    ])
    expect(created.code).toBe(0)
    const token = created.stdout.trim()
    expect(token).toMatch(/^ar_[\w-]{43}$/)
    const tokenId = /^created token (\w{22}), limited to the team; it is not shown again$/m.exec(created.stderr)?.[1]
    expect(tokenId).toBeDefined()
    const me = await call(server(), "GET", "/api/v1/agent/me", { token })
    expect(me.body.token).toEqual({ token_id: tokenId, name: "ci", expires_at: later, team_uid: team.uid, max_role: "viewer" })
    expect(badTime.code).toBe(2)
    expect(badTime.stderr).toContain("invalid --expires-at \"tomorrow\"")
    expect(refused.code).toBe(4)

    const listed = await cli(["tokens", "list", uid, ...asAdmin])
    expect(listed).toMatchObject({ code: 0, stderr: "" })
    expect(lines(listed.stdout)[0]).toMatch(/^TOKEN ID\s+NAME\s+CREATED\s+EXPIRES\s+LAST USED\s+MAX ROLE\s+REVOKED$/)
    expect(lines(listed.stdout)[1]).toMatch(new RegExp(`^${tokenId} +ci +\\S+ +${later.replace(/\.\d{3}Z$/, "Z")} +\\S+ +viewer$`))
    const revoked = await cli(["tokens", "revoke", tokenId!, ...asAdmin])
    expect(revoked).toMatchObject({ code: 0, stdout: `revoked ${tokenId}\n` })
    expect((await call(server(), "GET", "/api/v1/agent/me", { token })).status).toBe(401)
    const after = await cli(["tokens", "list", uid, "--json", ...asAdmin])
    expect(JSON.parse(lines(after.stdout)[0]!)).toMatchObject({ token_id: tokenId, revoked_at: expect.any(String) })
  }, 120_000)

  it("login checks the token and saves a profile that commands without connection options use", async () => {
    assertBuilt(inject("serverBuild"))
    const [helloId] = runIds
    const hook = await call(server(), "POST", "/api/v1/agent/webhooks", { token: admin, body: { name: "cli hook" } })
    expect(hook.status).toBe(201)
    const schedule = await call(server(), "POST", "/api/v1/agent/schedules", {
      token: admin,
      body: { name: "yearly", cron_schedule: "0 0 1 1 *", prompt: "@say happy new year", enabled: true }
    })
    expect(schedule.status).toBe(201)
    const delivered = await fetch(hook.body.ingress_url, {
      method: "POST",
      headers: { authorization: `Bearer ${hook.body.secret}`, "content-type": "application/json" },
      body: JSON.stringify({ hello: "cli" })
    })
    expect(delivered.status).toBe(202)

    const [refused, login, paused, followup] = await Promise.all([
      cli(["login", "--server", server().url, "--token", "ar_not-a-valid-token", "--profile", "refused"]),
      cli(["login", ...connection()]),
      cli(["schedules", "pause", schedule.body.id, ...connection()]),
      cli(["runs", "followup", helloId!, "--message", "@say hello again", ...connection()])
    ])
    expect(paused).toMatchObject({ code: 0, stdout: `paused ${schedule.body.id} (yearly)\n` })
    expect(followup.code).toBe(0)
    expect(followup.stdout).toMatch(new RegExp(`^follow-up sent to ${helloId}`))
    expect(refused.code).toBe(4)
    expect(login).toMatchObject({ code: 0, stderr: "" })
    expect(login.stdout).not.toContain(admin)
    const file = join(configHome, "agent-runs", "profiles.json")
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ profiles: { default: { server: server().url, token: admin } } })

    const [get, deliveries, schedules, scheduleText, watchAgain, otherProfile] = await Promise.all([
      cli(["runs", "get", helloId!, "--json"]),
      cli(["webhooks", "deliveries", hook.body.uid, "--json"]),
      cli(["schedules", "list", "--json"]),
      cli(["schedules", "get", schedule.body.id]),
      // The follow-up continued the ended run: watch follows the new execution to its end.
      cli(["runs", "watch", helloId!]),
      cli(["runs", "get", helloId!], { env: { AGENT_RUNS_PROFILE: "missing" } })
    ])
    expect(get).toMatchObject({ code: 0, stderr: "" })
    expect(JSON.parse(get.stdout)).toMatchObject({ run_id: helloId, title: "greeting" })
    expect(schedules).toMatchObject({ code: 0, stderr: "" })
    expect(lines(schedules.stdout).map((line) => JSON.parse(line))).toMatchObject([
      { id: schedule.body.id, name: "yearly", enabled: false }
    ])
    expect(scheduleText.code).toBe(0)
    expect(scheduleText.stdout).toMatch(/^schedule: +\w{22}\nname: +yearly\ncron: +0 0 1 1 \* \(UTC\)\nenabled: +false\n/)
    expect(scheduleText.stdout.trimEnd().endsWith("@say happy new year")).toBe(true)
    expect(watchAgain.code).toBe(0)
    expect(watchAgain.stdout).toBe("hello from the cli\nhello again\n")
    expect(deliveries).toMatchObject({ code: 0, stderr: "" })
    const logged = lines(deliveries.stdout).map((line) => JSON.parse(line) as { outcome: string; payload?: unknown })
    expect(logged).toHaveLength(1)
    expect(logged[0]).toMatchObject({ outcome: "ACCEPTED", payload: { hello: "cli" } })
    // A profile that does not exist leaves the options missing: a usage error.
    expect(otherProfile.code).toBe(2)
  }, 120_000)
})
