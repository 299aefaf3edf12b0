/**
 * The dashboard's factory actions in a real browser (Debian's `chromium`, driven by
 * `playwright-core`) against the service on SQLite, every request that leaves 127.0.0.1 refused
 * and counted, console errors counted: a schedule's cron in words and its next 5 fire times (those
 * the API previews), Pause then Resume, Run now (the run listed in the schedule's recent runs and
 * in the run list, a viewer's refusal shown beside the button), and an automation's filter tested
 * with a pasted payload both ways, text that is not JSON refused beside its textarea without a
 * call; the schedule list asks for the words of each distinct expression and zone once per page
 * load, however many rows share it. Screenshots at 1280 and 390 px wide go to
 * `dashboard-screenshots/` (not in git).
 */
import { type Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage, shoot, signIn } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("the dashboard's factory actions in a browser", () => {
  let service: LocalService
  let browser: Browser
  let schedule: string
  let webhook: string
  let viewerToken: string

  beforeAll(async () => {
    // Runs are not executed: a run started by hand stays QUEUED, which is all these tests read.
    service = await startLocalService({ name: "dashboard-factory", executor: false })
    const api = service.api
    schedule = (await api.json<Json>(await api.call("POST", "/agent/schedules", {
      name: "Weekday standup", cron_schedule: "0 9 * * 1-5", timezone: "Europe/Paris", prompt: "Summarize yesterday", enabled: true, team: true
    }))).id
    webhook = (await api.json<Json>(await api.call("POST", "/agent/webhooks", { name: "GitHub" }))).uid
    expect((await api.call("POST", "/agent/automations", {
      name: "Opened PRs",
      prompt: "Review it",
      trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [webhook], payload: { action: ["opened"] } } }
    })).status).toBe(201)
    const { teams } = await api.json<Json>(await api.call("GET", "/admin/teams"))
    viewerToken = (await api.principal("Vic Viewer", [{ team_uid: teams[0].uid, role: "viewer" }])).token
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
  })

  it("shows a schedule in words with its next 5 fire times, pauses and resumes it, and runs it now", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/schedules`)
    await signIn(page, service.adminToken)
    const row = page.locator(`tr[data-schedule-id="${schedule}"]`)
    await row.locator(".cron-words").getByText("at 09:00 on Monday through Friday").waitFor()
    expect(await row.locator("code").textContent()).toBe("0 9 * * 1-5")
    await shoot(page, "factory-schedules")

    await row.getByRole("link", { name: "Weekday standup" }).click()
    await page.waitForURL(new RegExp(`/app/schedules/${schedule}$`))
    await page.getByRole("heading", { name: "Weekday standup" }).waitFor()
    await page.locator("dd .cron-words").getByText("at 09:00 on Monday through Friday").waitFor()
    // The next 5 fire times are those the API previews (09:00 in Paris, on weekdays).
    const times = page.locator("ol.fire-times time")
    await expect.poll(() => times.count()).toBe(5)
    const shown = await times.evaluateAll((elements) => elements.map((e) => e.getAttribute("datetime")))
    const preview = await service.api.json<Json>(await service.api.call("POST", "/agent/schedules/preview", {
      cron_schedule: "0 9 * * 1-5", timezone: "Europe/Paris"
    }))
    expect(shown).toEqual(preview.next_runs)
    for (const time of shown) {
      const paris = new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Paris", weekday: "short", hour: "2-digit", minute: "2-digit" })
        .format(new Date(time!))
      expect(paris).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/)
    }
    const state = page.locator("dd.schedule-state")
    expect(await state.textContent()).toBe("active")
    expect(await page.getByRole("table", { name: "Recent runs" }).getByText("No run yet.").count()).toBe(1)

    // Pause, then Resume: the page reads the schedule again after each.
    await page.getByRole("button", { name: "Pause" }).click()
    await expect.poll(() => state.textContent()).toBe("paused")
    expect((await service.api.json<Json>(await service.api.call("GET", `/agent/schedules/${schedule}`))).enabled).toBe(false)
    await shoot(page, "factory-schedule-paused")
    await page.getByRole("button", { name: "Resume" }).click()
    await expect.poll(() => state.textContent()).toBe("active")
    expect((await service.api.json<Json>(await service.api.call("GET", `/agent/schedules/${schedule}`))).enabled).toBe(true)

    // Run now: the run is listed in the schedule's recent runs, and links to its page.
    await page.getByRole("button", { name: "Run now" }).click()
    const started = page.getByRole("status").filter({ hasText: "Started run" })
    await started.waitFor()
    const recent = page.locator("table.recent-runs tbody tr[data-run-id]")
    await expect.poll(() => recent.count()).toBe(1)
    const runId = (await recent.first().getAttribute("data-run-id"))!
    const run = await service.api.json<Json>(await service.api.call("GET", `/agent/runs/${runId}`))
    expect(run.schedule.schedule_id).toBe(schedule)
    expect(run.metadata).toEqual({ manual: "true" })
    expect(await started.getByRole("link").getAttribute("href")).toContain(`/app/runs/${runId}`)
    await shoot(page, "factory-schedule")

    // The run list filtered by the schedule shows it; its link opens the run's page.
    await page.getByRole("link", { name: "All its runs" }).click()
    await page.waitForURL(new RegExp(`schedule_id=${schedule}`))
    await page.locator(`tr[data-run-id="${runId}"]`).waitFor()
    await page.goBack()
    await page.locator(`table.recent-runs a[href$="/app/runs/${runId}"]`).click()
    await page.waitForURL(new RegExp(`/app/runs/${runId}$`))
    await page.getByRole("heading", { name: "Summarize yesterday" }).waitFor()

    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)

  it("shows a refused Run now beside its button (a viewer), and starts nothing", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    const before = (await service.api.json<Json>(await service.api.call("GET", `/agent/runs?schedule_id=${schedule}`))).runs.length
    await page.goto(`${service.base}/app/schedules/${schedule}`)
    await signIn(page, viewerToken)
    await page.getByRole("heading", { name: "Weekday standup" }).waitFor()
    await page.getByRole("button", { name: "Run now" }).click()
    const error = page.locator("#schedule-run-error")
    await error.waitFor()
    expect(await error.textContent()).toContain("viewers")
    expect(await page.getByRole("button", { name: "Run now" }).getAttribute("aria-describedby")).toBe("schedule-run-error")
    expect((await service.api.json<Json>(await service.api.call("GET", `/agent/runs?schedule_id=${schedule}`))).runs.length).toBe(before)
    await shoot(page, "factory-schedule-refused")
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  it("tests an automation's filter with a pasted payload both ways; text that is not JSON is refused beside it", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    const filterCalls: Array<string> = []
    page.on("request", (request) => {
      if (request.url().includes("/test-filter")) filterCalls.push(request.postData() ?? "")
    })
    await page.goto(`${service.base}/app/webhooks/${webhook}`)
    await signIn(page, service.adminToken)
    await page.getByLabel("Automation", { exact: true }).selectOption({ label: "Opened PRs" })
    const payload = page.getByLabel("Payload (JSON)")
    const verdict = page.locator(".verdict")

    await payload.fill(JSON.stringify({ action: "opened", number: 7 }, null, 2))
    await page.getByRole("button", { name: "Test payload" }).click()
    await verdict.getByText("WOULD_TRIGGER", { exact: true }).waitFor()
    expect(JSON.parse(filterCalls[0]!)).toEqual({ payload: { action: "opened", number: 7 } })

    await payload.fill("{\"action\": \"closed\"}")
    await page.getByRole("button", { name: "Test payload" }).click()
    await verdict.getByText("WOULD_NOT_TRIGGER").waitFor()
    expect(await verdict.textContent()).toContain("payload.action")
    await shoot(page, "factory-test-payload")

    // Not JSON: the error is beside the textarea, the textarea marked invalid, and the API is not called.
    await payload.fill("{\"action\": opened")
    await page.getByRole("button", { name: "Test payload" }).click()
    const error = page.locator("#test-payload-error")
    await error.waitFor()
    expect(await error.textContent()).toContain("not valid JSON")
    expect(await payload.getAttribute("aria-invalid")).toBe("true")
    expect(await payload.getAttribute("aria-describedby")).toBe("test-payload-error")
    expect(await verdict.count()).toBe(0)
    expect(filterCalls).toHaveLength(2)
    // The page asks for the body alone: filters read nothing else.
    expect(await page.getByLabel(/headers/i).count()).toBe(0)
    await shoot(page, "factory-test-payload-invalid")

    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  it("the schedule list previews each distinct expression and zone once per page load, however many rows share it", async () => {
    const api = service.api
    for (const [name, cron_schedule, timezone] of [
      ["Weekday standup, again", "0 9 * * 1-5", "Europe/Paris"],
      ["Weekday standup in UTC", "0 9 * * 1-5", "UTC"],
      ["Friday wrap-up", "30 17 * * 5", "UTC"],
      ["Friday wrap-up, again", "30 17 * * 5", "UTC"]
    ]) {
      expect((await api.call("POST", "/agent/schedules", { name, cron_schedule, timezone, prompt: "Work", enabled: true, team: true })).status)
        .toBe(201)
    }
    const { elsewhere, errors, page } = await openLocalPage(browser)
    const asked: Array<Json> = []
    page.on("request", (request) => {
      if (request.url().endsWith("/agent/schedules/preview")) asked.push(JSON.parse(request.postData() ?? "null"))
    })
    const words = (count: number) => asked.filter((body) => body.count === count).map((body) => `${body.cron_schedule} ${body.timezone}`).sort()
    await page.goto(`${service.base}/app/schedules`)
    await signIn(page, service.adminToken)
    await expect.poll(() => page.locator("td .cron-words").count()).toBe(5)
    expect(await page.locator("td .cron-words").allTextContents()).toContain("at 17:30 on Friday")
    expect(words(1)).toEqual(["0 9 * * 1-5 Europe/Paris", "0 9 * * 1-5 UTC", "30 17 * * 5 UTC"])

    // A schedule's page reads its own preview (its fire times move with the clock); back on the
    // list, the words are those already read.
    await page.getByRole("link", { name: "Friday wrap-up", exact: true }).click()
    await page.locator("ol.fire-times li").first().waitFor()
    await page.getByRole("link", { name: "← All schedules" }).click()
    await expect.poll(() => page.locator("td .cron-words").count()).toBe(5)
    expect(words(1)).toHaveLength(3)
    expect(words(5)).toEqual(["30 17 * * 5 UTC"])

    // Another page load asks again.
    await page.reload()
    await expect.poll(() => page.locator("td .cron-words").count()).toBe(5)
    expect(words(1)).toHaveLength(6)
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)
})
