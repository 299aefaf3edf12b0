/**
 * The dashboard's file serving (`Dashboard.ts`) on a directory of its own: a link in the built
 * directory that points out of it is not served (the file it names stays unread), and a mount
 * prefix is written into `index.html` as it is, `$` patterns included, and a root that is a link
 * switched to another release serves the new release's files. Files are streamed, with an ETag
 * that a repeated request names to get a 304.
 */
import { HttpApp } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import fc from "fast-check"
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { dashboard, etagMatches, withBase } from "../src/Dashboard.js"

const scratch = mkdtempSync(join(tmpdir(), "agent-runs-dashboard-"))
const disposers: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const dispose of disposers) await dispose()
  rmSync(scratch, { recursive: true, force: true })
})

/** The dashboard of `dir` as a fetch handler, on Node's platform (file responses, ETags). */
const webHandler = (dir: string) => {
  const { dispose, handler } = HttpApp.toWebHandlerLayer(dashboard("", dir), NodeHttpServer.layerContext)
  disposers.push(dispose)
  return (path: string, headers: Record<string, string> = {}) => handler(new Request(`http://127.0.0.1${path}`, { headers }))
}

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
  const handler = webHandler(builtDir())
  const get = async (path: string) => {
    const response = await handler(path)
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
  const handler = webHandler(current)
  const get = async (path: string) => {
    const response = await handler(path)
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

describe("conditional requests", () => {
  const dir = join(scratch, "etags")
  mkdirSync(join(dir, "assets"), { recursive: true })
  writeFileSync(join(dir, "index.html"), INDEX)
  writeFileSync(join(dir, "assets", "app-1.js"), "one")
  writeFileSync(join(dir, "robots.txt"), "User-agent: *")
  const handler = webHandler(dir)

  it("answers a request naming the file's ETag with 304 and no body; a changed file gets a new ETag", async () => {
    const first = await handler("/app/assets/app-1.js")
    const etag = first.headers.get("etag")!
    expect(first.status).toBe(200)
    expect(await first.text()).toBe("one")
    expect(etag).toMatch(/^(W\/)?"[0-9a-f]+-[0-9a-f]+"$/)
    expect(first.headers.get("last-modified")).not.toBeNull()

    const opaque = etag.replace(/^W\//, "")
    for (const named of [etag, opaque, `W/${opaque}`, `"other", ${etag}`, "*"]) {
      const again = await handler("/app/assets/app-1.js", { "if-none-match": named })
      expect(again.status, named).toBe(304)
      expect(await again.text(), named).toBe("")
      expect(again.headers.get("etag"), named).toBe(etag)
      expect(again.headers.get("cache-control"), named).toBe("public, max-age=31536000, immutable")
      expect(again.headers.get("content-security-policy"), named).toContain("default-src 'self'")
    }
    const other = await handler("/app/assets/app-1.js", { "if-none-match": `"other"` })
    expect(other.status).toBe(200)
    expect(await other.text()).toBe("one")

    writeFileSync(join(dir, "assets", "app-1.js"), "two!")
    const changed = await handler("/app/assets/app-1.js", { "if-none-match": etag })
    expect(changed.status).toBe(200)
    expect(await changed.text()).toBe("two!")
    expect(changed.headers.get("etag")).not.toBe(etag)
  })

  it("revalidates files other than assets (no-cache) the same way; index.html is never cached", async () => {
    const first = await handler("/app/robots.txt")
    expect(first.headers.get("cache-control")).toBe("no-cache")
    await first.text()
    const again = await handler("/app/robots.txt", { "if-none-match": first.headers.get("etag")! })
    expect(again.status).toBe(304)
    const index = await handler("/app/runs/1", { "if-none-match": "*" })
    expect(index.status).toBe(200)
    expect(index.headers.get("cache-control")).toBe("no-store")
  })

  it("compares entity tags weakly, in a list, or any with *", () => {
    fc.assert(fc.property(fc.stringMatching(/^[0-9a-f-]{1,20}$/), fc.stringMatching(/^[0-9a-f-]{1,20}$/), (a, b) => {
      expect(etagMatches(`"${a}"`, `"${a}"`)).toBe(true)
      expect(etagMatches(`W/"${a}"`, `"${a}"`)).toBe(true)
      expect(etagMatches(`"${b}", W/"${a}"`, `"${a}"`)).toBe(true)
      expect(etagMatches(`"${b}"`, `"${a}"`)).toBe(a === b)
      expect(etagMatches(undefined, `"${a}"`)).toBe(false)
      expect(etagMatches(" * ", `"${a}"`)).toBe(true)
      expect(etagMatches(a, `"${a}"`)).toBe(false)
    }))
  })
})

describe("a large file", () => {
  const SIZE = 128 * 1024 * 1024
  const dir = join(scratch, "large")
  mkdirSync(join(dir, "assets"), { recursive: true })
  // Sparse: no disk written, yet every one of its bytes is read when served.
  writeFileSync(join(dir, "assets", "large.wasm"), "")
  truncateSync(join(dir, "assets", "large.wasm"), SIZE)
  const handler = webHandler(dir)

  it("is streamed from disk: its first chunk arrives before the file was read, and memory does not grow by its size", async () => {
    const before = process.memoryUsage().arrayBuffers
    const response = await handler("/app/assets/large.wasm")
    expect(response.status).toBe(200)
    expect(response.headers.get("content-length")).toBe(String(SIZE))
    const reader = response.body!.getReader()
    const first = await reader.read()
    const grown = process.memoryUsage().arrayBuffers - before
    await reader.cancel()
    expect(first.value!.length).toBeLessThan(SIZE / 16)
    expect(grown).toBeLessThan(SIZE / 2)
  })
})
