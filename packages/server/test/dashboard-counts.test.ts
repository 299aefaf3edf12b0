/**
 * The runs page's counts by state and a run's transcript link, in chromium against the service on
 * SQLite running the scripted agent (test/support/): the counts shown are the API's
 * (`GET /agent/run-counts`), a count filters the table by its state, the other filters narrow
 * the counts, auto-refresh updates them; the transcript downloads through its signed link by
 * navigation, also from a page whose origin is not the service's public URL (the page's CSP,
 * `connect-src 'self'`, would refuse a fetch there).
 */
import { readFileSync } from "node:fs"
import { type Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage, shoot, signIn } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

const STATES = ["QUEUED", "PENDING", "CLAIMED", "INPROGRESS", "SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"] as const

interface RunCounts {
  readonly counts: Record<(typeof STATES)[number], number>
  readonly total: number
}

describe("the dashboard's counts by state and transcript link", () => {
  let service: LocalService
  let browser: Browser
  let succeeded: Array<string>
  let failed: string

  beforeAll(async () => {
    service = await startLocalService({ name: "dashboard-counts" })
    succeeded = [
      (await service.api.runToEnd("Count me: alpha")).runId,
      (await service.api.runToEnd("Count me: beta")).runId
    ]
    failed = (await service.api.runToEnd("Count me: broken\n@fail TOOL_FAILED the tool broke")).runId
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
  })

  const apiCounts = async (query = ""): Promise<RunCounts> =>
    service.api.json<RunCounts>(await service.api.call("GET", `/agent/run-counts${query}`))

  it("shows the API's counts by state; a count filters the table, the other filters narrow the counts, auto-refresh updates them", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/`)
    await signIn(page, service.adminToken)
    const counts = page.getByRole("navigation", { name: "Run counts" })
    const count = (name: string) => counts.getByRole("link", { name, exact: true })
    const rows = page.locator("table.runs tbody tr[data-run-id]")
    await count("All 3").waitFor()

    // Every state is shown with the number the API counts.
    const expected = await apiCounts()
    expect(expected.counts).toMatchObject({ SUCCEEDED: 2, FAILED: 1, QUEUED: 0 })
    for (const state of STATES) expect(await count(`${state} ${expected.counts[state]}`).count(), state).toBe(1)
    expect(await count("All 3").getAttribute("aria-current")).toBe("true")
    await shoot(page, "runs-counts")

    // A count filters the table by its state (in the URL, in the form); the counts stay those of every state.
    await count("SUCCEEDED 2").click()
    await page.waitForURL(/state=SUCCEEDED/)
    await expect.poll(async () => (await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-run-id")))).sort())
      .toEqual([...succeeded].sort())
    expect(await page.getByLabel("State").inputValue()).toBe("SUCCEEDED")
    expect(await count("SUCCEEDED 2").getAttribute("aria-current")).toBe("true")
    expect(await count("All 3").getAttribute("aria-current")).toBeNull()
    await count("FAILED 1").click()
    await page.waitForURL(/state=FAILED/)
    await expect.poll(() => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-run-id")))).toEqual([failed])

    // Another filter narrows the counts as it narrows the list; "All" drops the state filter only.
    await page.getByLabel("Search").fill("alpha")
    await page.getByRole("button", { name: "Apply filters" }).click()
    await page.waitForURL(/q=alpha/)
    await count("All 1").waitFor()
    expect((await apiCounts("?q=alpha")).total).toBe(1)
    expect(await count("SUCCEEDED 1").count()).toBe(1)
    expect(await count("FAILED 0").count()).toBe(1)
    await count("All 1").click()
    await page.waitForURL((url) => !url.searchParams.has("state") && url.searchParams.get("q") === "alpha")
    await expect.poll(() => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-run-id")))).toEqual([succeeded[0]])
    await shoot(page, "runs-counts-filtered")

    // Auto-refresh reads the counts again with the table.
    await page.getByRole("button", { name: "Clear" }).click()
    await count("All 3").waitFor()
    await page.getByLabel(/Auto-refresh/).check()
    await service.api.runToEnd("Count me: gamma")
    await count("All 4").waitFor({ timeout: 20_000 })
    expect(await count("SUCCEEDED 3").count()).toBe(1)
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)

  it("downloads the transcript by navigating to its signed link, from a page on another origin than the public URL", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    // The same service reached as localhost: the page's origin is not its public URL (127.0.0.1).
    const other = service.base.replace("127.0.0.1", "localhost")
    await page.route(`${other}/**`, (route) => route.continue())
    const fetched: Array<string> = []
    page.on("request", (request) => {
      if (request.resourceType() === "fetch") fetched.push(request.url())
    })
    await page.goto(`${other}/app/runs/${succeeded[0]}`)
    await signIn(page, service.adminToken)
    await page.getByRole("button", { name: "Get the transcript link" }).click()
    const link = page.getByRole("link", { name: /Download the transcript/ })
    await link.waitFor()
    const href = (await link.getAttribute("href"))!
    expect(href.startsWith(`${service.base}/api/v1/downloads/transcripts/${succeeded[0]}?`)).toBe(true)
    expect(href).not.toContain(service.adminToken)
    expect(await link.locator("time").getAttribute("datetime")).toMatch(/^\d{4}-\d\d-\d\dT/)
    await shoot(page, "run-transcript-link")

    const [download] = await Promise.all([page.waitForEvent("download"), link.click()])
    expect(download.url()).toBe(href)
    const saved = readFileSync((await download.path())!, "utf8")
    expect(saved).toBe(await (await fetch(href)).text())
    expect(saved.length).toBeGreaterThan(0)
    // The page fetched only its own origin (the API), never the download.
    expect(fetched.filter((url) => !url.startsWith(`${other}/`))).toEqual([])
    expect(fetched).toContain(`${other}/api/v1/agent/runs/${succeeded[0]}/transcript-link`)
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)
})
