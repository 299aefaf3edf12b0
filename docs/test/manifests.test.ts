/**
 * The package manifests agree on what users install with (the `engines` range: engines.test.ts):
 * in a library, the Effect packages a host shares with us (effect, @effect/platform,
 * @effect/sql, @effect/experimental) as peers, never as a dependency a host would get a second copy
 * of (the apps, the CLI and the examples, own theirs); and a
 * third-party package a workspace's tests use declared by that workspace, not by the root (which
 * keeps the tooling and the benchmarks' baselines).
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../..", import.meta.url))

interface Manifest {
  readonly name: string
  readonly version?: string
  readonly dependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly private?: boolean
  readonly bin?: unknown
}

const read = (path: string): Manifest => JSON.parse(readFileSync(join(root, path, "package.json"), "utf8"))
const workspaces = ["packages", "examples"].flatMap((dir) => readdirSync(join(root, dir)).map((name) => join(dir, name)))
const shared = ["effect", "@effect/platform", "@effect/sql", "@effect/experimental"]

describe("the package manifests", () => {
  it("take the Effect packages a host shares as peers, never as dependencies (libraries; the apps own theirs)", () => {
    const libraries = workspaces.filter((dir) => read(dir).private !== true && read(dir).bin === undefined)
    expect(libraries.length).toBeGreaterThan(15)
    const wrong = libraries.flatMap((dir) =>
      Object.keys(read(dir).dependencies ?? {}).filter((name) => shared.includes(name)).map((name) => `${dir}: ${name}`)
    )
    expect(wrong).toEqual([])
  })

  it("declare a third-party package where it is used: the root keeps tooling and benchmark baselines", () => {
    const rootOnly = Object.keys(read(".").devDependencies ?? {})
    const usedByWorkspaceTests = ["oz-agent-sdk"]
    expect(rootOnly.filter((name) => usedByWorkspaceTests.includes(name))).toEqual([])
    expect(read("examples/server").devDependencies?.["oz-agent-sdk"]).toBeDefined()
  })

  it("carry the release's version, as core's Release.VERSION and the CHANGELOG's newest entry name it", () => {
    const release = /VERSION = "([^"]+)"/.exec(readFileSync(join(root, "packages/core/src/domain/Release.ts"), "utf8"))?.[1]
    const newest = /^## (\d+\.\d+\.\d+)/m.exec(readFileSync(join(root, "CHANGELOG.md"), "utf8"))?.[1]
    expect(newest).toBe(release)
    const wrong = workspaces.flatMap((dir) => {
      const manifest = read(dir)
      const own = manifest.version === release ? [] : [`${dir}: version ${manifest.version}`]
      const ours = Object.entries({ ...manifest.dependencies, ...manifest.devDependencies, ...manifest.peerDependencies })
        .filter(([name, range]) => name.startsWith("@agent-runs/") && range !== release)
        .map(([name, range]) => `${dir}: ${name} ${range}`)
      return [...own, ...ours]
    })
    expect(wrong).toEqual([])
  })
})
