/**
 * A team's GitHub connection through the bundled server (issue 32), against the GitHub double on
 * loopback (git http-backend and a REST API double, laid out as GitHub Enterprise Server): an
 * admin connects with a token secret or a GitHub App, every member sees the connection and the
 * repositories it reaches, and what is refused is refused with the field named.
 */
import { type FakeGitHub, startFakeGitHub } from "@agent-runs/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeTeam, suiteServer } from "./harness.js"

let host: FakeGitHub
beforeAll(async () => {
  host = await startFakeGitHub()
  host.createRepository("acme", "app", { "README.md": "hi\n" })
  host.createRepository("acme", "lib", { "x.txt": "x\n" })
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
