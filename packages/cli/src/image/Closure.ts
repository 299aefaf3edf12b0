/**
 * The runtime dependency closure of an installed npm package, for copying it into an image: the
 * package and every package its `dependencies` and `optionalDependencies` resolve to, each found
 * the way Node finds it from the directory of the package that depends on it
 * (`<dir>/node_modules/<name>`, then the same in each ancestor that is not itself a
 * `node_modules`), so that a nested version (`a/node_modules/b`) shadows the hoisted one exactly as
 * it does for Node. Each package directory is listed once, where it was found (not its real path:
 * the copy keeps the layout Node will resolve in). An optional dependency that is not installed
 * (another platform's build) is skipped; a required one that is missing is reported in `missing`.
 * Only the file system is read: no package manager, no registry.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

/** One installed package of a closure. */
export interface InstalledPackage {
  readonly name: string
  readonly version: string
  /** Its directory, absolute, where Node's resolution found it. */
  readonly dir: string
}

/** A dependency that no `node_modules` holds. */
export interface MissingDependency {
  readonly name: string
  /** The directory of the package that depends on it. */
  readonly from: string
  readonly optional: boolean
}

export interface Closure {
  /** The package itself first, then its dependencies breadth first; each directory once. */
  readonly packages: ReadonlyArray<InstalledPackage>
  /** Dependencies not installed (optional ones included: they are normal, e.g. other platforms' builds). */
  readonly missing: ReadonlyArray<MissingDependency>
}

export interface ClosureOptions {
  /** Whether to follow a package's `optionalDependencies` (all of them by default). */
  readonly followOptional?: (pkg: InstalledPackage) => boolean
}

/** The fields of a `package.json` read here, unchecked. */
export interface Manifest {
  readonly name?: unknown
  readonly version?: unknown
  readonly bin?: unknown
  readonly dependencies?: unknown
  readonly optionalDependencies?: unknown
}

/** The `package.json` of a directory, parsed; undefined when there is none or it is not JSON. */
export const readManifest = (dir: string): Manifest | undefined => {
  try {
    const parsed: unknown = JSON.parse(Fs.readFileSync(Path.join(dir, "package.json"), "utf8"))
    return typeof parsed === "object" && parsed !== null ? parsed as Manifest : undefined
  } catch {
    return undefined
  }
}

const names = (field: unknown): ReadonlyArray<string> =>
  typeof field === "object" && field !== null ? Object.keys(field) : []

const isPackageDir = (dir: string): boolean => {
  try {
    return Fs.statSync(dir).isDirectory() && Fs.statSync(Path.join(dir, "package.json")).isFile()
  } catch {
    return false
  }
}

/**
 * The directories Node searches for packages required from `dir`, nearest first (Node's
 * `Module._nodeModulePaths`): `<ancestor>/node_modules` for `dir` and each ancestor not named
 * `node_modules`.
 */
export const nodeModulesPaths = (dir: string): ReadonlyArray<string> => {
  const paths: Array<string> = []
  for (let current = Path.resolve(dir); ; current = Path.dirname(current)) {
    if (Path.basename(current) !== "node_modules") paths.push(Path.join(current, "node_modules"))
    if (Path.dirname(current) === current) return paths
  }
}

/** Where Node finds the package `name` required from `fromDir`; undefined when it is not installed. */
export const resolvePackage = (name: string, fromDir: string): string | undefined =>
  nodeModulesPaths(fromDir).map((modules) => Path.join(modules, name)).find(isPackageDir)

/**
 * The directory whose `node_modules` holds `dir` at its outermost level: `/repo` for
 * `/repo/node_modules/a/node_modules/b`; `dir` itself when it is in no `node_modules`.
 */
export const installRoot = (dir: string): string => {
  const parts = Path.resolve(dir).split(Path.sep)
  const first = parts.indexOf("node_modules")
  return first === -1 ? Path.resolve(dir) : parts.slice(0, first).join(Path.sep) || Path.sep
}

/** The closure of the package installed in `dir` (which must hold a `package.json`). */
export const walk = (dir: string, options: ClosureOptions = {}): Closure => {
  const start = Path.resolve(dir)
  const packages: Array<InstalledPackage> = []
  const missing: Array<MissingDependency> = []
  const seen = new Set<string>()
  const queue: Array<string> = [start]
  seen.add(start)
  while (queue.length > 0) {
    const current = queue.shift()!
    const manifest = readManifest(current)
    if (manifest === undefined) throw new Error(`${current} holds no readable package.json`)
    const pkg: InstalledPackage = {
      name: typeof manifest.name === "string" ? manifest.name : Path.basename(current),
      version: typeof manifest.version === "string" ? manifest.version : "0.0.0",
      dir: current
    }
    packages.push(pkg)
    const required = names(manifest.dependencies)
    const optional = options.followOptional === undefined || options.followOptional(pkg)
      ? names(manifest.optionalDependencies).filter((name) => !required.includes(name))
      : []
    for (const [name, isOptional] of [...required.map((n) => [n, false] as const), ...optional.map((n) => [n, true] as const)]) {
      const found = resolvePackage(name, current)
      if (found === undefined) {
        missing.push({ name, from: current, optional: isOptional })
      } else if (!seen.has(found)) {
        seen.add(found)
        queue.push(found)
      }
    }
  }
  return { packages, missing }
}
