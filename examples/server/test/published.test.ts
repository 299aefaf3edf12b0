/**
 * The packages as users get them: every package under `packages/` packed with `npm pack`, the
 * tarballs installed into a scratch project outside the workspace (no workspace links), offline:
 * the third-party packages come from npm's cache, at the versions of the repository's lockfile.
 * There the embedding example of @agent-runs/server's README runs (mounted under `/agents` in a
 * `node:http` server, on PostgreSQL, running the bundled scripted agent): it creates a run and
 * reads its conversation. The `agent-runs` command of the packed CLI answers `--help`. The client
 * installed alone brings the API's definition, the core and Effect, nothing of the server: its
 * install size and package count are printed and bounded.
 */
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { basename, join, relative, resolve } from "node:path"
import { afterAll, expect, inject, it } from "vitest"
import { assertBuilt } from "./process.js"

const root = resolve(import.meta.dirname, "../../..")
const scratch = mkdtempSync(join(tmpdir(), "agent-runs-published-"))
// The scratch project holds an install of every package (tens of thousands of files): removed
// without blocking, with time for a loaded machine.
afterAll(() => rm(scratch, { recursive: true, force: true }), 120_000)

interface LockEntry {
  readonly version?: string
  readonly resolved?: string
  readonly integrity?: string
  readonly link?: boolean
  readonly dependencies?: Record<string, string>
  readonly optionalDependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly peerDependenciesMeta?: Record<string, { readonly optional?: boolean }>
  readonly [key: string]: unknown
}

const packages = readdirSync(join(root, "packages")).map((dir) => {
  const manifest = JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8"))
  return { dir, manifest } as { dir: string; manifest: LockEntry & { name: string; version: string; private?: boolean } }
})

/**
 * The lockfile entries of the third-party packages the packed packages need at run time
 * (dependencies, peers, optional ones), found the way Node resolves them in the repository's tree.
 */
const thirdParty = (lock: Record<string, LockEntry>, selected: ReadonlyArray<(typeof packages)[number]>) => {
  const kept = new Map<string, LockEntry>()
  const resolveFrom = (from: string, name: string): string | undefined => {
    for (let base = from; ; base = base.includes("/node_modules/") ? base.slice(0, base.lastIndexOf("/node_modules/")) : "") {
      const key = base === "" ? `node_modules/${name}` : `${base}/node_modules/${name}`
      if (lock[key] !== undefined) return key
      if (base === "") return undefined
    }
  }
  const visit = (from: string, entry: LockEntry) => {
    const optionalPeers = entry.peerDependenciesMeta ?? {}
    const names = [
      ...Object.keys(entry.dependencies ?? {}),
      ...Object.keys(entry.optionalDependencies ?? {}),
      ...Object.keys(entry.peerDependencies ?? {}).filter((name) => optionalPeers[name]?.optional !== true)
    ]
    for (const name of names) {
      if (name.startsWith("@agent-runs/")) continue
      const key = resolveFrom(from, name)
      if (key === undefined || kept.has(key)) continue
      const found = lock[key]!
      // Other platforms' optional packages are not in the repository's lockfile: not listed either.
      const optional = Object.entries(found.optionalDependencies ?? {}).filter(([name]) => resolveFrom(key, name) !== undefined)
      kept.set(key, { ...found, optionalDependencies: Object.fromEntries(optional) })
      visit(key, found)
    }
  }
  for (const { dir, manifest } of selected) visit(`packages/${dir}`, manifest)
  return kept
}

interface Packed {
  readonly name: string
  readonly filename: string
  readonly integrity: string
  readonly files: Array<{ path: string }>
}

/**
 * Packs `selected` with `npm pack` into `tarballs` and installs the tarballs into the project at
 * `app` with `npm ci --offline`, from a lockfile of our tarballs and the third-party packages they
 * need at the repository's versions (npm finds those in its cache by integrity: nothing is
 * downloaded).
 */
const installPacked = (selected: ReadonlyArray<(typeof packages)[number]>, tarballs: string, app: string): Array<Packed> => {
  const packed = JSON.parse(execFileSync(
    "npm",
    ["pack", "--json", "--pack-destination", tarballs, ...selected.flatMap(({ dir }) => ["-w", `packages/${dir}`])],
    { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }
  )) as Array<Packed>
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")).packages as Record<string, LockEntry>
  const tarball = (p: Packed) => `file:${relative(app, join(tarballs, p.filename))}`
  const dependencies = Object.fromEntries(packed.map((p) => [p.name, tarball(p)]))
  const entries: Record<string, LockEntry> = { "": { name: "scratch", dependencies } }
  for (const [key, entry] of thirdParty(lock, selected)) entries[key] = entry
  for (const p of packed) {
    const manifest = selected.find(({ manifest }) => manifest.name === p.name)!.manifest
    const { devDependencies: _dev, exports: _exports, files: _files, description: _d, type: _t, ...rest } = manifest
    entries[`node_modules/${p.name}`] = { ...rest, resolved: tarball(p), integrity: p.integrity }
  }
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module", dependencies }))
  writeFileSync(join(app, "package-lock.json"), JSON.stringify({ name: "scratch", lockfileVersion: 3, requires: true, packages: entries }))
  execFileSync("npm", ["ci", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"], { cwd: app, stdio: "pipe" })
  return packed
}

/** The bytes of every file under `dir`, and the packages installed there (directories with a package.json). */
const installed = (dir: string): { bytes: number; packages: number } => {
  let bytes = 0
  let count = 0
  const walk = (path: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const child = join(path, entry.name)
      if (entry.isDirectory()) {
        if (existsSync(join(child, "package.json")) && (path.endsWith("node_modules") || basename(path).startsWith("@"))) count++
        walk(child)
      } else if (entry.isFile()) bytes += statSync(child).size
    }
  }
  walk(dir)
  return { bytes, packages: count }
}

const embed = `
import { mount } from "@agent-runs/server"
import { PgStorage } from "@agent-runs/storage-pg"
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { createServer } from "node:http"

const secretKey = new Uint8Array(randomBytes(32))
const adminToken = "ar_" + randomBytes(32).toString("base64url")
let agents
const host = createServer((req, res) => agents.owns(req.url) ? agents.handler(req, res) : res.end("host"))
await new Promise((done) => host.listen(0, "127.0.0.1", done))
const base = "http://127.0.0.1:" + host.address().port
agents = await mount({
  publicUrl: base + "/agents", secretKey, adminToken,
  storage: PgStorage.layer({ url: Redacted.make(process.env.DATABASE_URL), secretKey: Redacted.make(secretKey) }),
  blobs: FileBlobStore.layer({ root: "data/blobs" }),
  executor: ProcessExecutor.layer({ root: "data/sandboxes", reposDir: "data/repos", isolation: undefined })
})
const api = async (method, path, body) => {
  const response = await fetch(base + "/agents/api/v1" + path, {
    method, body: body && JSON.stringify(body),
    headers: { authorization: "Bearer " + adminToken, "content-type": "application/json" }
  })
  return response.json()
}
const { run_id } = await api("POST", "/agent/runs", { prompt: "Say hello" })
let run
for (let i = 0; i < 300; i++) {
  run = await api("GET", "/agent/runs/" + run_id)
  if (run.state === "SUCCEEDED" || run.state === "FAILED") break
  await new Promise((done) => setTimeout(done, 100))
}
const conversation = await api("GET", "/agent/runs/" + run_id + "/conversation")
console.log(JSON.stringify({ state: run.state, conversation }))
await agents.close()
host.close()
`

it("packs every package, installs the tarballs outside the workspace offline, and runs the embed example", async () => {
  assertBuilt(inject("serverBuild"))
  const tarballs = join(scratch, "tarballs")
  const app = join(scratch, "app")
  mkdirSync(tarballs)
  mkdirSync(app)
  for (const { manifest } of packages) expect(manifest.private, `${manifest.name} is publishable`).toBeUndefined()
  const packed = installPacked(packages, tarballs, app)
  for (const p of packed) expect(p.files.map((f) => f.path), p.name).toContain("dist/index.js")
  expect(packed.map((p) => p.name).sort()).toEqual(packages.map(({ manifest }) => manifest.name).sort())

  // Installed from the tarballs, not linked to the workspace.
  expect(realpathSync(join(app, "node_modules/@agent-runs/server")).startsWith(realpathSync(app))).toBe(true)
  expect(realpathSync(join(app, "node_modules/@agent-runs/core")).startsWith(realpathSync(app))).toBe(true)

  const help = execFileSync(join(app, "node_modules/.bin/agent-runs"), ["--help"], { cwd: app, encoding: "utf8" })
  expect(help).toContain("serve")

  writeFileSync(join(app, "embed.mjs"), embed)
  const output = await Effect.runPromise(Effect.scoped(Effect.flatMap(freshDatabase, (db) =>
    Effect.sync(() =>
      execFileSync("node", ["embed.mjs"], {
        cwd: app,
        encoding: "utf8",
        env: { ...process.env, DATABASE_URL: db.url },
        timeout: 120_000
      })
    ))))
  const result = JSON.parse(output.trim().split("\n").at(-1)!)
  expect(result.state).toBe("SUCCEEDED")
  expect(JSON.stringify(result.conversation)).toContain("hello")
}, 300_000)

it("puts agent-runs on the checkout's PATH after npm install (npx agent-runs --help)", () => {
  assertBuilt(inject("serverBuild"))
  const help = execFileSync("npx", ["--no-install", "agent-runs", "--help"], { cwd: root, encoding: "utf8" })
  expect(help).toContain("serve")
  expect(help).toContain("apply")
}, 60_000)

it("installs the client alone, small: the API's definition, the core's models and Effect, nothing of the server", () => {
  assertBuilt(inject("serverBuild"))
  const tarballs = join(scratch, "client-tarballs")
  const app = join(scratch, "client-app")
  mkdirSync(tarballs)
  mkdirSync(app)
  const wanted = ["@agent-runs/client", "@agent-runs/api", "@agent-runs/core"]
  installPacked(packages.filter(({ manifest }) => wanted.includes(manifest.name)), tarballs, app)
  const size = installed(join(app, "node_modules"))
  console.log(`@agent-runs/client installed: ${(size.bytes / 1024 / 1024).toFixed(1)} MB in ${size.packages} packages`)
  expect(readdirSync(join(app, "node_modules/@agent-runs")).sort()).toEqual(["api", "client", "core"])
  // 18 packages and 54.5 MB when written, most of it Effect's (effect, @effect/platform and theirs).
  expect(size.packages).toBeLessThanOrEqual(22)
  expect(size.bytes).toBeLessThan(64 * 1024 * 1024)
}, 120_000)
