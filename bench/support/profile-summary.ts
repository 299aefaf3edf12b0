/**
 * Summarizes a V8 `.cpuprofile` (bench/support/cpu-profile.cjs writes them): the busy time, the
 * share of each package (self time by the file's package: effect, @effect/platform, our packages,
 * node internals, GC), the functions with the most self time, and with `--inclusive <regex>` the
 * total time under the functions whose name matches.
 *
 *   npx vite-node --config bench/vite.config.ts bench/support/profile-summary.ts <file.cpuprofile> [--top 40] [--inclusive name]
 */
import { readFileSync } from "node:fs"

interface Node {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<Node>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const args = process.argv.slice(2)
const file = args[0]
if (file === undefined) throw new Error("usage: profile-summary <file.cpuprofile> [--top N] [--inclusive regex]")
const option = (name: string) => {
  const at = args.indexOf(name)
  return at < 0 ? undefined : args[at + 1]
}
const top = Number(option("--top") ?? 40)
const inclusive = option("--inclusive")
const owners = args.includes("--owners")

const profile = JSON.parse(readFileSync(file, "utf8")) as Profile
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const parent = new Map<number, number>()
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)

/** Microseconds of samples per node (self). */
const self = new Map<number, number>()
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))

const packageOf = (url: string, name: string) => {
  if (url === "") return name.startsWith("(") ? name : "(native)"
  if (url.startsWith("node:")) return "node"
  const modules = url.lastIndexOf("node_modules/")
  if (modules >= 0) {
    const rest = url.slice(modules + "node_modules/".length).split("/")
    return rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!
  }
  const ours = /\/(packages|examples)\/([^/]+)\//.exec(url)
  return ours === null ? url : `@agent-runs/${ours[2]}`
}

let total = 0
let idle = 0
const packages = new Map<string, number>()
const functions = new Map<string, number>()
for (const [id, micros] of self) {
  const { functionName, lineNumber, url } = byId.get(id)!.callFrame
  total += micros
  if (functionName === "(idle)" || functionName === "(program)") {
    if (functionName === "(idle)") idle += micros
  }
  const pkg = packageOf(url, functionName)
  packages.set(pkg, (packages.get(pkg) ?? 0) + micros)
  const key = `${functionName || "(anonymous)"} ${url.replace(/^.*node_modules\//, "").replace(/^.*\/work\/[^/]+\//, "")}:${lineNumber + 1}`
  functions.set(key, (functions.get(key) ?? 0) + micros)
}
const busy = total - idle
const ms = (micros: number) => `${(micros / 1000).toFixed(0).padStart(7)} ms`
const pct = (micros: number) => `${((100 * micros) / busy).toFixed(1).padStart(5)}%`

console.log(`${file}: ${ms(total)} sampled, ${ms(busy)} busy (${((100 * busy) / total).toFixed(0)}%)\n`)
console.log("self time by package (share of busy):")
for (const [pkg, micros] of [...packages].filter(([pkg]) => pkg !== "(idle)").sort((a, b) => b[1] - a[1]).slice(0, 20)) {
  console.log(`  ${pct(micros)} ${ms(micros)}  ${pkg}`)
}
console.log(`\ntop ${top} functions by self time:`)
for (const [key, micros] of [...functions].filter(([key]) => !key.startsWith("(idle)")).sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`  ${pct(micros)} ${ms(micros)}  ${key}`)
}

if (inclusive !== undefined) {
  const pattern = new RegExp(inclusive)
  const under = new Map<string, number>()
  for (const [id, micros] of self) {
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { functionName, lineNumber, url } = byId.get(at)!.callFrame
      if (pattern.test(functionName)) {
        const key = `${functionName} ${url.replace(/^.*\/work\/[^/]+\//, "")}:${lineNumber + 1}`
        if (!seen.has(key)) under.set(key, (under.get(key) ?? 0) + micros)
        seen.add(key)
      }
    }
  }
  console.log(`\ninclusive time of functions matching /${inclusive}/:`)
  for (const [key, micros] of [...under].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(micros)} ${ms(micros)}  ${key}`)
}

if (owners) {
  // Self time attributed to the nearest caller in this repository's packages (the Effect runtime's
  // and the libraries' work charged to the code of ours that asked for it).
  const owned = new Map<string, number>()
  for (const [id, micros] of self) {
    let key = "(no caller of ours)"
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { functionName, lineNumber, url } = byId.get(at)!.callFrame
      if (/\/(packages|examples)\//.test(url) && !url.includes("node_modules")) {
        key = `${functionName || "(anonymous)"} ${url.replace(/^.*\/work\/[^/]+\//, "")}:${lineNumber + 1}`
        break
      }
    }
    owned.set(key, (owned.get(key) ?? 0) + micros)
  }
  console.log("\nself time charged to the nearest caller of ours:")
  for (const [key, micros] of [...owned].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(micros)} ${ms(micros)}  ${key}`)
}
