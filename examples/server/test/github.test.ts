/**
 * A team's GitHub connection through the bundled server (issue 32), against the GitHub double on
 * loopback (git http-backend and a REST API double, laid out as GitHub Enterprise Server): an
 * admin connects with a token secret or a GitHub App, every member sees the connection and the
 * repositories it reaches, and what is refused is refused with the field named.
 */
import { type FakeGitHub, startFakeGitHub } from "@agent-runs/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { inProcess } from "./cliInProcess.js"
import { call, makeTeam, suiteServer, waitForRun } from "./harness.js"

let host: FakeGitHub
beforeAll(async () => {
  host = await startFakeGitHub()
  host.createRepository("acme", "app", { "README.md": "hi\n" })
  host.createRepository("acme", "lib", { "x.txt": "x\n" })
  host.createRepository("acme", "tools", {
    "TOOLS.md": "tools\n",
    "skills/review/SKILL.md": "---\nname: review\ndescription: Reviews a change\n---\nRead the diff.\n"
  })
})
afterAll(() => host?.close())

describe("GitHub connection (sqlite)", () => {
  const server = suiteServer("sqlite")

  it("an admin connects with a personal token; members see it and its repositories; only admins change it; the secret is kept", async () => {
    const team = await makeTeam(server(), "github")
    const as = (role: "admin" | "member" | "viewer") => ({ token: team.tokens[role] })
    const token = host.addToken({ repositories: ["acme/app", "acme/lib"], permission: "write" })
    expect((await call(server(), "GET", "/api/v1/agent/github", as("viewer"))).body).toEqual({ connected: false, connection: null })
    expect((await call(server(), "GET", "/api/v1/agent/github/repositories", as("member"))).status).toBe(404)

    const connect = { base_url: host.url, auth: { type: "token", token_secret: "GH_TOKEN" } }
    const missing = await call(server(), "PUT", "/api/v1/agent/github", { ...as("admin"), body: connect })
    expect([missing.status, missing.body.error]).toEqual([400, "auth.token_secret: the team has no secret named GH_TOKEN"])
    expect((await call(server(), "PUT", "/api/v1/agent/secrets/GH_WRONG", { ...as("admin"), body: { value: "github_pat_wrong" } })).status).toBe(200)
    const wrong = await call(server(), "PUT", "/api/v1/agent/github", { ...as("admin"), body: { ...connect, auth: { type: "token", token_secret: "GH_WRONG" } } })
    expect([wrong.status, wrong.body.error]).toEqual([400, "auth: the host refused the credential: GitHub answered 401: Bad credentials"])
    const internal = await call(server(), "PUT", "/api/v1/agent/github", { ...as("admin"), body: { ...connect, base_url: "https://169.254.169.254" } })
    expect([internal.status, internal.body.error]).toEqual([400, "base_url: 169.254.169.254 is not a GitHub host this server connects to (its operator names them: AGENT_RUNS_GITHUB_HOSTS)"])
    const plain = await call(server(), "PUT", "/api/v1/agent/github", { ...as("admin"), body: { ...connect, base_url: "http://github.example.com" } })
    expect(plain.status).toBe(400)
    expect(plain.body.error).toContain("base_url")

    expect((await call(server(), "PUT", "/api/v1/agent/secrets/GH_TOKEN", { ...as("admin"), body: { value: token } })).status).toBe(200)
    expect((await call(server(), "PUT", "/api/v1/agent/github", { ...as("member"), body: connect })).status).toBe(403)
    const connected = await call(server(), "PUT", "/api/v1/agent/github", { ...as("admin"), body: connect })
    expect(connected.status).toBe(200)
    expect(connected.body).toMatchObject({ connected: true, connection: { base_url: host.url, auth: { type: "token", token_secret: "GH_TOKEN" }, connected_by: team.principals.admin } })
    const seen = await call(server(), "GET", "/api/v1/agent/github", as("viewer"))
    expect(seen.body).toEqual(connected.body)
    expect(JSON.stringify(seen.body)).not.toContain(token)
    const repositories = await call(server(), "GET", "/api/v1/agent/github/repositories", as("viewer"))
    expect(repositories.status).toBe(200)
    expect(repositories.body).toEqual({
      repositories: [
        { owner: "acme", repo: "app", default_branch: "main", can_push: true },
        { owner: "acme", repo: "lib", default_branch: "main", can_push: true }
      ],
      truncated: false
    })

    const kept = await call(server(), "DELETE", "/api/v1/agent/secrets/GH_TOKEN", as("admin"))
    expect([kept.status, kept.body.error]).toEqual([409, "secret GH_TOKEN holds the credential of the team's GitHub connection; change or disconnect it first"])
    expect((await call(server(), "DELETE", "/api/v1/agent/github", as("member"))).status).toBe(403)
    expect((await call(server(), "DELETE", "/api/v1/agent/github", as("admin"))).status).toBe(200)
    expect((await call(server(), "GET", "/api/v1/agent/github", as("member"))).body.connected).toBe(false)
    expect((await call(server(), "DELETE", "/api/v1/agent/github", as("admin"))).status).toBe(404)
    expect((await call(server(), "DELETE", "/api/v1/agent/secrets/GH_TOKEN", as("admin"))).status).toBe(200)
  })

  it("the CLI: github connect, status, repos and disconnect, as text and JSON; a usage error without a credential", async () => {
    const team = await makeTeam(server(), "github cli")
    const token = host.addToken({ repositories: ["acme/app"], permission: "write" })
    expect((await call(server(), "PUT", "/api/v1/agent/secrets/GH_TOKEN", { token: team.tokens.admin, body: { value: token } })).status).toBe(200)
    const as = (role: "admin" | "viewer") => ["--server", server().url, "--token", team.tokens[role]]
    const usage = await inProcess(["github", "connect", "--base-url", host.url, ...as("admin")])
    expect([usage.code, usage.stderr]).toEqual([2, expect.stringContaining("give --token-secret NAME")])
    const connected = await inProcess(["github", "connect", "--base-url", host.url, "--token-secret", "GH_TOKEN", ...as("admin")])
    expect([connected.code, connected.stderr]).toEqual([0, ""])
    expect(connected.stdout).toMatch(new RegExp(`^host: +${host.url}\ncredential: +personal access token \\(team secret GH_TOKEN\\)\n`))
    const status = await inProcess(["github", "status", "--json", ...as("viewer")])
    expect(JSON.parse(status.stdout)).toMatchObject({ connected: true, connection: { base_url: host.url } })
    const repos = await inProcess(["github", "repos", ...as("viewer")])
    expect(repos.stdout.split("\n").slice(0, 2)).toEqual([expect.stringMatching(/^REPOSITORY +DEFAULT BRANCH +PUSH$/), expect.stringMatching(/^acme\/app +main +yes$/)])
    const refused = await inProcess(["github", "disconnect", ...as("viewer")])
    expect(refused.code).toBe(4)
    expect((await inProcess(["github", "disconnect", ...as("admin")])).stdout).toBe("disconnected from GitHub\n")
    expect((await inProcess(["github", "status", ...as("viewer")])).stdout).toBe("not connected to GitHub\n")
  })

  it("a GitHub App: connected with its key as a secret; the repositories its installation reaches", async () => {
    const team = await makeTeam(server(), "github app")
    const app = host.addApp({ repositories: ["acme/lib"], permission: "read" })
    expect((await call(server(), "PUT", "/api/v1/agent/secrets/GH_APP_KEY", { token: team.tokens.admin, body: { value: app.privateKey } })).status).toBe(200)
    const connected = await call(server(), "PUT", "/api/v1/agent/github", {
      token: team.tokens.admin,
      body: { base_url: `${host.url}/`, auth: { type: "app", app_id: app.appId, installation_id: app.installationId, private_key_secret: "GH_APP_KEY" } }
    })
    expect(connected.status).toBe(200)
    expect(connected.body.connection.base_url).toBe(host.url)
    const repositories = await call(server(), "GET", "/api/v1/agent/github/repositories", { token: team.tokens.member })
    expect(repositories.body.repositories).toEqual([{ owner: "acme", repo: "lib", default_branch: "main", can_push: false }])
  })
})

/** Every file under `dir`, as text. */
const texts = (dir: string): Array<string> =>
  readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => readFileSync(join(e.parentPath, e.name), "latin1"))

describe("runs of a team connected to GitHub (sqlite, process executor)", () => {
  const server = suiteServer("sqlite", {}, { concurrency: 2 })

  it("its environments name the host's repositories; runs clone them through the team's mirror; skills come from them; a revoked token fails the run naming the 401", async () => {
    const team = await makeTeam(server(), "github runs")
    const admin = { token: team.tokens.admin }
    const token = host.addToken({ repositories: ["acme/app", "acme/tools"], permission: "write" })
    expect((await call(server(), "PUT", "/api/v1/agent/secrets/GH_TOKEN", { ...admin, body: { value: token } })).status).toBe(200)
    expect((await call(server(), "PUT", "/api/v1/agent/github", { ...admin, body: { base_url: host.url, auth: { type: "token", token_secret: "GH_TOKEN" } } })).status).toBe(200)

    // A repository the credential cannot see is one the team does not have.
    const hidden = await call(server(), "POST", "/api/v1/agent/environments", {
      ...admin,
      body: { config: { name: "hidden", github_repos: [{ owner: "acme", repo: "lib" }] }, team: true }
    })
    expect([hidden.status, hidden.body.error]).toEqual([400, "config.github_repos[0]: your team has no repository acme/lib (a team uses only its own repositories)"])
    const env = await call(server(), "POST", "/api/v1/agent/environments", {
      ...admin,
      body: {
        config: {
          name: "from github",
          github_repos: [{ owner: "acme", repo: "app" }, { owner: "acme", repo: "tools" }],
          setup_commands: [
            "test \"$(cat app/README.md)\" = hi",
            "test \"$(git -C app rev-list --count HEAD)\" = 1",
            `test "$(git -C app remote get-url origin)" = "${host.url}/acme/app.git"`,
            "test -f tools/TOOLS.md"
          ]
        },
        team: true
      }
    })
    expect(env.status).toBe(201)

    // Skills are read from the host's repositories, through the mirror.
    const agents = await call(server(), "GET", "/api/v1/agent", admin)
    expect(agents.status).toBe(200)
    expect(JSON.stringify(agents.body)).toContain("acme/tools:skills/review/SKILL.md")

    const created = await call(server(), "POST", "/api/v1/agent/runs", { ...admin, body: { prompt: "cloned", config: { environment_id: env.body.uid } } })
    expect(created.status).toBe(200)
    const run = await waitForRun(server(), team.tokens.admin, created.body.run_id)
    expect([run.state, run.status_message?.message]).toEqual(["SUCCEEDED", undefined])

    // The token is in no file of the team's mirrors, nor in the run's transcript or conversation.
    const mirrors = join(server().dataDir, "mirrors")
    expect(readdirSync(mirrors)).toEqual([team.uid])
    expect(texts(mirrors).some((t) => t.includes(token))).toBe(false)
    const transcript = await fetch(`${server().url}/api/v1/agent/runs/${created.body.run_id}/transcript`, { headers: { authorization: `Bearer ${team.tokens.admin}` } })
    expect(await transcript.text()).not.toContain(token)
    const conversation = await call(server(), "GET", `/api/v1/agent/runs/${created.body.run_id}/conversation`, admin)
    expect(JSON.stringify(conversation.body)).not.toContain(token)

    host.revokeToken(token)
    const refused = await call(server(), "POST", "/api/v1/agent/runs", { ...admin, body: { prompt: "refused", config: { environment_id: env.body.uid } } })
    const failed = await waitForRun(server(), team.tokens.admin, refused.body.run_id)
    expect(failed.state).toBe("FAILED")
    expect(failed.status_message.error_code).toBe("environment_setup_failed")
    expect(failed.status_message.message).toMatch(/^fetching acme\/app failed: the host refused the credential \(401\)/)
    expect(failed.status_message.message).not.toContain(token)
  }, 90_000)
})

describe("pull requests of a team connected to GitHub (sqlite, process executor)", () => {
  const server = suiteServer("sqlite", {}, { concurrency: 2 })

  it("a run's work becomes a branch and a pull request; a follow-up pushes more and comments; a read-only token fails naming the 403", async () => {
    const team = await makeTeam(server(), "github pulls")
    const admin = { token: team.tokens.admin }
    host.createRepository("acme", "pulls", { "README.md": "start\n" })
    const token = host.addToken({ repositories: ["acme/pulls"], permission: "write" })
    expect((await call(server(), "PUT", "/api/v1/agent/secrets/GH_TOKEN", { ...admin, body: { value: token } })).status).toBe(200)
    expect((await call(server(), "PUT", "/api/v1/agent/github", { ...admin, body: { base_url: host.url, auth: { type: "token", token_secret: "GH_TOKEN" } } })).status).toBe(200)
    // The work: a line added to the README by the environment's setup (left uncommitted).
    const env = await call(server(), "POST", "/api/v1/agent/environments", {
      ...admin,
      body: {
        config: {
          name: "pulls",
          github_repos: [{ owner: "acme", repo: "pulls" }],
          setup_commands: ["echo \"work of $(date +%s%N)\" >> pulls/README.md"],
          pull_request: { enabled: true, draft: true }
        },
        team: true
      }
    })
    expect(env.status).toBe(201)
    const created = await call(server(), "POST", "/api/v1/agent/runs", { ...admin, body: { prompt: "Improve the README\nwith care", title: "Improve the README", config: { environment_id: env.body.uid } } })
    const runId: string = created.body.run_id
    const run = await waitForRun(server(), team.tokens.admin, runId)
    expect([run.state, run.status_message?.message]).toEqual(["SUCCEEDED", undefined])
    const branch = `agent-runs/${runId}`
    expect(host.file("acme", "pulls", branch, "README.md")).toMatch(/^start\nwork of \d+$/)
    const pull = host.pulls.find((p) => p.repo === "pulls")!
    expect(pull).toMatchObject({ title: "Improve the README", head: branch, base: "main", draft: true, state: "open" })
    expect(pull.body).toContain("Improve the README\nwith care")
    expect(run.artifacts).toEqual([{ artifact_type: "PULL_REQUEST", created_at: expect.any(String), data: { branch, url: `${host.url}/acme/pulls/pull/${pull.number}`, number: pull.number, repository: "acme/pulls" } }])

    // A follow-up: its clone starts from the branch, its work is pushed on top, the pull request is commented.
    expect((await call(server(), "POST", `/api/v1/agent/runs/${runId}/followups`, { ...admin, body: { message: "more" } })).status).toBeLessThan(300)
    const again = await waitForRun(server(), team.tokens.admin, runId, (r) => (r as { readonly execution_count?: number }).execution_count === 2 && ["SUCCEEDED", "FAILED", "ERROR"].includes(r.state))
    expect([again.state, again.status_message?.message]).toEqual(["SUCCEEDED", undefined])
    expect(host.file("acme", "pulls", branch, "README.md").split("\n")).toHaveLength(3)
    expect(pull.comments).toHaveLength(1)
    expect(host.pulls.filter((p) => p.repo === "pulls")).toHaveLength(1)
    expect(again.artifacts).toHaveLength(1)

    // An agent that points its clone's `.git/shallow` at a file of the service's: the service never
    // reads it (the sandbox packs its own work, as its user, who cannot).
    const planted = join(server().dataDir, "planted-secret")
    writeFileSync(planted, "TOPSECRET-of-the-server\n", { mode: 0o600 })
    const attacking = await call(server(), "POST", "/api/v1/agent/environments", {
      ...admin,
      body: {
        config: {
          name: "attacking",
          github_repos: [{ owner: "acme", repo: "pulls" }],
          setup_commands: [`echo work >> pulls/README.md && rm -f pulls/.git/shallow && ln -s '${planted}' pulls/.git/shallow`],
          pull_request: { enabled: true }
        },
        team: true
      }
    })
    const attack = await call(server(), "POST", "/api/v1/agent/runs", { ...admin, body: { prompt: "attack", config: { environment_id: attacking.body.uid } } })
    const attacked = await waitForRun(server(), team.tokens.admin, attack.body.run_id)
    // Its git, as the sandbox's user, cannot read the file: the work is pushed, or the run fails; the file is nowhere.
    expect(["SUCCEEDED", "FAILED"]).toContain(attacked.state)
    expect(JSON.stringify(attacked)).not.toContain("TOPSECRET")
    expect(JSON.stringify(host.pulls)).not.toContain("TOPSECRET")

    // A token that may only read: the push is the host's 403, and the run says so.
    const reader = host.addToken({ repositories: ["acme/pulls"], permission: "read" })
    expect((await call(server(), "PUT", "/api/v1/agent/secrets/GH_TOKEN", { ...admin, body: { value: reader } })).status).toBe(200)
    const refused = await call(server(), "POST", "/api/v1/agent/runs", { ...admin, body: { prompt: "refused", config: { environment_id: env.body.uid } } })
    const failed = await waitForRun(server(), team.tokens.admin, refused.body.run_id)
    expect([failed.state, failed.status_message.error_code]).toEqual(["FAILED", "integration_not_configured"])
    expect(failed.status_message.message).toMatch(/^pushing agent-runs\/\S+ to acme\/pulls failed: the credential may not do this \(403\)/)
    expect(failed.status_message.message).not.toContain(reader)
  }, 90_000)
})
