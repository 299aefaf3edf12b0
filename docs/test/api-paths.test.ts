/**
 * Every endpoint the docs name (`GET /agent/runs/{id}`, `POST /api/v1/admin/teams`, … in
 * docs/, docs/reference/ and the README) is one the API defines (packages/http/src/api/*.ts, under
 * `/api/v1`), with that method (a concrete value, `/agent/secrets/ANTHROPIC_API_KEY`, stands for a
 * parameter): a renamed or removed route cannot linger in the docs.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** `METHOD /path` with every path parameter as `{}`. */
const normalize = (method: string, path: string): string =>
  `${method.toUpperCase().replace(/^DEL$/, "DELETE")} ${
    path.replace(/\$\{[^}]+\}|\{[^}]*\}|<[^>]*>/g, "{}").replace(/\/+$/, "")
  }`

/** The routes the API defines: `HttpApiEndpoint.get("name", "/path")` and `HttpApiEndpoint.get("name")\`/path/${…}\``. */
const defined = (): Set<string> => {
  const dir = join(root, "packages/http/src/api")
  const routes = new Set<string>()
  for (const file of readdirSync(dir).filter((name) => name.endsWith(".ts"))) {
    const text = readFileSync(join(dir, file), "utf8")
    for (const m of text.matchAll(/HttpApiEndpoint\.(get|post|put|patch|del|delete)\("[^"]+",\s*"([^"]+)"\)/g)) {
      routes.add(normalize(m[1]!, m[2]!))
    }
    for (const m of text.matchAll(/HttpApiEndpoint\.(get|post|put|patch|del|delete)\("[^"]+"\)`([^`]+)`/g)) {
      routes.add(normalize(m[1]!, m[2]!))
    }
  }
  return routes
}

/** Whether a named route is a defined one: the same method and segments, a parameter standing for any value. */
const matches = (route: string, mention: string): boolean => {
  const a = route.split(/[ /]/)
  const b = mention.split(/[ /]/)
  return a.length === b.length && a.every((segment, i) => segment === b[i] || segment === "{}")
}

/** The pages: every Markdown file of docs/ and docs/reference/, and the README. */
const pages = (): Array<string> => [
  ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => join("docs", name)),
  ...readdirSync(join(root, "docs/reference")).filter((name) => name.endsWith(".md")).map((name) =>
    join("docs/reference", name)
  ),
  "README.md"
]

/** The API endpoints a page names, as `page:line: METHOD /path` → normalized route. */
const named = (): Array<{ readonly where: string; readonly route: string }> => {
  const found: Array<{ where: string; route: string }> = []
  for (const page of pages()) {
    readFileSync(join(root, page), "utf8").split("\n").forEach((line, index) => {
      const pattern = /\b(GET|POST|PUT|PATCH|DELETE) `?(?:\/api\/v1)?(\/(?:agent|admin|workers|harness-support)\/[A-Za-z0-9_/{}<>.-]*)/g
      for (const m of line.matchAll(pattern)) {
        const path = m[2]!.replace(/[.]+$/, "")
        found.push({ where: `${page}:${index + 1}: ${m[1]} ${path}`, route: normalize(m[1]!, path) })
      }
    })
  }
  return found
}

describe("the endpoints the docs name", () => {
  it("are all routes of the API, with that method", () => {
    const routes = defined()
    expect(routes.size).toBeGreaterThan(40)
    const mentions = named()
    expect(mentions.length).toBeGreaterThan(30)
    const unknown = mentions.filter((m) => ![...routes].some((route) => matches(route, m.route))).map((m) => m.where)
    expect(unknown, `not routes of packages/http/src/api:\n${unknown.join("\n")}`).toEqual([])
  })
})
