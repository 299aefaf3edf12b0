/**
 * The dashboard's audit log page, in chromium against the service on SQLite: a team admin sees the
 * team's entries as the API lists them (who, what, outcome, from where), filters them (in the URL),
 * pages to older entries and exports them as JSON lines; a member sees the API's refusal.
 */
import { readFileSync } from "node:fs"
import { type Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage, shoot, signIn } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

describe("the dashboard's audit log", () => {
  let service: LocalService
  let browser: Browser
  let member: { uid: string; token: string }

  beforeAll(async () => {
    service = await startLocalService({ name: "dashboard-audit", executor: false })
    const me = await service.api.json<{ default_team_uid: string }>(await service.api.call("GET", "/agent/me"))
    member = await service.api.principal("Mia Member", [{ team_uid: me.default_team_uid, role: "member" }])
    for (const name of ["FIRST_KEY", "SECOND_KEY", "THIRD_KEY"]) {
      expect((await service.api.call("PUT", `/agent/secrets/${name}`, { value: "never shown" })).status).toBe(200)
    }
    // The member tries to: a denied entry.
    const refused = await fetch(`${service.base}/api/v1/agent/secrets/MEMBERS_KEY`, {
      method: "PUT",
      headers: { authorization: `Bearer ${member.token}`, "content-type": "application/json" },
      body: JSON.stringify({ value: "x" })
    })
    expect(refused.status).toBe(403)
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
  })

  it("shows the team's entries as the API lists them, filters them, pages and exports them", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/`)
    await signIn(page, service.adminToken)
    await page.getByRole("link", { name: "Audit log" }).click()
    await page.waitForURL(/\/app\/audit$/)
    const rows = page.locator("table.audit tbody tr[data-entry-id]")
    const listed = await service.api.json<{ entries: Array<{ id: string }> }>(await service.api.call("GET", "/agent/audit-log"))
    await expect.poll(() => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-entry-id")))).toEqual(listed.entries.map((e) => e.id))
    const denied = rows.filter({ hasText: "secret.put" }).filter({ hasText: "denied" })
    expect(await denied.count()).toBe(1)
    expect(await denied.textContent()).toContain("Mia Member")
    expect(await denied.textContent()).toContain("not_authorized")
    await shoot(page, "audit-log")

    // A filter (in the URL): the denied entries only.
    await page.getByLabel("Outcome").selectOption("denied")
    await page.getByRole("button", { name: "Apply filters" }).click()
    await page.waitForURL(/outcome=denied/)
    await expect.poll(() => rows.count()).toBe(1)

    // Pages: the secret writes, through the URL's cursor.
    await page.goto(`${service.base}/app/audit?action=secret.put&outcome=succeeded`)
    await expect.poll(() => rows.count()).toBe(3)
    expect(await page.getByRole("button", { name: "Older entries" }).isDisabled()).toBe(true)

    // The export: every entry the filters select, oldest first, as JSON lines.
    const download = page.waitForEvent("download")
    await page.getByRole("button", { name: "Export (JSON lines)" }).click()
    const file = await (await download).path()
    const exported = readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line) as { action: string; resource: { id: string } })
    expect(exported.map((e) => e.resource.id)).toEqual(["FIRST_KEY", "SECOND_KEY", "THIRD_KEY"])
    expect(readFileSync(file, "utf8")).not.toContain("never shown")
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)

  it("a member sees the API's refusal, nothing of the log", async () => {
    const { page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/audit`)
    await signIn(page, member.token)
    await expect.poll(() => page.getByRole("alert").first().textContent()).toBe("only team admins read the team's audit log")
    expect(await page.locator("table.audit").count()).toBe(0)
    await page.close()
  }, 60_000)
})
