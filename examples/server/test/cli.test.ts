/**
 * The everyday API commands of the `agent-runs` command line against the bundled server in-process
 * (SQLite, process executor, the scripted agent), with `XDG_CONFIG_HOME` in a temporary directory.
 *
 * The built CLI (`node packages/cli/dist/main.js`) is spawned for what the process does: reading
 * stdin (`runs create --prompt -`), exit codes (`runs watch`: 5 naming why a run FAILED, 6 for a run
 * followed live until `runs cancel` ends it, 130 on Ctrl-C; 4 for a refused token or request, 1 for
 * an error; one line on stderr), output streamed to stdout (`audit export`, `runs logs -f` of a run
 * that ends between its first reads: a proxy holds the timeline until the run is cancelled), the
 * profile `login` saves (mode 0600) and the commands without connection options use, and the one
 * warning line of a token that expires within 7 days, from the server's answer (`whoami`) or from a
 * profile's `expires_at`.
 *
 * What the other commands print runs in process (`Cli.main`, as main.ts runs it, into a console of
 * the test's, against the same server), since each spawn costs seconds of CPU: `runs cancel`,
 * `runs list` (NDJSON; a table filtered by state, one page with a hint), `audit list`, `whoami`
 * (the token's expiry and limits), `tokens create|revoke|list` (a team admin's service-account
 * token, limited to the team, shown once), `schedules pause|run|list|get`, `runs followup`, `webhooks
 * deliveries`, `budgets set|show` and `spend`. Rules without a server are tested in packages/cli/test: the exit code of each final
 * state (Runs.test.ts), whoami's text (Whoami.test.ts), usage errors (Usage.test.ts), profiles and
 * their expiry (Profiles.test.ts, TokenExpiry.test.ts), the exit code and line of each failure
 * (Failure.test.ts).
 */
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createServer, request as httpRequest } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { call, makeTeam, suiteServer, waitForRun } from "./harness.js"
import { type CliRun, inProcess } from "./cliInProcess.js"
import { assertBuilt, REPO_ROOT } from "./process.js"

/** The built CLI. */
const CLI = join(REPO_ROOT, "packages/cli/dist/main.js")

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
    /** Called with everything on stderr so far, on each new chunk. */
    readonly onStderr?: (stderr: string) => void
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
      options.onStderr?.(stderr)
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

// The commands run in process read the profiles where the spawned ones do.
const savedConfigHome = process.env["XDG_CONFIG_HOME"]
beforeAll(() => {
  process.env["XDG_CONFIG_HOME"] = configHome
})
afterAll(() => {
  if (savedConfigHome === undefined) delete process.env["XDG_CONFIG_HOME"]
  else process.env["XDG_CONFIG_HOME"] = savedConfigHome
})

/** The lines of a text, without the empty last one. */
const lines = (text: string) => text.split("\n").filter((line) => line !== "")

/** A promise and the function that resolves it. */
const signal = () => {
  let resolve: () => void = () => undefined
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

describe("agent-runs: the API commands", () => {
  const server = suiteServer("sqlite", {}, { concurrency: 4, cancelGraceSeconds: 1 })
  let admin = ""
  /** `--server URL --token TOKEN` of the team's admin. */
  const connection = () => ["--server", server().url, "--token", admin]

  beforeAll(async () => {
    admin = (await makeTeam(server(), "CLI")).tokens.admin
  }, 60_000)

  /** The team's runs, oldest first: one that fails, one with the title "greeting" that says hello, one cancelled. */
  const runs = { failing: "", hello: "", sleeping: "" }

  it("runs create reads the prompt on stdin and prints the run's id; runs watch of a FAILED run exits 5 naming why", async () => {
    assertBuilt(inject("serverBuild"))
    const failing = await call(server(), "POST", "/api/v1/agent/runs", {
      token: admin,
      body: { prompt: "Break it\n@fail some_code it broke on purpose\n" }
    })
    expect(failing.status).toBe(200)
    runs.failing = failing.body.run_id
    const [created, watched] = await Promise.all([
      cli(["runs", "create", "--prompt", "-", "--title", "greeting", ...connection()], { stdin: "@say hello from the cli\n" }),
      cli(["runs", "watch", runs.failing, ...connection()])
    ])
    expect(created).toMatchObject({ code: 0, stderr: "" })
    runs.hello = created.stdout.trim()
    expect(runs.hello).toMatch(/^[0-9a-f-]{36}$/)
    const hello = (await call(server(), "GET", `/api/v1/agent/runs/${runs.hello}`, { token: admin })).body
    expect(hello.title).toBe("greeting")
    expect(hello.prompt.trim()).toBe("@say hello from the cli")

    expect(watched.code).toBe(5)
    // The progress lines (not a terminal: one per event) name the run, its state and the event.
    expect(watched.stderr).toMatch(new RegExp(`^${runs.failing} FAILED \\S+ run_failed`, "m"))
    expect(lines(watched.stderr).at(-1)).toBe(`agent-runs: run ${runs.failing} FAILED: agent_failed: it broke on purpose`)
  }, 120_000)

  it("runs watch follows a run until runs cancel ends it (6), exits 130 on Ctrl-C; runs logs -f prints the last events of a run that ends between its first reads", async () => {
    assertBuilt(inject("serverBuild"))
    const sleeping = await call(server(), "POST", "/api/v1/agent/runs", {
      token: admin,
      body: { prompt: "@say going to sleep\n@sleep 3600000" }
    })
    expect(sleeping.status).toBe(200)
    const runId = (runs.sleeping = sleeping.body.run_id as string)
    expect((await waitForRun(server(), admin, runId, (run) => run.state === "INPROGRESS")).state).toBe("INPROGRESS")

    // A proxy in front of the server for `logs -f`: the first read of the run's timeline is answered
    // as it was, but only once the run has been cancelled, so the CLI's next reads see a run that has ended.
    const target = new URL(server().url)
    let timelineReads = 0
    const held = signal()
    const cancelled = signal()
    const proxy = createServer((incoming, outgoing) => {
      const forward = httpRequest(
        { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
        async (answer) => {
          if (incoming.url?.endsWith(`/agent/runs/${runId}/timeline`) === true && timelineReads++ === 0) {
            const chunks: Array<Buffer> = []
            for await (const chunk of answer) chunks.push(chunk as Buffer)
            held.resolve()
            await cancelled.promise
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
      const following = signal()
      const watched = cli(["runs", "watch", runId, ...connection()], {
        onStderr: (stderr) => stderr.includes("run_in_progress") && following.resolve()
      })
      // Ctrl-C while the run runs: not a success.
      const interrupted = cli(["runs", "watch", runId, ...connection()], {
        interruptWhen: (stderr) => stderr.includes("run_in_progress")
      })
      const followed = cli(["runs", "logs", runId, "-f", ...viaProxy])
      // Both follow the run (or one ended early: the expectations below say how).
      await Promise.race([Promise.all([held.promise, following.promise]), watched, followed])
      expect((await interrupted).code).toBe(130)

      const cancel = await inProcess(["runs", "cancel", runId, ...connection()])
      expect(cancel).toMatchObject({ code: 0, stdout: `cancelled ${runId}\n`, stderr: "" })
      expect((await waitForRun(server(), admin, runId)).state).toBe("CANCELLED")
      cancelled.resolve()

      const [watchedToEnd, logs] = await Promise.all([watched, followed])
      expect(watchedToEnd.code).toBe(6)
      expect(watchedToEnd.stdout).toBe("going to sleep\n")
      expect(watchedToEnd.stderr).toMatch(new RegExp(`^${runId} CANCELLED \\S+ run_cancelled`, "m"))
      expect(lines(watchedToEnd.stderr).at(-1)).toMatch(new RegExp(`^agent-runs: run ${runId} CANCELLED`))

      expect(timelineReads).toBe(1)
      expect(logs.code).toBe(0)
      expect(logs.stdout).toMatch(/^\[[^\]]+\] run_in_progress/m)
      expect(logs.stdout).toMatch(/^\[[^\]]+\] run_cancelled/m)
      expect(logs.stdout).toMatch(/^assistant: going to sleep$/m)
    } finally {
      cancelled.resolve()
      proxy.closeAllConnections()
      await new Promise((resolve) => proxy.close(resolve))
    }
  }, 120_000)

  it("runs list --json is NDJSON; runs list is a table, filtered by state, one page with a hint on stderr", async () => {
    assertBuilt(inject("serverBuild"))
    expect((await waitForRun(server(), admin, runs.hello)).state).toBe("SUCCEEDED")
    const list = await inProcess(["runs", "list", "--json", "--limit", "10", ...connection()])
    // Two runs are SUCCEEDED or FAILED: the newest of them, and a hint that there are more.
    const table = await inProcess(["runs", "list", "--state", "SUCCEEDED", "--state", "FAILED", "--limit", "1", ...connection()])
    expect(list).toMatchObject({ code: 0, stderr: "" })
    const listed = lines(list.stdout).map((line) => JSON.parse(line) as { run_id: string; state: string })
    expect(listed.map((run) => [run.run_id, run.state])).toEqual([
      [runs.sleeping, "CANCELLED"],
      [runs.hello, "SUCCEEDED"],
      [runs.failing, "FAILED"]
    ])

    expect(table.code).toBe(0)
    const rows = lines(table.stdout)
    expect(rows).toHaveLength(2)
    expect(rows[0]).toMatch(/^RUN ID\s+STATE\s+CREATED\s+TITLE$/)
    expect(rows[1]).toMatch(new RegExp(`^${runs.hello} +SUCCEEDED +\\S+Z +greeting$`))
    expect(table.stderr).toBe("(more runs: --all, or a larger --limit)\n")
  }, 120_000)

  it("audit export writes the team's log as JSON lines, oldest first; audit list is a table; a member is refused (4)", async () => {
    assertBuilt(inject("serverBuild"))
    const member = (await makeTeam(server(), "CLI audit")).tokens.member
    const [exported, refused, table] = await Promise.all([
      cli(["audit", "export", "--action", "run.create", ...connection()]),
      cli(["audit", "export", "--server", server().url, "--token", member]),
      inProcess(["audit", "list", "--limit", "1", ...connection()])
    ])
    expect(exported).toMatchObject({ code: 0, stderr: "" })
    const entries = lines(exported.stdout).map((line) => JSON.parse(line) as { id: string; action: string; resource: { id: string } })
    // The three runs created, oldest first, and nothing but run.create.
    expect(entries.map((e) => e.resource.id)).toEqual([runs.failing, runs.hello, runs.sleeping])
    expect(entries.map((e) => e.id)).toEqual(entries.map((e) => e.id).sort())
    expect(new Set(entries.map((e) => e.action))).toEqual(new Set(["run.create"]))
    expect(table.code).toBe(0)
    expect(lines(table.stdout)[0]).toMatch(/^AT\s+ACTOR\s+ACTION\s+RESOURCE\s+OUTCOME\s+FROM$/)
    expect(lines(table.stdout)).toHaveLength(2)
    expect(refused.code).toBe(4)
    expect(refused.stderr).toBe("agent-runs: only team admins read the team's audit log\n")
  }, 120_000)

  it("budgets set|show and spend: a team admin sets the team's budgets; anyone in it reads them and the spend by day", async () => {
    const team = await makeTeam(server(), "CLI budgets")
    const as = (token: string) => ["--server", server().url, "--token", token]
    const set = await inProcess(["budgets", "set", "--default-max-cost-usd", "2", "--max-cost-usd", "5", "--max-turns", "40", ...as(team.tokens.admin)])
    expect(set.code).toBe(0)
    expect(set.stdout).toMatch(/^default max cost \(USD\): +2$/m)
    expect(set.stdout).toMatch(/^default max turns: +none$/m)
    const refused = await inProcess(["budgets", "set", "--max-turns", "1", ...as(team.tokens.member)])
    expect(refused.code).toBe(4)
    expect(refused.stderr).toContain("only the team's admins")
    const shown = await inProcess(["budgets", "show", "--json", ...as(team.tokens.viewer)])
    expect(JSON.parse(shown.stdout)).toEqual({ default_max_cost_usd: 2, max_cost_usd: 5, max_turns: 40 })

    const created = await call(server(), "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt: "@spend 0.5" } })
    const run = await waitForRun(server(), team.tokens.member, created.body.run_id)
    expect(run.agent_config).toMatchObject({ max_cost_usd: 2, max_turns: 40 })
    const spend = await inProcess(["spend", "--days", "7", ...as(team.tokens.viewer)])
    expect(spend.code).toBe(0)
    expect(spend.stdout).toMatch(new RegExp(`^${run.created_at.slice(0, 10)} +1 +\\$0\\.50 `, "m"))
    expect(spend.stdout).toMatch(/^total since \d{4}-\d{2}-\d{2}: \$0\.50$/m)
  }, 60_000)

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
        past: { server: server().url, token: admin, expires_at: "2020-01-01T00:00:00.000Z" }
      }
    }))
    const [profiled, past, flagged] = await Promise.all([
      cli(["whoami", "--json"], { env: { XDG_CONFIG_HOME: home } }),
      cli(["runs", "get", runs.hello, "--json"], { env: { XDG_CONFIG_HOME: home, AGENT_RUNS_PROFILE: "past" } }),
      inProcess(["whoami", "--server", server().url, "--token", token])
    ])
    rmSync(home, { recursive: true, force: true })

    expect(flagged.code).toBe(0)
    expect(flagged.stdout).toMatch(new RegExp(`^principal: +CLI whoami member \\(user ${team.principals.member}\\)$`, "m"))
    expect(flagged.stdout).toMatch(/^token: +ci \(\w{22}\)$/m)
    expect(flagged.stdout).toMatch(new RegExp(`^expires: +${shown}$`, "m"))
    expect(flagged.stdout).toMatch(new RegExp(`^limited to team: +CLI whoami \\(${team.uid}\\)$`, "m"))
    expect(flagged.stdout).toMatch(/^max role: +viewer$/m)
    expect(flagged.stdout).toMatch(new RegExp(`^${team.uid} +CLI whoami +viewer +yes$`, "m"))
    expect(flagged.stderr).toBe(`warning: this token expires on ${shown}; ask for a new one\n`)

    // From the profile: one line, the server's expiry, naming the profile.
    expect(profiled.code).toBe(0)
    expect(JSON.parse(profiled.stdout)).toMatchObject({
      principal: { uid: team.principals.member },
      token: { name: "ci", expires_at: soon, team_uid: team.uid, max_role: "viewer" }
    })
    expect(profiled.stderr).toBe(`warning: the token of profile "default" expires on ${shown}; run agent-runs login again\n`)
    // Any other command warns from the profile's expires_at, and goes on.
    expect(past.code).toBe(0)
    expect(past.stderr).toBe(`warning: the token of profile "past" expired on 2020-01-01T00:00:00Z; run agent-runs login again\n`)
    expect(JSON.parse(past.stdout)).toMatchObject({ run_id: runs.hello, title: "greeting", state: "SUCCEEDED" })
  }, 120_000)

  it("tokens create|revoke|list: a service account's token limited to the team, shown once, then revoked", async () => {
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
    const created = await inProcess(["tokens", "create", uid, "--name", "ci", "--expires-at", later, "--max-role", "viewer", ...asAdmin])
    expect(created.code).toBe(0)
    const token = created.stdout.trim()
    expect(token).toMatch(/^ar_[\w-]{43}$/)
    const tokenId = /^created token (\w{22}), limited to the team; it is not shown again$/m.exec(created.stderr)?.[1]
    expect(tokenId).toBeDefined()
    const me = await call(server(), "GET", "/api/v1/agent/me", { token })
    expect(me.body.token).toEqual({ token_id: tokenId, name: "ci", expires_at: later, team_uid: team.uid, max_role: "viewer" })

    const revoked = await inProcess(["tokens", "revoke", tokenId!, ...asAdmin])
    expect(revoked).toMatchObject({ code: 0, stdout: `revoked ${tokenId}\n` })
    expect((await call(server(), "GET", "/api/v1/agent/me", { token })).status).toBe(401)
    const listed = await inProcess(["tokens", "list", uid, ...asAdmin])
    const json = await inProcess(["tokens", "list", uid, "--json", ...asAdmin])
    expect(listed).toMatchObject({ code: 0, stderr: "" })
    expect(lines(listed.stdout)[0]).toMatch(/^TOKEN ID\s+NAME\s+CREATED\s+EXPIRES\s+LAST USED\s+MAX ROLE\s+REVOKED$/)
    expect(lines(listed.stdout)[1]).toMatch(
      new RegExp(`^${tokenId} +ci +\\S+ +${later.replace(/\.\d{3}Z$/, "Z")} +\\S+ +viewer +revoked \\S+Z$`)
    )
    expect(json).toMatchObject({ code: 0, stderr: "" })
    expect(JSON.parse(lines(json.stdout)[0]!)).toMatchObject({ token_id: tokenId, revoked_at: expect.any(String) })
  }, 120_000)

  it("login checks the token and saves a profile that commands without connection options use", async () => {
    assertBuilt(inject("serverBuild"))
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

    const [refused, noSso, login, paused, followup] = await Promise.all([
      cli(["login", "--server", server().url, "--token", "ar_not-a-valid-token", "--profile", "refused"]),
      cli(["login", "--server", server().url, "--sso", "--no-browser", "--profile", "sso"]),
      cli(["login", ...connection()]),
      inProcess(["schedules", "pause", schedule.body.id, ...connection()]),
      inProcess(["runs", "followup", runs.hello, "--message", "@say hello again", ...connection()])
    ])
    expect(paused).toMatchObject({ code: 0, stdout: `paused ${schedule.body.id} (yearly)\n` })
    // Run now, though paused: one run on the schedule, marked manual.
    const ranNow = await inProcess(["schedules", "run", schedule.body.id, ...connection()])
    expect(ranNow.code).toBe(0)
    const [, startedId] = /^started run (\S+) \((QUEUED|INPROGRESS|SUCCEEDED)\)\n$/.exec(ranNow.stdout) ?? []
    const manual = await call(server(), "GET", `/api/v1/agent/runs/${startedId}`, { token: admin })
    expect([manual.body.schedule?.schedule_id, manual.body.metadata]).toEqual([schedule.body.id, { manual: "true" }])
    expect(followup.code).toBe(0)
    expect(followup.stdout).toMatch(new RegExp(`^follow-up sent to ${runs.hello}`))
    // A token the server refuses: exit 4, one line, nothing saved.
    expect(refused).toMatchObject({ code: 4, stdout: "" })
    expect(lines(refused.stderr)).toHaveLength(1)
    expect(refused.stderr).toMatch(/^agent-runs: /)
    // An error: exit 1, one line.
    expect(noSso).toMatchObject({
      code: 1,
      stderr: "agent-runs: this server does not offer single sign-on (its administrator sets AGENT_RUNS_OIDC_ISSUER); use --token\n"
    })
    expect(login).toMatchObject({ code: 0, stderr: "" })
    expect(login.stdout).not.toContain(admin)
    const file = join(configHome, "agent-runs", "profiles.json")
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ profiles: { default: { server: server().url, token: admin } } })

    const [watchAgain, deliveries, schedules, scheduleText] = await Promise.all([
      // Without connection options: the profile. The follow-up continued the ended run: watch
      // follows the new execution to its end.
      cli(["runs", "watch", runs.hello]),
      inProcess(["webhooks", "deliveries", hook.body.uid, "--json", ...connection()]),
      inProcess(["schedules", "list", "--json", ...connection()]),
      inProcess(["schedules", "get", schedule.body.id, ...connection()])
    ])
    expect(schedules).toMatchObject({ code: 0, stderr: "" })
    expect(lines(schedules.stdout).map((line) => JSON.parse(line))).toMatchObject([
      { id: schedule.body.id, name: "yearly", enabled: false }
    ])
    expect(scheduleText.code).toBe(0)
    expect(scheduleText.stdout).toMatch(/^schedule: +\w{22}\nname: +yearly\ncron: +0 0 1 1 \* \(UTC\)\nenabled: +false\n/)
    expect(scheduleText.stdout.trimEnd().endsWith("@say happy new year")).toBe(true)
    expect(watchAgain.code).toBe(0)
    expect(watchAgain.stdout).toBe("hello from the cli\nhello again\n")
    expect(watchAgain.stderr).toMatch(new RegExp(`^${runs.hello} SUCCEEDED \\S+ run_succeeded`, "m"))
    expect(deliveries).toMatchObject({ code: 0, stderr: "" })
    const logged = lines(deliveries.stdout).map((line) => JSON.parse(line) as { outcome: string; payload?: unknown })
    expect(logged).toHaveLength(1)
    expect(logged[0]).toMatchObject({ outcome: "ACCEPTED", payload: { hello: "cli" } })
  }, 120_000)
})
