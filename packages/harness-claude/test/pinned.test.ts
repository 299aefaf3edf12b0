/**
 * The pinned Claude Code for each supported Node (`claudeCodePackage`): of the releases this
 * package pins (its devDependencies `@anthropic-ai/claude-code` and npm aliases of it), the newest
 * whose `engines.node` accepts that Node.
 */
import { claudeCodePackage } from "@agent-runs/testing"
import { createRequire } from "node:module"
import { describe, expect, it } from "vitest"

const require = createRequire(import.meta.url)
interface Manifest {
  readonly name: string
  readonly version: string
  readonly engines: { readonly node: string }
  readonly devDependencies: Readonly<Record<string, string>>
}

const pins = Object.entries((require("../package.json") as Manifest).devDependencies)
  .filter(([name, spec]) => name === "@anthropic-ai/claude-code" || spec.startsWith("npm:@anthropic-ai/claude-code@"))
  .map(([name]) => ({ pkg: name, ...(require(`${name}/package.json`) as Manifest) }))

/** Whether an `engines.node` of the form `>=MAJOR.MINOR.PATCH` accepts this Node. */
const accepts = (range: string, node: string): boolean => {
  const lowest = /^>=(\d+\.\d+\.\d+)$/.exec(range)?.[1]
  if (lowest === undefined) throw new Error(`an engines.node this test does not read: ${range}`)
  return lowest.localeCompare(node, "en", { numeric: true }) <= 0
}

describe("the pinned Claude Code for a Node", () => {
  it.each(["20.19.0", "22.12.0", "24.11.1"])("Node %s: the newest pinned release whose engines accept it", (node) => {
    const fitting = pins
      .filter((pin) => accepts(pin.engines.node, node))
      .sort((a, b) => b.version.localeCompare(a.version, "en", { numeric: true }))
    expect(fitting.length).toBeGreaterThan(0)
    expect(claudeCodePackage(node)).toBe(fitting[0]!.pkg)
  })

  it("pins two releases: the newest one does not accept Node 20", () => {
    expect(pins.map((pin) => pin.name)).toEqual(["@anthropic-ai/claude-code", "@anthropic-ai/claude-code"])
    const newest = [...pins].sort((a, b) => b.version.localeCompare(a.version, "en", { numeric: true }))[0]!
    expect(accepts(newest.engines.node, "20.19.0")).toBe(false)
  })
})
