/**
 * The dashboard's outbound webhooks in a real browser (Debian's `chromium`, driven by
 * `playwright-core`) against the service on SQLite running the scripted agent, with a receiver on
 * loopback that checks signatures: an admin adds an endpoint and sees its secret once; a run's
 * events arrive signed and the endpoint's page lists them as delivered; Redeliver sends one again
 * under the same id; turning the endpoint off shows it, and a delivery after that fails. Screenshots
 * go to `dashboard-screenshots/` (not in git).
 */
import { eventually, Receiver } from "@agent-runs/testing"
import { type Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage, shoot, signIn } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

describe("the dashboard's outbound webhooks in a browser", () => {
  let service: LocalService
  let browser: Browser
  const receiver = new Receiver()

  beforeAll(async () => {
    service = await startLocalService({ name: "dashboard-outbound" })
    await receiver.start()
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
    await receiver.kill()
  })

  it("adds an endpoint, shows its secret once and its deliveries; redelivers one; turns it off", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/`)
    await signIn(page, service.adminToken)
    await page.getByRole("link", { name: "Outbound webhooks" }).click()
    await page.getByRole("heading", { name: "Outbound webhooks" }).waitFor()
    await page.getByText("No endpoints.").waitFor()

    const form = page.getByRole("form", { name: "Add an endpoint" })
    await form.getByLabel("URL").fill(receiver.url)
    await form.getByLabel("Name (optional)").fill("alerts")
    await form.getByLabel("run.created").check()
    await form.getByRole("button", { name: "Add endpoint" }).click()
    const secret = await page.getByLabel("Signing secret").inputValue()
    expect(secret).toMatch(/^whsec_/)
    receiver.secrets = [secret]
    const row = page.getByRole("row").filter({ hasText: receiver.url })
    await row.waitFor()
    expect(await row.textContent()).toContain("run.created, run.succeeded, run.failed")
    expect(await row.getByRole("cell").first().textContent()).toBe("alerts")

    // A run: its creation and its end arrive, signed.
    const run = await service.api.runToEnd("@say hello")
    expect(await eventually(() => receiver.distinct().some((r) => r.body.type === "run.succeeded"))).toBe(true)
    expect(receiver.badSignatures).toBe(0)
    expect(receiver.distinct().map((r) => r.body.type)).toEqual(["run.created", "run.succeeded"])

    await row.getByRole("link").click()
    await page.getByRole("heading", { name: "Outbound webhook" }).waitFor()
    expect(await page.locator("dl.facts").textContent()).toContain("Namealerts")
    const delivered = page.locator("tr[data-state=delivered]")
    await expect.poll(() => delivered.count()).toBe(2)
    expect(await page.getByRole("table", { name: "Deliveries" }).textContent()).toContain(run.runId.slice(0, 8))
    await shoot(page, "outbound-webhook")

    // Redeliver the creation: the receiver gets it again, same webhook-id.
    const created = receiver.distinct().find((r) => r.body.type === "run.created")!
    await page.getByRole("button", { name: `Redeliver ${created.id}` }).click()
    await page.getByRole("status").filter({ hasText: "Queued run.created again." }).waitFor()
    expect(await eventually(() => receiver.accepted.filter((r) => r.id === created.id).length === 2)).toBe(true)

    // The Overview draws the endpoint's deliveries by state, as the API counts them; a click opens them.
    await page.getByRole("link", { name: "Overview" }).click()
    const health = await service.api.json<{ endpoints: Array<Record<string, number>> }>(
      await service.api.call("GET", "/agent/team/outbound-webhook-health?hours=24")
    )
    const canvas = page.getByRole("img", { name: "Outbound webhook deliveries by endpoint and state" })
    await canvas.waitFor()
    await expect.poll(() => canvas.getAttribute("data-figures")).not.toBeNull()
    const figures = JSON.parse((await canvas.getAttribute("data-figures"))!) as Array<{ label: string; data: Array<number> }>
    expect(figures.map((f) => [f.label, f.data])).toEqual(
      ["delivered", "failed", "pending"].map((state) => [state, health.endpoints.map((e) => e[state])])
    )
    expect(health.endpoints[0]!["delivered"]).toBe(2)
    const area = JSON.parse((await canvas.getAttribute("data-area"))!) as { left: number; right: number; top: number; bottom: number }
    await canvas.click({ position: { x: area.left + 4, y: (area.top + area.bottom) / 2 } })
    await page.waitForURL(/\/app\/outbound\/[A-Za-z0-9]{22}\?state=delivered$/)
    await expect.poll(() => page.locator("tr[data-state=delivered]").count()).toBe(2)

    // Turned off: the page says so; a new run is not sent.
    await page.getByRole("button", { name: "Turn off" }).click()
    await page.getByRole("button", { name: "Turn on" }).waitFor()
    expect(await page.locator("dl.facts").textContent()).toContain("off")
    const before = receiver.requests
    await service.api.runToEnd("@say again")
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(receiver.requests).toBe(before)
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
  }, 90_000)
})
