/**
 * The dashboard's Spend page and a run's spend in a real browser (Debian's `chromium`, driven by
 * `playwright-core`) against the service on SQLite running the scripted agent: the figures drawn
 * are the API's (`GET /agent/team/spend`), a team admin changes the team's budgets in the form (the
 * API then answers them) and a run's page shows what it spent of its budget; a viewer sees the
 * budgets without a form. Screenshots go to `dashboard-screenshots/` (not in git).
 */
import { type Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage, shoot, signIn } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("the dashboard's spend in a browser", () => {
  let service: LocalService
  let browser: Browser
  let within: string
  let viewerToken: string

  beforeAll(async () => {
    service = await startLocalService({ name: "dashboard-spend" })
    const api = service.api
    // The team's default budget: the runs below get it.
    expect((await api.call("PUT", "/agent/team/budgets", { default_max_cost_usd: 1 })).status).toBe(200)
    within = (await api.runToEnd("Spend a little\n@spend 0.25")).runId
    const past = await api.runToEnd(`Spend too much\n@spend 1.5\n@sleep 600000`)
    expect(past.state).toBe("FAILED")
    const { teams } = await api.json<Json>(await api.call("GET", "/admin/teams"))
    viewerToken = (await api.principal("Vic Viewer", [{ team_uid: teams[0].uid, role: "viewer" }])).token
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
  })

  it("draws the API's spend by day, and lets an admin change the team's budgets", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/spend`)
    await signIn(page, service.adminToken)
    const spend = await service.api.json<Json>(await service.api.call("GET", "/agent/team/spend?days=30"))
    const table = page.getByRole("table", { name: "Spend by day" })
    for (const day of spend.days) {
      const row = table.getByRole("row").filter({ hasText: day.day })
      await row.waitFor()
      expect(await row.locator("td").nth(1).textContent()).toBe(String(day.runs))
      expect(await row.locator("td").nth(2).textContent()).toBe(`$${day.cost_usd.toFixed(2)}`)
    }
    expect(spend.total_cost_usd).toBeCloseTo(1.75)
    expect(await table.locator("tfoot td").nth(1).textContent()).toBe("$1.75")

    await page.getByLabel("Ceiling of max cost (USD)").fill("20")
    await page.getByLabel("Default max turns").fill("30")
    await page.getByRole("button", { name: "Save budgets" }).click()
    await page.getByRole("status").filter({ hasText: "Saved" }).waitFor()
    expect(await service.api.json<Json>(await service.api.call("GET", "/agent/team/budgets")))
      .toEqual({ default_max_cost_usd: 1, max_cost_usd: 20, default_max_turns: 30 })
    // A default above its ceiling: the API's reason beside the form, nothing changed.
    await page.getByLabel("Default max cost (USD)").fill("50")
    await page.getByRole("button", { name: "Save budgets" }).click()
    await page.getByRole("alert").filter({ hasText: "default_max_cost_usd" }).waitFor()
    expect((await service.api.json<Json>(await service.api.call("GET", "/agent/team/budgets"))).default_max_cost_usd).toBe(1)
    await shoot(page, "spend")

    // A run's page: what it spent of its budget (the team's default when it was created).
    await page.goto(`${service.base}/app/runs/${within}`)
    const spent = page.locator("dl.facts div").filter({ hasText: "Spent" }).locator("dd")
    await expect.poll(() => spent.textContent()).toBe("$0.25 of $1.00")
    expect(elsewhere).toEqual([])
    expect(errors.filter((e) => !e.includes("400"))).toEqual([])
    await page.close()
  }, 90_000)

  it("shows a viewer the budgets without a form", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/spend`)
    await signIn(page, viewerToken)
    await page.getByRole("table", { name: "Spend by day" }).waitFor()
    await page.locator("dl.facts").getByText("Default max cost (USD)").waitFor()
    expect(await page.getByRole("button", { name: "Save budgets" }).count()).toBe(0)
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)
})
