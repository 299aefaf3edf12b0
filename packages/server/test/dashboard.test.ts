/**
 * The web dashboard in a real browser (Debian's `chromium`, driven by `playwright-core`) against
 * the service on SQLite running the scripted agent, every request that leaves 127.0.0.1 refused
 * and counted: signing in (a wrong token is refused with the API's reason, and a token revoked
 * while signed in asks for a token again, saying why), the runs table and its filters kept in
 * the URL, a run's page with its conversation and timeline, and the app mounted under a prefix.
 * Screenshots of each page at 1280 and 390 px wide go to `dashboard-screenshots/` (not in git).
 */
import { type Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage as openPage, shoot, signIn } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("the dashboard in a browser", () => {
  let service: LocalService
  let base: string
  let adminToken: string
  let browser: Browser
  let succeeded: string
  let failed: string

  beforeAll(async () => {
    service = await startLocalService({ name: "dashboard" })
    base = service.base
    adminToken = service.adminToken
    succeeded = (await service.api.runToEnd("Say hello from the dashboard test")).runId
    failed = (await service.api.runToEnd("Break on purpose\n@fail TOOL_FAILED the tool broke")).runId
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
  })

  it("refuses a wrong token with the API's reason and keeps what was typed", async () => {
    const { elsewhere, errors, page } = await openPage(browser)
    await page.goto(`${base}/app`)
    await page.getByRole("heading", { name: "Agent Runs" }).waitFor()
    await shoot(page, "sign-in")
    await signIn(page, "ar_not-a-real-token")
    const alert = page.getByRole("alert")
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(/token/i)
    expect(await page.getByLabel("API token").inputValue()).toBe("ar_not-a-real-token")
    await shoot(page, "sign-in-refused")
    expect(page.url()).not.toContain("ar_")
    expect(await page.evaluate("sessionStorage.getItem(\"agent-runs.token\")")).toBeNull()
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  it("signs in, lists the runs, filters them in the URL and opens a run", async () => {
    const { elsewhere, errors, page } = await openPage(browser)
    await page.goto(`${base}/app/`)
    await signIn(page, adminToken)
    const rows = page.locator("table.runs tbody tr[data-run-id]")
    await page.locator(`tr[data-run-id="${succeeded}"]`).waitFor()
    expect(await rows.count()).toBe(2)
    // The token is in this tab's sessionStorage, never in the URL.
    expect(page.url()).not.toContain(adminToken)
    expect(await page.evaluate("sessionStorage.getItem(\"agent-runs.token\")")).toBe(adminToken)
    await shoot(page, "runs")

    await page.getByLabel("State").selectOption("FAILED")
    await page.getByRole("button", { name: "Apply filters" }).click()
    await page.waitForURL(/state=FAILED/)
    await expect.poll(() => rows.count()).toBe(1)
    expect(await rows.first().getAttribute("data-run-id")).toBe(failed)
    await shoot(page, "runs-filtered")

    // The filter survives a reload: it is in the URL.
    await page.reload()
    await page.locator(`tr[data-run-id="${failed}"]`).waitFor()
    expect(await page.getByLabel("State").inputValue()).toBe("FAILED")
    expect(await rows.count()).toBe(1)

    // Free text.
    await page.getByLabel("State").selectOption("")
    await page.getByLabel("Search").fill("hello from the dashboard")
    await page.getByRole("button", { name: "Apply filters" }).click()
    await page.waitForURL(/q=hello/)
    await page.locator(`tr[data-run-id="${succeeded}"]`).waitFor()
    expect(await rows.count()).toBe(1)

    // The failed run's page: its state, status and the error.
    await page.goto(`${base}/app/runs/${failed}`)
    await page.getByText("the tool broke").first().waitFor()
    await shoot(page, "run-failed")

    // The succeeded run, opened from the table: the dialogue and the timeline.
    await page.goto(`${base}/app/`)
    await page.getByRole("link", { name: "Say hello from the dashboard test" }).click()
    await page.waitForURL(new RegExp(`/app/runs/${succeeded}$`))
    // The new page's content has the focus (keyboard and screen-reader users start there).
    await expect.poll(() => page.evaluate("document.activeElement.id")).toBe("main")
    const dialogue = page.locator("ol.dialogue")
    await dialogue.getByText("Done: Say hello from the dashboard test").waitFor()
    expect(await page.locator(".message.role-user").first().textContent()).toContain("Say hello from the dashboard test")
    expect(await page.locator("ol.timeline").textContent()).toContain("run_succeeded")
    expect(await page.locator(".state").first().textContent()).toBe("SUCCEEDED")
    // The run's trace id (docs/observability.md), to look it up in a tracing backend.
    expect(await page.locator("dt:text-is('Trace') + dd").textContent()).toMatch(/^[0-9a-f]{32}$/)
    await shoot(page, "run")

    // The back button returns to the table.
    await page.goBack()
    await page.locator(`tr[data-run-id="${succeeded}"]`).waitFor()
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)

  it("creates a run through the UI, watches it live, sends a follow-up, and cancels another run", async () => {
    const { elsewhere, errors, page } = await openPage(browser)
    const calls: Array<string> = []
    page.on("request", (request) => calls.push(new URL(request.url()).pathname))
    await page.goto(`${base}/app/`)
    await signIn(page, adminToken)
    const prompt = page.getByLabel("New run: prompt")

    // A prompt the API refuses: its error beside the field, what was typed kept.
    await prompt.fill("   ")
    await page.getByRole("button", { name: "Start run" }).click()
    await page.locator("#new-prompt-error").waitFor()
    expect(await page.locator("#new-prompt-error").textContent()).toMatch(/^prompt/)
    expect(await prompt.inputValue()).toBe("   ")

    await prompt.fill(
      "Live from the dashboard\n@say first words\n@tool grep {\"q\":\"x\"}\n@artifact PULL_REQUEST feature https://example.invalid/pr/1\n" +
        "@await-followup\n@say all done"
    )
    await page.getByRole("button", { name: "Start run" }).click()
    await page.waitForURL(/\/app\/runs\/[0-9a-f-]{36}$/)
    const runId = page.url().split("/").pop()!
    // The agent said its first words and waits for a follow-up: the page shows them while it runs.
    const dialogue = page.locator("ol.dialogue")
    const agent = dialogue.locator(".message.role-assistant")
    await agent.getByText("first words", { exact: true }).waitFor()
    await page.getByText("(live)").waitFor()
    expect(await page.locator(".state").first().textContent()).toBe("INPROGRESS")
    expect(calls).toContain(`/api/v1/agent/runs/${runId}/events`)
    // The tool call and its result are there, collapsed.
    await agent.getByText("Tool call: grep").waitFor()
    expect(await dialogue.locator("details.tool").first().getAttribute("open")).toBeNull()
    await shoot(page, "run-live")

    await page.getByLabel("Follow-up").fill("hello agent")
    await page.getByRole("button", { name: "Send follow-up" }).click()
    await agent.getByText("received: hello agent", { exact: true }).waitFor()
    await agent.getByText("all done", { exact: true }).waitFor()
    await expect.poll(() => page.locator(".state").first().textContent()).toBe("SUCCEEDED")
    expect(await page.getByLabel("Follow-up").inputValue()).toBe("")
    expect(await page.getByRole("button", { name: "Cancel run" }).count()).toBe(0)
    // The artifact's link, and the transcript's signed link (no token in it) that works without one.
    expect(await page.getByRole("link", { name: "https://example.invalid/pr/1" }).getAttribute("rel")).toBe("noopener noreferrer")
    await page.getByRole("button", { name: "Get the transcript link" }).click()
    const download = page.getByRole("link", { name: /Download the transcript/ })
    await download.waitFor()
    const href = (await download.getAttribute("href"))!
    expect(href.startsWith(`${base}/api/v1/downloads/transcripts/${runId}?`)).toBe(true)
    expect(href).not.toContain(adminToken)
    const transcript = await fetch(href)
    expect(transcript.status).toBe(200)
    expect(await transcript.text()).toContain("all done")
    await shoot(page, "run-followed-up")

    // Another run, cancelled from its page.
    await page.goto(`${base}/app/`)
    await prompt.fill("Cancel me\n@sleep 60000")
    await page.getByRole("button", { name: "Start run" }).click()
    await page.waitForURL(/\/app\/runs\/[0-9a-f-]{36}$/)
    await expect.poll(() => page.locator(".state").first().textContent(), { timeout: 20_000 }).toBe("INPROGRESS")
    await page.getByRole("button", { name: "Cancel run" }).click()
    await expect.poll(() => page.locator(".state").first().textContent(), { timeout: 20_000 }).toBe("CANCELLED")
    await shoot(page, "run-cancelled")
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)

  it("labels every control, shows the keyboard's focus and the one team it is in, and follows the system's dark theme", async () => {
    const { elsewhere, errors, page } = await openPage(browser)
    await page.goto(`${base}/app/`)
    await signIn(page, adminToken)
    await page.locator(`tr[data-run-id="${succeeded}"]`).waitFor()
    for (const route of ["/app/", `/app/runs/${succeeded}`]) {
      await page.goto(`${base}${route}`)
      await page.locator("h1").first().waitFor()
      const unlabelled = await page.evaluate(`[...document.querySelectorAll("input, select, textarea")]
        .filter((control) => control.labels === null || control.labels.length === 0)
        .map((control) => control.outerHTML)`)
      expect(unlabelled, route).toEqual([])
    }
    // The keyboard reaches the skip link first, then the controls, each with a visible outline.
    await page.goto(`${base}/app/`)
    await page.locator(`tr[data-run-id="${succeeded}"]`).waitFor()
    await page.keyboard.press("Tab")
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Skip to content")
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press("Tab")
      const outline = await page.evaluate("getComputedStyle(document.activeElement).outlineStyle + ' ' + getComputedStyle(document.activeElement).outlineWidth")
      expect(outline).toBe("solid 3px")
    }

    // The administrator is in one team: its name in the header, no switcher (dashboard-teams.test.ts has several).
    expect(await page.locator("header .team").textContent()).toBe("Team default")
    expect(await page.getByLabel("Team", { exact: true }).count()).toBe(0)
    expect(await page.locator("header .who").textContent()).toContain("Signed in as admin")

    // Light by default here, dark when the system asks for it.
    const background = () => page.evaluate("getComputedStyle(document.body).backgroundColor")
    expect(await background()).toBe("rgb(255, 255, 255)")
    await page.emulateMedia({ colorScheme: "dark" })
    expect(await background()).toBe("rgb(22, 23, 24)")
    await shoot(page, "runs-dark")
    await page.goto(`${base}/app/runs/${succeeded}`)
    await page.locator("ol.dialogue").waitFor()
    await shoot(page, "run-dark")
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  it("lists the schedules, webhooks, environments, workers and secrets, and opens a webhook's deliveries", async () => {
    const admin = service.api
    const hook = await admin.json<Json>(await admin.call("POST", "/agent/webhooks", { name: "Deploys" }))
    expect((await admin.call("POST", "/agent/automations", {
      name: "Deploy main",
      prompt: "Deploy it",
      trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [hook.uid], payload: { ref: ["main"] } } }
    })).status).toBe(201)
    const ingress = `${base}/webhooks/w/${hook.uid}`
    const deliver = (body: unknown) => fetch(ingress, {
      method: "POST",
      headers: { authorization: `Bearer ${hook.secret}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    expect((await deliver({ ref: "main", note: "<b>not html</b>" })).status).toBe(202)
    expect((await deliver({ ref: "dev" })).status).toBe(202)
    const refused = await fetch(ingress, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    expect(refused.status).toBe(401)
    expect((await admin.call("POST", "/agent/schedules", {
      name: "Nightly", cron_schedule: "0 3 * * *", prompt: "Nightly check", enabled: false
    })).status).toBe(201)

    const { elsewhere, errors, page } = await openPage(browser)
    await page.goto(`${base}/app/`)
    await signIn(page, adminToken)
    const nav = page.getByRole("navigation", { name: "Sections" })

    await nav.getByRole("link", { name: "Schedules" }).click()
    await page.getByRole("cell", { name: "Nightly" }).waitFor()
    expect(await nav.getByRole("link", { name: "Schedules" }).getAttribute("aria-current")).toBe("page")
    await shoot(page, "schedules")

    await nav.getByRole("link", { name: "Webhooks", exact: true }).click()
    await page.getByRole("link", { name: "Deploys" }).click()
    await page.waitForURL(new RegExp(`/app/webhooks/${hook.uid}$`))
    const rows = page.locator("table.deliveries tbody tr[data-delivery-id]")
    await expect.poll(() => rows.count()).toBe(3)
    // Newest first: the refused one, the dev push (no run), the main push (it started a run).
    const outcomes = await page.locator("table.deliveries tbody td:nth-child(2)").allTextContents()
    expect(outcomes).toEqual(["REJECTED_AUTH", "ACCEPTED", "ACCEPTED"])
    const counts = await page.getByRole("list", { name: "Deliveries by outcome" }).textContent()
    expect(counts).toContain("ACCEPTED 2")
    expect(counts).toContain("REJECTED_AUTH 1")
    expect(await rows.nth(1).locator("a.run-link").count()).toBe(0)
    expect(await rows.nth(2).locator("a.run-link").count()).toBe(1)
    // The payload is shown as text, collapsed: nothing from a sender becomes HTML.
    const mainPayload = rows.nth(2).locator("pre")
    expect(await mainPayload.isVisible()).toBe(false)
    await rows.nth(2).locator("summary").click()
    expect(await mainPayload.textContent()).toContain("<b>not html</b>")
    expect(await page.locator("table.deliveries b").count()).toBe(0)
    // The automation's filter tested against the stored deliveries.
    const deliveryIds = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-delivery-id")))
    await page.getByLabel("Automation", { exact: true }).selectOption({ label: "Deploy main" })
    await page.getByLabel("Delivery", { exact: true }).selectOption(deliveryIds[1]!)
    await page.getByRole("button", { name: "Test filter" }).click()
    await page.locator(".verdict").getByText("WOULD_NOT_TRIGGER").waitFor()
    await page.getByLabel("Delivery", { exact: true }).selectOption(deliveryIds[2]!)
    await page.getByRole("button", { name: "Test filter" }).click()
    await page.locator(".verdict").getByText("WOULD_TRIGGER", { exact: true }).waitFor()
    await shoot(page, "webhook-deliveries")

    for (const [name, text] of [["Environments", "No environments."], ["Workers", "No worker is connected."], ["Secrets", "No secrets."]] as const) {
      await nav.getByRole("link", { name }).click()
      await page.getByText(text).waitFor()
      await shoot(page, name.toLowerCase())
    }
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  it("shows an API error beside the control that caused it, keeping the filters", async () => {
    const { elsewhere, page } = await openPage(browser)
    await page.goto(`${base}/app/?q=keep-me&created_after=not-a-time`)
    await signIn(page, adminToken)
    const error = page.locator("#error-created_after")
    await error.waitFor()
    expect(await error.textContent()).toContain("created_after")
    expect(await page.getByLabel("Search").inputValue()).toBe("keep-me")
    await shoot(page, "runs-error")
    expect(elsewhere).toEqual([])
    await page.close()
  }, 60_000)

  it("asks for a token again, saying why, when the token is revoked", async () => {
    const admin = service.api
    const { teams } = await admin.json<Json>(await admin.call("GET", "/admin/teams"))
    const { token, tokenId: token_id } = await admin.principal("Dana", [{ team_uid: teams[0].uid, role: "member" }])
    const { elsewhere, page } = await openPage(browser)
    await page.goto(`${base}/app/`)
    await signIn(page, token)
    // Signed in, and the first page of runs loaded.
    await page.getByText(/\d+ runs on this page/).waitFor()
    expect((await admin.call("DELETE", `/admin/tokens/${token_id}`)).status).toBe(200)
    await page.getByRole("button", { name: "Refresh" }).click()
    const alert = page.getByRole("dialog").getByRole("alert")
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(/^Signed out: /)
    expect(await page.getByLabel("API token").isVisible()).toBe(true)
    expect(await page.evaluate("sessionStorage.getItem(\"agent-runs.token\")")).toBeNull()
    await shoot(page, "signed-out")
    expect(elsewhere).toEqual([])
    await page.close()
  }, 60_000)
})

describe("the dashboard mounted under a prefix", () => {
  let service: LocalService
  let base: string
  let browser: Browser

  beforeAll(async () => {
    service = await startLocalService({ name: "dashboard-mount", mountAt: "/agents" })
    base = service.origin
    await service.api.runToEnd("Mounted hello")
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
  })

  it("loads from a deep link and calls the API under the prefix", async () => {
    const { elsewhere, errors, page } = await openPage(browser)
    const calls: Array<string> = []
    page.on("request", (request) => calls.push(new URL(request.url()).pathname))
    await page.goto(`${base}/agents/app/runs/not-a-run`)
    await signIn(page, service.adminToken)
    await page.getByRole("alert").waitFor()
    await page.getByRole("link", { name: "All runs" }).click()
    await page.getByRole("link", { name: "Mounted hello" }).waitFor()
    expect(new URL(page.url()).pathname).toBe("/agents/app/")
    expect(calls.some((path) => path.startsWith("/agents/api/v1/agent/runs"))).toBe(true)
    expect(calls.filter((path) => !path.startsWith("/agents/"))).toEqual([])
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)
})
