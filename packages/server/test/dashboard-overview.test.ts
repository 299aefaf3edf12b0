/**
 * The dashboard's Overview page in a real browser (Debian's `chromium`, driven by `playwright-core`)
 * against the service on SQLite running the scripted agent: the charts (Chart.js, on canvases) draw
 * the API's figures (`GET /agent/team/overview`, `GET /agent/team/spend`), the table beside them has
 * the same, and a click on the runs chart opens the runs table filtered to what was clicked, which
 * lists as many runs as the chart drew. Screenshots go to `dashboard-screenshots/` (not in git).
 */
import { type Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage, shoot, signIn } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const SEGMENTS = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED", "BLOCKED", "live"]

describe("the dashboard's overview in a browser", () => {
  let service: LocalService
  let browser: Browser

  beforeAll(async () => {
    service = await startLocalService({ name: "dashboard-overview" })
    for (const prompt of ["@say one", "@say two", "@spend 0.5\n@say three", "@fail some_code it broke on purpose"]) {
      await service.api.runToEnd(prompt)
    }
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
  })

  it("draws the API's figures, and a click on the runs chart opens the runs it drew", async () => {
    // Not across the turn of an hour: the page and the API below would read different windows.
    const toNextHour = 3_600_000 - (Date.now() % 3_600_000)
    if (toNextHour < 20_000) await new Promise((resolve) => setTimeout(resolve, toNextHour + 1_000))
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/overview`)
    await signIn(page, service.adminToken)
    const overview = await service.api.json<Json>(await service.api.call("GET", "/agent/team/overview?hours=24"))
    const spend = await service.api.json<Json>(await service.api.call("GET", "/agent/team/spend?days=14"))
    const figures = async (label: string) => {
      const canvas = page.getByRole("img", { name: label })
      await canvas.waitFor()
      await expect.poll(() => canvas.getAttribute("data-figures")).not.toBeNull()
      return JSON.parse((await canvas.getAttribute("data-figures"))!) as Array<{ label: string; data: Array<number | null> }>
    }
    const runs = await figures("Runs created per hour, by state")
    expect(runs.map((d) => d.label)).toEqual(SEGMENTS)
    for (const d of runs) expect(d.data).toEqual(overview.hours.map((h: Json) => h[d.label]))
    expect(runs.flatMap((d) => d.data).reduce((sum: number, n) => sum + n!, 0)).toBe(4)
    const times = await figures("Wait before the agent starts and run duration per hour")
    expect(times[0]!.data).toEqual(overview.hours.map((h: Json) => h.queue_wait_seconds.p50))
    expect(times[3]!.data).toEqual(overview.hours.map((h: Json) => h.run_duration_seconds.p90))
    const cost = await figures("Spend per day")
    expect(cost[0]!.data.reduce((sum: number, n) => sum + n!, 0)).toBeCloseTo(spend.total_cost_usd)
    expect(spend.total_cost_usd).toBeCloseTo(0.5)
    // The table: the hours with runs, their counts.
    const table = page.getByRole("table", { name: "Runs per hour" })
    for (const hour of overview.hours.filter((h: Json) => h.created > 0)) {
      const row = table.getByRole("row").filter({ hasText: `${hour.hour.slice(5, 10)} ${hour.hour.slice(11, 16)}` })
      expect(await row.locator("td").nth(1).textContent()).toBe(String(hour.created))
      expect(await row.locator("td").nth(2).textContent()).toBe(String(hour.SUCCEEDED))
    }
    await shoot(page, "overview")

    // A click in the column of the last hour with runs, within the plot: its bar's segment (a state), or the whole hour.
    const canvas = page.getByRole("img", { name: "Runs created per hour, by state" })
    const area = JSON.parse((await canvas.getAttribute("data-area"))!) as { left: number; right: number; top: number; bottom: number }
    const column = overview.hours.findLastIndex((h: Json) => h.created > 0)
    const width = (area.right - area.left) / overview.hours.length
    await canvas.click({ position: { x: area.left + (column + 0.5) * width, y: area.top + (area.bottom - area.top) * 0.6 } })
    await page.waitForURL(/\/app\/\?created_after=/)
    const query = new URL(page.url()).searchParams
    const hour = overview.hours[column]
    expect(Date.parse(query.get("created_after")!)).toBe(Date.parse(hour.hour) - 1)
    const states = query.getAll("state")
    const expected = states.length === 0 ? hour.created : SEGMENTS.filter((s) => s === states[0]).reduce((n, s) => n + hour[s], 0)
    expect(expected).toBeGreaterThan(0)
    await expect.poll(() => page.locator("table.runs tbody tr[data-run-id]").count()).toBe(expected)
    // The same without a mouse: the table's hour links to all of that hour's runs.
    await page.goBack()
    await page.getByRole("table", { name: "Runs per hour" }).getByRole("link", { name: `${hour.hour.slice(5, 10)} ${hour.hour.slice(11, 16)}` }).click()
    await page.waitForURL(/\/app\/\?created_after=/)
    await expect.poll(() => page.locator("table.runs tbody tr[data-run-id]").count()).toBe(hour.created)
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)
})
