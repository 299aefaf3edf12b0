/**
 * One range of supported Node versions everywhere: the root `package.json`, every package and
 * example of the workspaces, and the README's requirements.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../..", import.meta.url))

interface Manifest {
  readonly name: string
  readonly private?: boolean
  readonly engines?: { readonly node?: string }
}

const manifest = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest

const workspaces = ["packages", "examples"].flatMap((folder) =>
  readdirSync(join(root, folder), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => manifest(join(root, folder, entry.name))))

describe("the supported Node versions", () => {
  const range = manifest(root).engines?.node

  it("are one range: the root's, in every package and example", () => {
    expect(range).toBe("^20.19.0 || >=22.12.0")
    const published = workspaces.filter((pkg) => pkg.private !== true)
    expect(published.length).toBeGreaterThan(10)
    const disagreeing = workspaces
      .filter((pkg) => pkg.engines?.node !== range)
      .map((pkg) => `${pkg.name}: ${JSON.stringify(pkg.engines?.node)}`)
    expect(disagreeing).toEqual([])
  })

  it("are the ones the README states", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8")
    expect(readme).toContain(`\`${range}\``)
  })
})
