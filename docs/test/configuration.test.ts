/**
 * docs/reference/configuration.md lists exactly the variables the bundled server reads: every
 * `AGENT_RUNS_*` name (and `PORT`, `HOST`) in the sources of packages/cli/src/serve/ has a row in
 * its server tables (the sections before "The command line"), and every row there names one the
 * server reads.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../..", import.meta.url))
const serveDir = join(root, "packages/cli/src/serve")

/** The variables the server's sources read: quoted names passed to `Config.*`. */
const read = (): Set<string> => {
  const names = new Set<string>()
  for (const file of readdirSync(serveDir).filter((name) => name.endsWith(".ts"))) {
    const text = readFileSync(join(serveDir, file), "utf8")
    for (const match of text.matchAll(/"((?:AGENT_RUNS_[A-Z0-9_]+)|PORT|HOST)"/g)) names.add(match[1]!)
  }
  return names
}

/** The variables of the page's server tables: the first cell of each row. */
const documented = (): Set<string> => {
  const page = readFileSync(join(root, "docs/reference/configuration.md"), "utf8")
  const server = page.split(/^## The command line/m)[0]!
  const names = new Set<string>()
  for (const match of server.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)) names.add(match[1]!)
  return names
}

describe("docs/reference/configuration.md", () => {
  it("documents every variable the bundled server reads, and only those", () => {
    const inCode = read()
    const inDocs = documented()
    expect(inCode.size).toBeGreaterThan(40)
    expect([...inCode].filter((name) => !inDocs.has(name)).sort(), "read by packages/cli/src/serve, not documented").toEqual([])
    expect([...inDocs].filter((name) => !inCode.has(name)).sort(), "documented, not read by packages/cli/src/serve").toEqual([])
  })
})
