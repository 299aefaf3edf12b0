/**
 * Test support: Debian's `chromium` driven by `playwright-core` (`.ci/run` installs it when
 * missing; nothing is downloaded), pages that refuse and record every request leaving 127.0.0.1
 * and record console errors (CSP violations among them), screenshots at the dashboard's two
 * widths, and signing in to the dashboard.
 */
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, chromium, type Page } from "playwright-core"

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"
const SCREENSHOTS = fileURLToPath(new URL("../../../../dashboard-screenshots/", import.meta.url))
const WIDTHS = [1280, 390] as const

/** A browser process; close it in `afterAll`. */
export const launchBrowser = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })

export interface LocalPage {
  readonly page: Page
  /** Every request that tried to leave 127.0.0.1 (each was aborted). */
  readonly elsewhere: Array<string>
  /** Console errors and uncaught page errors, except refused API calls (400, 401, 403, 404), which tests expect. */
  readonly errors: Array<string>
}

/** A new page, 1280 × 900, that reaches only 127.0.0.1 (and `data:` URLs). */
export const openLocalPage = async (browser: Browser): Promise<LocalPage> => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  const elsewhere: Array<string> = []
  const errors: Array<string> = []
  await page.route("**/*", (route) => {
    const url = new URL(route.request().url())
    if (url.hostname === "127.0.0.1" || url.protocol === "data:") return route.continue()
    elsewhere.push(url.href)
    return route.abort()
  })
  page.on("console", (message) => {
    if (message.type() === "error" && !/status of (400|401|403|404)/.test(message.text())) errors.push(message.text())
  })
  page.on("pageerror", (error) => errors.push(error.message))
  return { page, elsewhere, errors }
}

/** Screenshots of the page as it is at each width, into `dashboard-screenshots/<name>-<width>.png` (ignored by git). */
export const shoot = async (page: Page, name: string): Promise<void> => {
  mkdirSync(SCREENSHOTS, { recursive: true })
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 })
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true })
  }
  await page.setViewportSize({ width: 1280, height: 900 })
}

/** Signs in on the dashboard's sign-in page with `token`. */
export const signIn = async (page: Page, token: string): Promise<void> => {
  await page.getByLabel("API token").fill(token)
  await page.getByRole("button", { name: "Sign in" }).click()
}
