/**
 * The dashboard's sign-in and teams in a real browser (Debian's `chromium` through
 * `playwright-core`), against the service on SQLite, every request leaving 127.0.0.1 refused and
 * counted, console errors counted:
 * - a principal in two teams sees both, by name, in the header's Team select; choosing the other
 *   one shows that team's runs (and not the first's), and a reload keeps it;
 * - a principal in one team sees its name, no select, and nothing of the other team;
 * - a token with characters no token has is refused beside the field, naming them, without a call;
 * - a token revoked while a prompt, then a follow-up, is being typed: the sign-in opens over the
 *   page saying why, and after signing in again the typed text is still there (and can be sent);
 * - the same, but someone else signs in over the page: the page behind the dialog is hidden by an
 *   opaque backdrop, and the newcomer lands on the app's root with no query, none of the first
 *   principal's filters or typed text on the page.
 * Screenshots at 1280 and 390 px wide go to `dashboard-screenshots/` (not in git).
 */
import { type Browser, type Locator, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage, shoot, signIn } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("the dashboard's teams and sign-in", () => {
  let service: LocalService
  let base: string
  let browser: Browser
  let alpha: Json
  let beta: Json
  let pat: Json
  let solo: Json
  let alphaRun: string
  let betaRun: string

  const admin = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const response = await service.api.call(method, path, body)
    return service.api.json<Json>(response)
  }
  /** A new token of a principal: `{token, token_id}`. */
  const tokenOf = (principal: Json): Promise<Json> => admin("POST", `/admin/principals/${principal.uid}/tokens`, {})
  /** A run created by `token` in `team`, Team-scoped. */
  const runIn = async (token: string, team: string, prompt: string): Promise<string> => {
    const response = await fetch(`${base}/api/v1/agent/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "x-team-uid": team, "content-type": "application/json" },
      body: JSON.stringify({ prompt, team: true })
    })
    expect(response.status).toBe(200)
    return ((await response.json()) as Json).run_id
  }
  const row = (page: Page, runId: string) => page.locator(`tr[data-run-id="${runId}"]`)
  /**
   * Presses `button` the way its click would, unless the sign-in already covers the page: the
   * page's own refresh (a run's page polls) may meet the revoked token before the press does, and
   * either opens the sign-in. A synthetic click, so that it never waits behind the dialog.
   */
  const sendUnlessSignedOut = async (button: Locator, dialog: Locator) => {
    if (!(await dialog.isVisible())) await button.dispatchEvent("click")
  }

  beforeAll(async () => {
    // No executor: the runs stay queued, which is all the tables need.
    service = await startLocalService({ name: "dashboard-teams", executor: false })
    base = service.base
    alpha = await admin("POST", "/admin/teams", { name: "Alpha" })
    beta = await admin("POST", "/admin/teams", { name: "Beta" })
    pat = await service.api.principal("Pat Two-Teams", [{ team_uid: alpha.uid, role: "member" }, { team_uid: beta.uid, role: "member" }])
    solo = await service.api.principal("Solo", [{ team_uid: alpha.uid, role: "member" }])
    const { token } = pat
    alphaRun = await runIn(token, alpha.uid, "Alpha's own work")
    betaRun = await runIn(token, beta.uid, "Beta's own work")
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
  })

  it("a principal in two teams switches between them in the header; each shows its own runs", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${base}/app/`)
    await signIn(page, (await tokenOf(pat)).token)
    await row(page, alphaRun).waitFor()
    expect(await row(page, betaRun).count()).toBe(0)
    expect(await page.locator("header .who").textContent()).toContain("Signed in as Pat Two-Teams")
    const select = page.getByLabel("Team", { exact: true })
    expect(await select.locator("option").allTextContents()).toEqual(["Alpha", "Beta"])
    expect(await select.inputValue()).toBe(alpha.uid)
    await shoot(page, "teams-alpha")

    await select.selectOption({ label: "Beta" })
    await row(page, betaRun).waitFor()
    expect(await row(page, alphaRun).count()).toBe(0)
    expect(await page.evaluate("sessionStorage.getItem(\"agent-runs.team\")")).toBe(beta.uid)
    await shoot(page, "teams-beta")

    // The choice is the tab's: a reload stays in Beta.
    await page.reload()
    await row(page, betaRun).waitFor()
    expect(await page.getByLabel("Team", { exact: true }).inputValue()).toBe(beta.uid)
    expect(await row(page, alphaRun).count()).toBe(0)
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  it("a principal in one team sees its name and no switcher, and nothing of the other team", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    const answers: Array<string> = []
    page.on("response", async (response) => {
      if (response.url().includes("/api/v1/")) answers.push(await response.text().catch(() => ""))
    })
    await page.goto(`${base}/app/`)
    await signIn(page, (await tokenOf(solo)).token)
    await row(page, alphaRun).waitFor()
    expect(await page.locator("header .team").textContent()).toBe("Team Alpha")
    expect(await page.getByLabel("Team", { exact: true }).count()).toBe(0)
    expect(await page.locator("header select").count()).toBe(0)
    expect(await page.locator("header .who").textContent()).toContain("Signed in as Solo")
    expect(await row(page, betaRun).count()).toBe(0)
    // Nothing the API answered this principal names Beta.
    expect(answers.length).toBeGreaterThan(1)
    for (const answer of answers) {
      expect(answer).not.toContain(beta.uid)
      expect(answer).not.toContain("Beta")
    }
    await shoot(page, "teams-one")
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  it("a token with characters no token has is refused beside the field, naming them, without calling the API", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    const calls: Array<string> = []
    page.on("request", (request) => {
      if (request.url().includes("/api/")) calls.push(request.url())
    })
    await page.goto(`${base}/app/`)
    const pasted = "ar_abc def\u00e9\u201d"
    await signIn(page, pasted)
    const error = page.locator("#token-error")
    await error.waitFor()
    const text = await error.textContent()
    expect(text).toContain("The token has characters a token never has")
    expect(text).toContain("a space")
    expect(text).toContain("“é” (U+00E9)")
    expect(text).toContain("U+201D")
    expect(text).not.toMatch(/reach/)
    expect(await page.getByLabel("API token").getAttribute("aria-describedby")).toBe("token-error")
    expect(await page.getByLabel("API token").inputValue()).toBe(pasted)
    expect(calls).toEqual([])
    await shoot(page, "sign-in-malformed-token")
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  it("a token revoked while a prompt, then a follow-up, is typed: sign in again over the page, the text is still there", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${base}/app/`)
    const first = await tokenOf(pat)
    await signIn(page, first.token)
    await page.getByLabel("Team", { exact: true }).selectOption({ label: "Beta" })
    await row(page, betaRun).waitFor()

    const prompt = page.getByLabel("New run: prompt")
    const draft = "A long prompt I typed\nwhile my token was revoked"
    await prompt.fill(draft)
    await admin("DELETE", `/admin/tokens/${first.token_id}`)
    const dialog = page.getByRole("dialog", { name: "Sign in again" })
    await sendUnlessSignedOut(page.getByRole("button", { name: "Start run" }), dialog)

    // The sign-in opens over the page, saying why, with the focus in the token field.
    await dialog.waitFor()
    expect(await dialog.getByRole("alert").textContent()).toMatch(/^Signed out: /)
    await expect.poll(() => page.evaluate("document.activeElement.id")).toBe("token")
    expect(await page.evaluate("sessionStorage.getItem(\"agent-runs.token\")")).toBeNull()
    // Escape does not dismiss it.
    await page.keyboard.press("Escape")
    expect(await dialog.isVisible()).toBe(true)
    expect(await prompt.inputValue()).toBe(draft)
    await shoot(page, "sign-in-again")

    // A wrong token first: refused in the dialog; then a valid one.
    await signIn(page, "ar_still-not-a-token")
    await expect.poll(() => dialog.getByRole("alert").textContent()).not.toMatch(/^Signed out: /)
    const second = await tokenOf(pat)
    await signIn(page, second.token)
    await dialog.waitFor({ state: "detached" })
    expect(await prompt.inputValue()).toBe(draft)
    // Still in the team it was in.
    expect(await page.getByLabel("Team", { exact: true }).inputValue()).toBe(beta.uid)
    await page.getByRole("button", { name: "Start run" }).click()
    await page.waitForURL(/\/app\/runs\/[0-9a-f-]{36}$/)
    const created = page.url().split("/").pop()!
    // The run holds the prompt as it was typed, in Beta.
    const read = await fetch(`${base}/api/v1/agent/runs/${created}`, {
      headers: { authorization: `Bearer ${second.token}`, "x-team-uid": beta.uid }
    })
    expect(((await read.json()) as Json).prompt).toBe(draft)

    // The same on a run's page, with a follow-up.
    const followup = page.getByLabel("Follow-up")
    await followup.fill("A follow-up typed as the token goes")
    await admin("DELETE", `/admin/tokens/${second.token_id}`)
    await sendUnlessSignedOut(page.getByRole("button", { name: "Send follow-up" }), dialog)
    await dialog.waitFor()
    // Settled (as above): the dialog says why before it is filled in.
    await expect.poll(() => dialog.getByRole("alert").textContent()).toMatch(/^Signed out: /)
    expect(await followup.inputValue()).toBe("A follow-up typed as the token goes")
    await signIn(page, (await tokenOf(pat)).token)
    await dialog.waitFor({ state: "detached" })
    expect(await followup.inputValue()).toBe("A follow-up typed as the token goes")
    expect(new URL(page.url()).pathname).toBe(`/app/runs/${created}`)
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)

  it("someone else signing in over a page whose token was revoked starts at the app's root: no route, filters or typed text of the first", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    const first = await tokenOf(pat)
    const filtered = new URLSearchParams({ q: "Alpha's own", creator: pat.uid })
    await page.goto(`${base}/app/?${filtered.toString()}`)
    await signIn(page, first.token)
    await row(page, alphaRun).waitFor()
    expect(await page.getByLabel("Search", { exact: true }).inputValue()).toBe("Alpha's own")
    const prompt = page.getByLabel("New run: prompt")
    const draft = "Pat's private draft, not for Solo"
    await prompt.fill(draft)
    await admin("DELETE", `/admin/tokens/${first.token_id}`)
    await page.getByRole("button", { name: "Start run" }).click()

    const dialog = page.getByRole("dialog", { name: "Sign in again" })
    await dialog.waitFor()
    // The backdrop is opaque: nothing of the page behind shows through it.
    // (A string: the tests are type-checked without the DOM's types.)
    const backdrop = await page.evaluate(`(() => {
      const style = getComputedStyle(document.querySelector("dialog.sign-in-again"), "::backdrop")
      const probe = document.createElement("canvas").getContext("2d")
      probe.fillStyle = style.backgroundColor
      probe.fillRect(0, 0, 1, 1)
      return { alpha: probe.getImageData(0, 0, 1, 1).data[3], opacity: style.opacity, filter: style.backdropFilter }
    })()`)
    expect(backdrop).toEqual({ alpha: 255, opacity: "1", filter: "none" })
    await shoot(page, "sign-in-again-backdrop")

    await signIn(page, solo.token)
    await dialog.waitFor({ state: "detached" })
    await expect.poll(() => page.locator("header .who").textContent()).toContain("Signed in as Solo")
    const url = new URL(page.url())
    expect(url.pathname).toBe("/app/")
    expect(url.search).toBe("")
    await row(page, alphaRun).waitFor()
    expect(await page.getByLabel("Search", { exact: true }).inputValue()).toBe("")
    expect(await page.getByLabel("Creator uid", { exact: true }).inputValue()).toBe("")
    expect(await page.getByLabel("New run: prompt").inputValue()).toBe("")
    expect(await page.locator("body").innerText()).not.toContain(draft)
    expect(await page.content()).not.toContain(draft)
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)
})
