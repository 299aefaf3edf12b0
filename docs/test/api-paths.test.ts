/**
 * Every endpoint the docs name (`GET /agent/runs/{id}`, `POST /api/v1/admin/teams`, … in
 * docs/, docs/reference/, the README and every package's and example's README) is one the API defines (packages/api/src/endpoints/*.ts, under
 * `/api/v1`), with that method (a concrete value, `/agent/secrets/ANTHROPIC_API_KEY`, stands for a
 * parameter): a renamed or removed route cannot linger in the docs.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
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
  const dir = join(root, "packages/api/src/endpoints")
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

/** The Markdown files of a directory of the repository, as paths from its root. */
const markdownOf = (dir: string): Array<string> =>
  readdirSync(join(root, dir)).filter((name) => name.endsWith(".md")).map((name) => join(dir, name))

/** The READMEs of the packages and the examples. */
const readmes = (dir: string): Array<string> =>
  readdirSync(join(root, dir), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(root, dir, entry.name, "README.md")))
    .map((entry) => join(dir, entry.name, "README.md"))

/** The pages: every Markdown file of docs/ and docs/reference/, the README, and every package's and example's README. */
const pages = (): Array<string> => [
  ...markdownOf("docs"),
  ...markdownOf("docs/reference"),
  "README.md",
  ...readmes("packages"),
  ...readmes("examples")
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
    expect(unknown, `not routes of packages/api/src/endpoints:\n${unknown.join("\n")}`).toEqual([])
    expect(mentions.some((m) => m.where.startsWith("packages/cli/README.md"))).toBe(true)
  })

  it("say what the API does, never what it lacks (such a claim goes stale unseen when the API grows)", () => {
    const claim = /\b(the )?API (has|offers|provides|gives) no\b|\bno (API|endpoint|route)s? (for|to|that)\b|\bthe API does not (have|offer|provide|support)\b/i
    const claims = pages().flatMap((page) =>
      readFileSync(join(root, page), "utf8").split("\n").flatMap((line, index) =>
        claim.test(line) ? [`${page}:${index + 1}: ${line.trim()}`] : []
      )
    )
    expect(claims).toEqual([])
  })
})
