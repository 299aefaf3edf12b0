/**
 * The dashboard's Members page and the token expiry banner, in chromium against the service on
 * SQLite:
 * - a team admin signed in with a token expiring in 3 days sees the banner on every page and the
 *   Members link; on the page: the members with their roles, a member added by uid and its role
 *   changed, the team's last admin not demoted (the API's 409 text shown, the select back to
 *   admin), a member removed, a service account created, a token made for it (shown once, limited
 *   to the team, expiring on the chosen date) and revoked (the token then refused), and pages of
 *   members followed by their cursor;
 * - a member of the team (token without expiry) sees neither the link nor the banner, and the
 *   page's URL shows the API's refusal.
 * A disabled member is listed as disabled. The team's data retention is set on the page, and a
 * refused setting shows the API's text.
 */
import { type Browser, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage, shoot, signIn } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

const DAY = 86_400_000

describe("the dashboard's members page and the token expiry banner", () => {
  let service: LocalService
  let browser: Browser
  let team: string
  let ada: { uid: string; token: string; expiresAt: string }
  let mia: { uid: string; token: string }
  let otto: { uid: string }
  let dora: { uid: string }

  /** `GET /agent/me` with `token`: its status and answer. */
  const meOf = async (token: string) => {
    const response = await fetch(`${service.base}/api/v1/agent/me`, { headers: { authorization: `Bearer ${token}` } })
    return { status: response.status, body: response.status === 200 ? await response.json() as { token: Record<string, unknown> } : undefined }
  }
  const row = (page: Page, uid: string) => page.locator(`table.members tr[data-uid="${uid}"]`)

  beforeAll(async () => {
    service = await startLocalService({ name: "dashboard-members", executor: false })
    const created = await service.api.json<{ uid: string }>(await service.api.call("POST", "/admin/teams", { name: "Members" }))
    team = created.uid
    const admin = await service.api.principal("Ada Admin", [{ team_uid: team, role: "admin" }])
    const expiresAt = new Date(Date.now() + 3 * DAY).toISOString()
    const soon = await service.api.json<{ token: string }>(
      await service.api.call("POST", `/admin/principals/${admin.uid}/tokens`, { name: "laptop", expires_at: expiresAt })
    )
    ada = { uid: admin.uid, token: soon.token, expiresAt }
    mia = await service.api.principal("Mia Member", [{ team_uid: team, role: "member" }])
    otto = await service.api.principal("Otto Outsider", [{ team_uid: created.uid, role: "viewer" }])
    dora = await service.api.principal("Dora Disabled", [{ team_uid: team, role: "member" }])
    expect((await service.api.call("PATCH", `/admin/principals/${dora.uid}`, { disabled: true })).status).toBe(200)
    // Otto leaves the team: the admin adds it back by uid.
    expect((await service.api.call("DELETE", `/admin/principals/${otto.uid}/memberships/${team}`)).status).toBe(200)
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
  })

  it("a team admin manages members, a service account and its token; the banner says the token expires soon", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/`)
    await signIn(page, ada.token)
    const banner = page.locator(".banner.expiry")
    await banner.waitFor()
    expect(await banner.textContent()).toContain(`Your token expires on ${await page.evaluate((at) => new Date(at).toLocaleString(), ada.expiresAt)}`)
    await page.getByRole("link", { name: "Members" }).click()
    await page.waitForURL(/\/app\/members$/)
    await row(page, ada.uid).waitFor()
    expect(await banner.count()).toBe(1)
    expect(await row(page, mia.uid).textContent()).toContain("Mia Member")
    expect(await page.getByLabel("Role of Mia Member").inputValue()).toBe("member")
    expect(await row(page, otto.uid).count()).toBe(0)
    expect(await row(page, dora.uid).textContent()).toContain("disabled")
    expect(await row(page, mia.uid).textContent()).not.toContain("disabled")

    // Add Otto by uid, as a viewer; then make it a member.
    const add = page.getByRole("form", { name: "Add a member" })
    await add.getByLabel("Principal uid").fill(otto.uid)
    await add.getByLabel("Role").selectOption("viewer")
    await add.getByRole("button", { name: "Add member" }).click()
    await row(page, otto.uid).waitFor()
    expect(await page.getByLabel("Role of Otto Outsider").inputValue()).toBe("viewer")
    await page.getByLabel("Role of Otto Outsider").selectOption("member")
    await expect.poll(() => page.getByRole("status").filter({ hasText: "Otto Outsider is now member." }).count()).toBe(1)
    const listed = await service.api.json<{ members: Array<{ uid: string; role: string }> }>(
      await fetch(`${service.base}/api/v1/agent/team/members`, { headers: { authorization: `Bearer ${ada.token}`, "x-team-uid": team } })
    )
    expect(listed.members.find((m) => m.uid === otto.uid)?.role).toBe("member")

    // The team's last admin is not demoted: the API's text, the select back to admin.
    await page.getByLabel("Role of Ada Admin").selectOption("viewer")
    await expect.poll(() => page.getByRole("alert").first().textContent()).toContain("would be left without an admin")
    await expect.poll(() => page.getByLabel("Role of Ada Admin").inputValue()).toBe("admin")

    // Remove Otto.
    await page.getByRole("button", { name: "Remove Otto Outsider" }).click()
    await expect.poll(() => row(page, otto.uid).count()).toBe(0)

    // A service account and its token, shown once, limited to the team, expiring on the chosen date.
    const create = page.getByRole("form", { name: "New service account" })
    await create.getByLabel("Service account name").fill("ci bot")
    await create.getByRole("button", { name: "Create service account" }).click()
    const bot = page.locator("table.members tr", { hasText: "ci bot" })
    await bot.waitFor()
    expect(await bot.textContent()).toContain("service account")
    await page.getByRole("button", { name: "Tokens of ci bot" }).click()
    await page.getByRole("heading", { name: "Tokens of ci bot" }).waitFor()
    const day = new Date(Date.now() + 30 * DAY).toISOString().slice(0, 10)
    const form = page.getByRole("form", { name: "Create a token" })
    await form.getByLabel("Token name (optional)").fill("deploy")
    await form.getByLabel("Expires on (optional)").fill(day)
    await form.getByLabel("Most it may do").selectOption("viewer")
    await form.getByRole("button", { name: "Create token" }).click()
    const shown = page.getByLabel("New token", { exact: true })
    await shown.waitFor()
    const token = await shown.inputValue()
    expect(token).toMatch(/^ar_/)
    expect(await page.locator(".new-token").textContent()).toContain("Copy it now: it is shown this once")
    const holder = await meOf(token)
    expect(holder.body?.token).toMatchObject({
      name: "deploy",
      team_uid: team,
      max_role: "viewer",
      expires_at: await page.evaluate((d) => new Date(`${d}T00:00`).toISOString(), day)
    })
    const tokenRow = page.locator(`table.tokens tr[data-token-id="${holder.body?.token["token_id"] as string}"]`)
    await tokenRow.waitFor()
    await shoot(page, "members")

    await page.getByRole("button", { name: "Revoke deploy" }).click()
    await expect.poll(() => tokenRow.textContent()).toContain("revoked")
    expect((await meOf(token)).status).toBe(401)

    // Pages: more members than a page holds (100), followed by the cursor in the URL.
    await Promise.all(Array.from({ length: 100 }, (_, i) => service.api.principal(`Crowd ${i}`, [{ team_uid: team, role: "viewer" }])))
    await page.goto(`${service.base}/app/members`)
    const rows = page.locator("table.members tbody tr[data-uid]")
    await expect.poll(() => rows.count()).toBe(100)
    const first = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-uid")))
    await page.getByRole("button", { name: "Next page" }).click()
    await page.waitForURL(/\/app\/members\?cursor=/)
    await expect.poll(() => rows.count()).toBe(104 - 100)
    const second = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-uid")))
    expect(second.filter((uid) => first.includes(uid))).toEqual([])
    expect(await page.getByRole("button", { name: "Next page" }).isDisabled()).toBe(true)
    expect(elsewhere).toEqual([])
    expect(errors.filter((e) => !/status of 409/.test(e))).toEqual([])
    await page.close()
  }, 120_000)

  it("a team admin sets the team's data retention: saved and shown as what applies; a refusal is the API's text, nothing changed", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/`)
    await signIn(page, ada.token)
    await page.goto(`${service.base}/app/members`)
    const form = page.getByRole("form", { name: "Data retention" })
    await form.waitFor()
    await form.getByLabel("Ended runs (days)").fill("30")
    await form.getByLabel("Webhook deliveries (days)").fill("7")
    await form.getByRole("button", { name: "Save retention" }).click()
    await page.getByRole("status").filter({ hasText: "Retention saved." }).waitFor()
    await expect.poll(() => form.locator("[data-kind=run_days]").textContent()).toContain("now kept: 30 days")
    const stored = async () => {
      const response = await fetch(`${service.base}/api/v1/agent/team/retention`, { headers: { authorization: `Bearer ${ada.token}` } })
      return ((await response.json()) as { team: Record<string, number> }).team
    }
    expect(await stored()).toEqual({ run_days: 30, webhook_delivery_days: 7 })

    // Past the most days there are: the API's refusal names the field, the setting stays.
    await form.getByLabel("Ended runs (days)").fill("100000")
    await form.getByRole("button", { name: "Save retention" }).click()
    await expect.poll(() => page.getByRole("alert").first().textContent()).toContain("run_days")
    expect(await stored()).toEqual({ run_days: 30, webhook_delivery_days: 7 })
    await expect.poll(() => form.getByLabel("Ended runs (days)").inputValue()).toBe("30")

    // An empty field: no limit of the team's own.
    await form.getByLabel("Webhook deliveries (days)").fill("")
    await form.getByRole("button", { name: "Save retention" }).click()
    await expect.poll(async () => JSON.stringify(await stored())).toBe(JSON.stringify({ run_days: 30 }))
    expect(elsewhere).toEqual([])
    expect(errors.filter((e) => !/status of 400/.test(e))).toEqual([])
    await page.close()
  }, 60_000)

  it("a member sees neither the Members link nor a banner; the page's URL shows the API's refusal", async () => {
    const { page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/`)
    await signIn(page, mia.token)
    await page.getByRole("link", { name: "Audit log" }).waitFor()
    expect(await page.getByRole("link", { name: "Members" }).count()).toBe(0)
    expect(await page.locator(".banner.expiry").count()).toBe(0)
    await page.goto(`${service.base}/app/members`)
    await expect.poll(() => page.getByRole("alert").first().textContent()).toBe(
      "only the team's admins and instance administrators manage its members, service accounts and tokens"
    )
    expect(await page.locator("table.members").count()).toBe(0)
    await page.close()
  }, 60_000)
})
