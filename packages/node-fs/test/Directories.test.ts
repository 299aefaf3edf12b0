/** `ensureDirectory`: nested directories are created; a path that cannot exist fails at once, naming why. */
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, expect, it } from "vitest"
import { Directories } from "../src/index.js"

const scratch = mkdtempSync(join(tmpdir(), "agent-runs-node-fs-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

it("creates a directory and its missing parents, and accepts one that exists", () => {
  const dir = join(scratch, "a", "b", "c")
  Directories.ensureDirectory(dir, { mode: 0o700 })
  expect(statSync(dir).isDirectory()).toBe(true)
  expect(statSync(dir).mode & 0o777).toBe(0o700)
  Directories.ensureDirectory(dir)
  expect(existsSync(dir)).toBe(true)
})

it("fails at once under /proc, where Node's recursive mkdir never returns", () => {
  const started = Date.now()
  expect(() => Directories.ensureDirectory("/proc/nope/deeper")).toThrow(/ENOENT/)
  expect(Date.now() - started).toBeLessThan(1000)
})

it("fails with ENOTDIR when a file is in the way", () => {
  const file = join(scratch, "file")
  writeFileSync(file, "")
  expect(() => Directories.ensureDirectory(join(file, "data"))).toThrow(/ENOTDIR/)
  expect(() => Directories.ensureDirectory(file)).toThrow(/ENOTDIR/)
})
