/**
 * The dashboard's file serving (`Dashboard.ts`) on a directory of its own: a link in the built
 * directory that points out of it is not served (the file it names stays unread), and a mount
 * prefix is written into `index.html` as it is, `$` patterns included, and a root that is a link
 * switched to another release serves the new release's files.
 */
import { HttpApp } from "@effect/platform"
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { dashboard, withBase } from "../src/Dashboard.js"

const scratch = mkdtempSync(join(tmpdir(), "agent-runs-dashboard-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const INDEX = `<!doctype html><html lang="en"><head><title>app</title></head><body></body></html>`

/** A built directory beside a secret file, with links from inside to the secret. */
const builtDir = () => {
  const dir = join(scratch, "app")
  const secret = join(scratch, "server-secret.txt")
  mkdirSync(join(dir, "assets"), { recursive: true })
  writeFileSync(join(dir, "index.html"), INDEX)
  writeFileSync(join(dir, "assets", "app-1234.js"), "console.log('app')")
  writeFileSync(secret, "the server's secret")
  symlinkSync(secret, join(dir, "assets", "leak-1234.js"))
  symlinkSync(secret, join(dir, "leak.txt"))
  symlinkSync(scratch, join(dir, "up"))
  return dir
}

describe("the dashboard's files", () => {
  const handler = HttpApp.toWebHandler(dashboard("", builtDir()))
  const get = async (path: string) => {
    const response = await handler(new Request(`http://127.0.0.1${path}`))
    return { status: response.status, body: await response.text() }
  }

  it("serves its built files", async () => {
    expect(await get("/app/assets/app-1234.js")).toEqual({ status: 200, body: "console.log('app')" })
  })

  it("never serves what a link inside the directory points to outside it", async () => {
    for (const path of ["/app/assets/leak-1234.js", "/app/leak.txt", "/app/up/server-secret.txt"]) {
      const answer = await get(path)
      expect(answer.body, path).not.toContain("secret")
      expect(answer.status, path).toBe(path.startsWith("/app/assets/") ? 404 : 200)
    }
  })

  it("writes the mount prefix into index.html as it is, even with $ patterns", () => {
    const html = withBase(INDEX, "/a$`b$&c$'")
    expect(html).toContain(`<base href="/a$\`b$&amp;c$'/app/">`)
    expect(html).toContain(`<meta name="agent-runs-base" content="/a$\`b$&amp;c$'">`)
    // `$\`` read as a pattern would have copied the text before <head> (the <html> tag) into it.
    expect(html.match(/<html/g)?.length).toBe(1)
  })
})

describe("a dashboard directory that is a link to a release", () => {
  const release = (name: string, script: string) => {
    const dir = join(scratch, name)
    mkdirSync(join(dir, "assets"), { recursive: true })
    writeFileSync(join(dir, "index.html"), INDEX)
    writeFileSync(join(dir, "assets", `${name}.js`), script)
    return dir
  }
  const current = join(scratch, "current")
  symlinkSync(release("release-1", "one"), current)
  const handler = HttpApp.toWebHandler(dashboard("", current))
  const get = async (path: string) => {
    const response = await handler(new Request(`http://127.0.0.1${path}`))
    return { status: response.status, body: await response.text() }
  }

  it("serves the new release's files once the link points at it", async () => {
    expect(await get("/app/assets/release-1.js")).toEqual({ status: 200, body: "one" })
    // Switched the way deploys do it: a new link renamed over the old one.
    symlinkSync(release("release-2", "two"), join(scratch, "next"))
    renameSync(join(scratch, "next"), current)
    expect(await get("/app/assets/release-2.js")).toEqual({ status: 200, body: "two" })
    expect((await get("/app/assets/release-1.js")).status).toBe(404)
  })
})
