/**
 * The service's pages work offline: in a real browser (Debian's `chromium`, driven by
 * `playwright-core`), `/`, `/docs` and `/docs/errors` render while every request that leaves
 * 127.0.0.1 is refused, and none is made.
 */
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { freePort } from "@agent-runs/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Browser, chromium } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Listen } from "../src/index.js"

/** Debian's chromium (`.ci/run` installs it when missing). */
const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"

describe("the service's pages in a browser without the internet", () => {
  const scope = Effect.runSync(Scope.make())
  let dir: string
  let base: string
  let browser: Browser

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "agent-runs-offline-"))
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    const secretKey = new Uint8Array(randomBytes(32))
    await Effect.runPromise(Layer.buildWithScope(
      Listen.layer({
        storage: SqliteStorage.layer({ filename: join(dir, "agent-runs.db"), secretKey }),
        blobs: FileBlobStore.layer({ root: join(dir, "blobs") }),
        secretKey,
        publicUrl: base,
        adminToken: `ar_${randomBytes(32).toString("base64url")}`
      }, { port }),
      scope
    ))
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(dir, { recursive: true, force: true })
  })

  it.each([
    ["/", "Agent Runs"],
    ["/docs", "Agent Runs API"],
    ["/docs/errors", "method_not_allowed"]
  ])("%s renders and fetches nothing from elsewhere", async (path, text) => {
    const page = await browser.newPage()
    const elsewhere: Array<string> = []
    await page.route("**/*", (route) => {
      const url = new URL(route.request().url())
      if (url.hostname === "127.0.0.1") return route.continue()
      elsewhere.push(url.href)
      return route.abort()
    })
    await page.goto(`${base}${path}`, { waitUntil: "networkidle" })
    await page.getByText(text).first().waitFor({ state: "visible", timeout: 30_000 })
    expect(elsewhere).toEqual([])
    await page.close()
  }, 60_000)
})
