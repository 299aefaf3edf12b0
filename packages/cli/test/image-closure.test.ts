/**
 * The dependency walk of `agent-runs image build --local` (src/image/Closure.ts) on a small fake
 * `node_modules` made in a temporary directory: Node's resolution (a nested version shadows the
 * hoisted one for its dependent only), scoped packages, optional dependencies that are missing,
 * a required one that is missing, a cycle, and packages outside the closure left out.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { installRoot, nodeModulesPaths, resolvePackage, walk } from "../src/image/Closure.js"

let root = ""

/** A package at `dir` (relative to the temporary root) with this manifest. */
const pkg = (dir: string, manifest: Record<string, unknown>) => {
  mkdirSync(join(root, dir), { recursive: true })
  writeFileSync(join(root, dir, "package.json"), JSON.stringify(manifest))
  writeFileSync(join(root, dir, "index.js"), "module.exports = 1\n")
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "agent-runs-closure-"))
  pkg("node_modules/cli", {
    name: "cli",
    version: "1.0.0",
    dependencies: { a: "^1.0.0", b: "^2.0.0" },
    optionalDependencies: { "cli-linux-x64": "1.0.0", "cli-darwin-arm64": "1.0.0" }
  })
  pkg("node_modules/cli-linux-x64", { name: "cli-linux-x64", version: "1.0.0" })
  // `a` needs b@1: npm nests it under a; the hoisted b is 2.0.0.
  pkg("node_modules/a", { name: "a", version: "1.0.0", dependencies: { b: "^1.0.0" } })
  pkg("node_modules/a/node_modules/b", { name: "b", version: "1.5.0" })
  pkg("node_modules/b", { name: "b", version: "2.0.0", dependencies: { "@scope/c": "1.0.0" } })
  // A cycle back to the CLI, and a required dependency that is not installed.
  pkg("node_modules/@scope/c", { name: "@scope/c", version: "1.0.0", dependencies: { cli: "1.0.0", gone: "1.0.0" } })
  pkg("node_modules/unrelated", { name: "unrelated", version: "9.9.9" })
})

afterAll(() => rmSync(root, { recursive: true, force: true }))

const listed = (closure: ReturnType<typeof walk>) =>
  closure.packages.map((p) => [p.name, p.version, p.dir.slice(root.length + 1)])

describe("Closure.walk", () => {
  it("lists the package and its dependencies breadth first, each directory once, as Node resolves them", () => {
    const closure = walk(join(root, "node_modules/cli"))
    expect(listed(closure)).toEqual([
      ["cli", "1.0.0", "node_modules/cli"],
      ["a", "1.0.0", "node_modules/a"],
      ["b", "2.0.0", "node_modules/b"],
      ["cli-linux-x64", "1.0.0", "node_modules/cli-linux-x64"],
      ["b", "1.5.0", "node_modules/a/node_modules/b"],
      ["@scope/c", "1.0.0", "node_modules/@scope/c"]
    ])
  })

  it("skips what is not installed: optional builds of other platforms, and reports a missing required one", () => {
    const closure = walk(join(root, "node_modules/cli"))
    expect(closure.missing.map((m) => [m.name, m.optional, m.from.slice(root.length + 1)])).toEqual([
      ["cli-darwin-arm64", true, "node_modules/cli"],
      ["gone", false, "node_modules/@scope/c"]
    ])
  })

  it("leaves out the optional dependencies of the packages followOptional declines", () => {
    const closure = walk(join(root, "node_modules/cli"), { followOptional: (p) => p.name !== "cli" })
    expect(closure.packages.map((p) => p.name)).not.toContain("cli-linux-x64")
    expect(closure.missing.map((m) => m.name)).toEqual(["gone"])
  })

  it("fails on a directory without a package.json", () => {
    expect(() => walk(join(root, "node_modules"))).toThrow(/no readable package.json/)
  })
})

describe("Node's resolution", () => {
  it("searches <dir>/node_modules and each ancestor's, never node_modules/node_modules", () => {
    expect(nodeModulesPaths("/r/node_modules/@s/x")).toEqual([
      "/r/node_modules/@s/x/node_modules",
      "/r/node_modules/@s/node_modules",
      "/r/node_modules",
      "/node_modules"
    ])
  })

  it("finds the nearest installed copy, and nothing for a package that is not installed", () => {
    expect(resolvePackage("b", join(root, "node_modules/a"))).toBe(join(root, "node_modules/a/node_modules/b"))
    expect(resolvePackage("b", join(root, "node_modules/cli"))).toBe(join(root, "node_modules/b"))
    expect(resolvePackage("@scope/c", join(root, "node_modules/a/node_modules/b"))).toBe(join(root, "node_modules/@scope/c"))
    expect(resolvePackage("gone", join(root, "node_modules/cli"))).toBeUndefined()
  })

  it("places a package relative to the directory of its outermost node_modules", () => {
    expect(installRoot("/repo/node_modules/a/node_modules/b")).toBe("/repo")
    expect(installRoot("/node_modules/a")).toBe("/")
    expect(installRoot("/repo/packages/x")).toBe("/repo/packages/x")
  })
})
