/**
 * The service's pages work offline: in a real browser (Debian's `chromium`, driven by
 * `playwright-core`), `/`, `/docs` and `/docs/errors` render while every request that leaves
 * 127.0.0.1 is refused, and none is made.
 */
import { type Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

describe("the service's pages in a browser without the internet", () => {
  let service: LocalService
  let browser: Browser

  beforeAll(async () => {
    service = await startLocalService({ name: "offline", executor: false })
    browser = await launchBrowser()
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
  })

  it.each([
    ["/", "Agent Runs"],
    ["/docs", "Agent Runs API"],
    ["/docs/errors", "method_not_allowed"]
  ])("%s renders and fetches nothing from elsewhere", async (path, text) => {
    const { elsewhere, page } = await openLocalPage(browser)
    await page.goto(`${service.base}${path}`, { waitUntil: "networkidle" })
    await page.getByText(text).first().waitFor({ state: "visible", timeout: 30_000 })
    expect(elsewhere).toEqual([])
    await page.close()
  }, 60_000)
})
