/**
 * The dashboard's GitHub page and a run's pull request, in chromium against the service on SQLite
 * (its GitHub hosts: 127.0.0.1) and the GitHub double of `@agent-runs/testing` on loopback:
 * - a team admin connects the team through the form: a secret the team lacks is refused beside
 *   its field, a credential the host refuses (401) beside the button; connected with a token, the
 *   page shows the host, the secret's name (never its value) and the repositories with whether it
 *   may push, every control labelled; changed to a GitHub App (read only), then disconnected,
 *   each as the API then says;
 * - a viewer sees the connection and its repositories with no form and no Disconnect button, and
 *   the host's 401 once the token is revoked;
 * - a run that opened a pull request on the host links to it from its page (`acme/pulls#1`).
 */
import { type FakeGitHub, mountedApi, startFakeGitHub } from "@agent-runs/testing"
import { type Browser, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage, shoot, signIn } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("the dashboard's GitHub page", () => {
  let service: LocalService
  let host: FakeGitHub
  let browser: Browser

  /** A new team with an admin and a viewer: their tokens, and the API as the admin. */
  const newTeam = async (name: string) => {
    const { uid } = await service.api.json<{ uid: string }>(await service.api.call("POST", "/admin/teams", { name }))
    const admin = await service.api.principal(`${name} admin`, [{ team_uid: uid, role: "admin" }])
    const viewer = await service.api.principal(`${name} viewer`, [{ team_uid: uid, role: "viewer" }])
    return { adminToken: admin.token, viewerToken: viewer.token, api: mountedApi(`${service.base}/api/v1`, admin.token) }
  }
  type Team = Awaited<ReturnType<typeof newTeam>>
  const setSecret = async (team: Team, name: string, value: string) =>
    expect((await team.api.call("PUT", `/agent/secrets/${name}`, { value })).status).toBe(200)
  const connectWithToken = async (team: Team, token: string) => {
    await setSecret(team, "GH_TOKEN", token)
    expect((await team.api.call("PUT", "/agent/github", { base_url: host.url, auth: { type: "token", token_secret: "GH_TOKEN" } })).status).toBe(200)
  }
  const openGitHub = async (page: Page, token: string) => {
    await page.goto(`${service.base}/app/`)
    await signIn(page, token)
    await page.getByRole("link", { name: "GitHub", exact: true }).click()
    await page.waitForURL(/\/app\/github$/)
  }
  const repositories = (page: Page) =>
    page.locator("table.repositories tbody tr[data-repository]").evaluateAll((rows) => rows.map((row) => [...row.children].map((cell) => cell.textContent)))
  const credential = (page: Page) => page.locator("dl.github-connection div", { hasText: "Credential" }).locator("dd")
  const errorBeside = (page: Page, label: string) => page.locator(".field", { has: page.getByLabel(label, { exact: true }) }).getByRole("alert")

  beforeAll(async () => {
    host = await startFakeGitHub()
    host.createRepository("acme", "app", { "README.md": "app\n" })
    host.createRepository("acme", "lib", { "README.md": "lib\n" })
    host.createRepository("acme", "pulls", { "README.md": "start\n" })
    service = await startLocalService({ name: "dashboard-github" })
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
    await host?.close()
  })

  it("an admin connects with a token through the form, sees its repositories, changes to an App and disconnects; refusals beside their field", async () => {
    const team = await newTeam("Connect")
    const token = host.addToken({ repositories: ["acme/app", "acme/lib"], permission: "write" })
    const app = host.addApp({ repositories: ["acme/lib"], permission: "read" })
    await setSecret(team, "GH_TOKEN", token)
    await setSecret(team, "GH_WRONG", "github_pat_wrong")
    await setSecret(team, "GH_APP_KEY", app.privateKey)
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await openGitHub(page, team.adminToken)
    await page.getByText("The team is not connected to GitHub.").waitFor()
    const form = page.getByRole("form", { name: "GitHub connection" })
    expect(await form.getByLabel("Host (base URL)").inputValue()).toBe("https://github.com")
    await form.getByLabel("Host (base URL)").fill(host.url)

    // A secret the team lacks: beside its field. A credential the host refuses: beside the button.
    await form.getByLabel("Token secret name").fill("GH_MISSING")
    await form.getByRole("button", { name: "Connect" }).click()
    await expect.poll(() => errorBeside(page, "Token secret name").textContent()).toBe("auth.token_secret: the team has no secret named GH_MISSING")
    expect(await form.getByLabel("Token secret name").getAttribute("aria-invalid")).toBe("true")
    await form.getByLabel("Token secret name").fill("GH_WRONG")
    await form.getByRole("button", { name: "Connect" }).click()
    await expect.poll(() => form.locator("#github-connect-error").textContent()).toBe("auth: the host refused the credential: GitHub answered 401: Bad credentials")
    expect(await errorBeside(page, "Token secret name").count()).toBe(0)
    expect(await form.getByLabel("Host (base URL)").inputValue()).toBe(host.url)

    await form.getByLabel("Token secret name").fill("GH_TOKEN")
    await form.getByRole("button", { name: "Connect" }).click()
    await page.getByRole("status").filter({ hasText: `Connected to ${host.url}.` }).waitFor()
    await page.getByText("The team is connected to GitHub.").waitFor()
    expect(await page.locator("dl.github-connection div", { hasText: "Host" }).locator("dd").textContent()).toBe(host.url)
    expect(await credential(page).textContent()).toBe("Personal access token, in the team secret GH_TOKEN")
    await expect.poll(() => repositories(page)).toEqual([["acme/app", "main", "yes"], ["acme/lib", "main", "yes"]])
    expect(await page.content()).not.toContain(token)
    const unlabelled = await page.evaluate(`[...document.querySelectorAll("input, select, textarea")]
      .filter((control) => control.labels === null || control.labels.length === 0).map((control) => control.outerHTML)`)
    expect(unlabelled).toEqual([])
    const stored = await team.api.json<Json>(await team.api.call("GET", "/agent/github"))
    expect(stored.connection).toMatchObject({ base_url: host.url, auth: { type: "token", token_secret: "GH_TOKEN" } })
    await shoot(page, "github")

    // The form starts from the connection: the same host, another kind of credential.
    await form.getByLabel("Credential").selectOption("app")
    await form.getByLabel("App id").fill(String(app.appId))
    await form.getByLabel("Installation id").fill(String(app.installationId))
    await form.getByLabel("Private key secret name").fill("GH_APP_KEY")
    await form.getByRole("button", { name: "Save connection" }).click()
    await expect.poll(() => credential(page).textContent())
      .toBe(`GitHub App ${app.appId}, installation ${app.installationId}; its private key in the team secret GH_APP_KEY`)
    await expect.poll(() => repositories(page)).toEqual([["acme/lib", "main", "no (read only)"]])
    expect(await page.content()).not.toContain("PRIVATE KEY")

    await page.getByRole("button", { name: "Disconnect from GitHub" }).click()
    await page.getByRole("status").filter({ hasText: "Disconnected from GitHub. The team's secrets stay." }).waitFor()
    await page.getByText("The team is not connected to GitHub.").waitFor()
    expect(await page.locator("table.repositories").count()).toBe(0)
    expect(await page.getByRole("button", { name: "Disconnect from GitHub" }).count()).toBe(0)
    expect((await team.api.json<Json>(await team.api.call("GET", "/agent/github"))).connected).toBe(false)
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)

  it("a viewer sees the connection and its repositories, and no form; a revoked token's 401 is shown", async () => {
    const team = await newTeam("Read")
    const token = host.addToken({ repositories: ["acme/app"], permission: "read" })
    await connectWithToken(team, token)
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await openGitHub(page, team.viewerToken)
    await expect.poll(() => repositories(page)).toEqual([["acme/app", "main", "no (read only)"]])
    expect(await credential(page).textContent()).toBe("Personal access token, in the team secret GH_TOKEN")
    await page.getByText("Only the team's admins connect it to GitHub, change or end its connection.").waitFor()
    expect(await page.getByRole("form", { name: "GitHub connection" }).count()).toBe(0)
    expect(await page.getByRole("button", { name: "Disconnect from GitHub" }).count()).toBe(0)
    await shoot(page, "github-viewer")

    host.revokeToken(token)
    await page.getByRole("button", { name: "Ask the host again" }).click()
    await expect.poll(() => page.getByRole("alert").first().textContent())
      .toBe("The repositories could not be listed: GitHub answered 401: Bad credentials")
    expect(await page.locator("dl.github-connection").count()).toBe(1)
    expect(elsewhere).toEqual([])
    // The API answers the host's refusal as a 503, which the console reports.
    expect(errors.filter((e) => !/status of 503/.test(e))).toEqual([])
    await page.close()
  }, 60_000)

  it("a run's pull request is a link on the run's page, named as GitHub names it, with its branch", async () => {
    const team = await newTeam("Pulls")
    await connectWithToken(team, host.addToken({ repositories: ["acme/pulls"], permission: "write" }))
    const environment = await team.api.json<Json>(await team.api.call("POST", "/agent/environments", {
      config: {
        name: "pulls",
        github_repos: [{ owner: "acme", repo: "pulls" }],
        setup_commands: ["echo more >> pulls/README.md"],
        pull_request: { enabled: true }
      },
      team: true
    }))
    const created = await team.api.json<Json>(await team.api.call("POST", "/agent/runs", {
      prompt: "Improve the README",
      config: { environment_id: environment.uid }
    }))
    const runId: string = created.run_id
    const readRun = async () => team.api.json<Json>(await team.api.call("GET", `/agent/runs/${runId}`))
    await expect.poll(async () => (await readRun()).ended_at, { timeout: 60_000, interval: 250 }).not.toBeNull()
    const run = await readRun()
    expect([run.state, run.status_message?.message]).toEqual(["SUCCEEDED", undefined])
    const pull = host.pulls.find((p) => p.repo === "pulls")!

    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/runs/${runId}`)
    await signIn(page, team.adminToken)
    const named = `acme/pulls#${pull.number} on ${new URL(host.url).host}`
    const link = page.getByRole("link", { name: named })
    await link.waitFor()
    expect(await link.getAttribute("href")).toBe(`${host.url}/acme/pulls/pull/${pull.number}`)
    expect(await link.getAttribute("rel")).toBe("noopener noreferrer")
    expect(await page.locator("ul.artifacts li").textContent()).toContain(`PULL_REQUEST ${named} from the branch agent-runs/${runId}`)
    await shoot(page, "run-pull-request")

    // An agent reporting a pull request whose link goes elsewhere: the page shows where it goes.
    const spoof = { type: "artifact", artifact_type: "PULL_REQUEST", data: { branch: "x", url: "https://evil.example/phish", repository: "acme/pulls", number: 1 } }
    const lying = await team.api.json<Json>(await team.api.call("POST", "/agent/environments", {
      config: { name: "lying", harness: `echo '${JSON.stringify(spoof)}'; echo '{"type":"result","outcome":"succeeded"}'` },
      team: true
    }))
    const liar = await team.api.json<Json>(await team.api.call("POST", "/agent/runs", { prompt: "lie", config: { environment_id: lying.uid } }))
    await expect.poll(async () => (await team.api.json<Json>(await team.api.call("GET", `/agent/runs/${liar.run_id}`))).artifacts.length, { timeout: 60_000 }).toBe(1)
    await page.goto(`${service.base}/app/runs/${liar.run_id}`)
    const shown = page.locator("ul.artifacts a")
    await shown.waitFor()
    expect([await shown.textContent(), await shown.getAttribute("href")]).toEqual(["https://evil.example/phish", "https://evil.example/phish"])
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)
})
