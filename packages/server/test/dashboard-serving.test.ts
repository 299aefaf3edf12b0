/**
 * The web dashboard's files at `/app`, served at the root and mounted under `/agents`: the built
 * files with their content types and caching, `index.html` (told its base) for any other path
 * under `/app`, a strict CSP, and no way out of the built directory.
 */
import { appDir } from "@agent-runs/dashboard"
import { readdirSync, readFileSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { HOST_PAGE, type LocalService, startLocalService } from "./support/LocalService.js"

interface Answer {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: string
}

/** A GET sent with its path exactly as written (fetch and browsers would resolve `..` first). */
const get = (base: string, path: string, headers: Record<string, string> = {}): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const url = new URL(base)
    const sent = httpRequest({ host: url.hostname, port: url.port, path, method: "GET", headers }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString("utf8") }))
      response.on("error", reject)
    })
    sent.on("error", reject)
    sent.end()
  })

const built = () => readdirSync(join(appDir, "assets"))
const builtScript = () => built().find((name) => name.endsWith(".js"))!
const builtStyle = () => built().find((name) => name.endsWith(".css"))!

/** What both mounts must do; `prefix` is `""` at the root. */
const behaves = (name: string, setup: () => { base: string; prefix: string }) =>
  describe(name, () => {
    it("answers index.html at /app, /app/ and deep links, told its base and the prefix, never cached", async () => {
      const { base, prefix } = setup()
      for (const path of ["/app", "/app/", "/app/runs/some-run-id", "/app/runs/x?state=FAILED&q=hello", "/app/no/such/page.txt"]) {
        const answer = await get(base, `${prefix}${path}`)
        expect(answer.status, path).toBe(200)
        expect(answer.headers["content-type"], path).toBe("text/html; charset=utf-8")
        expect(answer.headers["cache-control"], path).toBe("no-store")
        expect(answer.body, path).toContain(`<base href="${prefix}/app/">`)
        expect(answer.body, path).toContain(`<meta name="agent-runs-base" content="${prefix}">`)
        expect(answer.body, path).toContain(`src="./assets/${builtScript()}"`)
      }
    })

    it("serves the built assets with their content types, cached as immutable", async () => {
      const { base, prefix } = setup()
      const script = await get(base, `${prefix}/app/assets/${builtScript()}`)
      expect(script.status).toBe(200)
      expect(script.headers["content-type"]).toBe("text/javascript; charset=utf-8")
      expect(script.headers["cache-control"]).toBe("public, max-age=31536000, immutable")
      expect(script.body).toBe(readFileSync(join(appDir, "assets", builtScript()), "utf8"))
      const style = await get(base, `${prefix}/app/assets/${builtStyle()}`)
      expect(style.status).toBe(200)
      expect(style.headers["content-type"]).toBe("text/css; charset=utf-8")
      // A missing asset is a 404, not the app's page.
      const missing = await get(base, `${prefix}/app/assets/index-missing.js`)
      expect(missing.status).toBe(404)
      expect(missing.headers["content-type"]).toBe("application/problem+json")
    })

    it("answers a repeated request naming the asset's ETag with 304 and no body", async () => {
      const { base, prefix } = setup()
      const path = `${prefix}/app/assets/${builtScript()}`
      const first = await get(base, path)
      const etag = String(first.headers.etag)
      expect(etag).toMatch(/^(W\/)?"[0-9a-f]+-[0-9a-f]+"$/)
      const again = await get(base, path, { "if-none-match": etag })
      expect(again.status).toBe(304)
      expect(again.body).toBe("")
      expect(again.headers.etag).toBe(etag)
      expect(again.headers["cache-control"]).toBe("public, max-age=31536000, immutable")
      const other = await get(base, path, { "if-none-match": `"not-${etag.slice(1)}` })
      expect(other.status).toBe(200)
      expect(other.body).toBe(first.body)
    })

    it("sends a strict Content-Security-Policy and nosniff on every answer", async () => {
      const { base, prefix } = setup()
      for (const path of ["/app", `/app/assets/${builtScript()}`, "/app/runs/1"]) {
        const answer = await get(base, `${prefix}${path}`)
        const csp = String(answer.headers["content-security-policy"])
        expect(csp, path).toContain("default-src 'self'")
        expect(csp, path).toContain("script-src 'self'")
        expect(csp, path).not.toContain("unsafe-inline")
        expect(csp, path).toContain("frame-ancestors 'none'")
        expect(answer.headers["x-content-type-options"], path).toBe("nosniff")
      }
    })

    it.each([
      "/app/../../etc/passwd",
      "/app/%2e%2e/%2e%2e/etc/passwd",
      "/app/%2E%2E/%2E%2E/%2E%2E/%2E%2E/etc/passwd",
      "/app/..%2f..%2f..%2f..%2fetc%2fpasswd",
      "/app/assets/..%5c..%5c..%5cpackage.json",
      "/app/./index.html",
      "/app/assets/%00.js"
    ])("refuses %s", async (path) => {
      const { base, prefix } = setup()
      const answer = await get(base, `${prefix}${path}`)
      expect(answer.status).toBe(400)
      expect(answer.headers["content-type"]).toBe("application/problem+json")
      expect(JSON.parse(answer.body).error).toMatch(/^path: /)
    })

    it("answers a path that cannot be decoded with a problem, not a file", async () => {
      const { base, prefix } = setup()
      const answer = await get(base, `${prefix}/app/%E0%A4%A`)
      expect(answer.status).toBeGreaterThanOrEqual(400)
      expect(answer.headers["content-type"]).toBe("application/problem+json")
    })
  })

describe("the dashboard's files", () => {
  let served: LocalService
  let mounted: LocalService
  let root: string
  let hostBase: string

  beforeAll(async () => {
    served = await startLocalService({ name: "dashboard-files", executor: false })
    mounted = await startLocalService({ name: "dashboard-files-mounted", mountAt: "/agents", executor: false })
    root = served.base
    hostBase = mounted.origin
  }, 60_000)

  afterAll(async () => {
    await mounted?.close()
    await served?.close()
  })

  behaves("served at the root", () => ({ base: root, prefix: "" }))
  behaves("mounted under /agents", () => ({ base: hostBase, prefix: "/agents" }))

  it("leaves /app outside the prefix to the host", async () => {
    const answer = await get(hostBase, "/app")
    expect(answer.body).toBe(HOST_PAGE)
  })
})
