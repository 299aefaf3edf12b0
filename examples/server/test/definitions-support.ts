/** What the definitions tests share: running the built CLI and server to their end, and definitions directories. */
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll } from "vitest"
import { REPO_ROOT } from "./process.js"

/** The built CLI. */
const CLI = join(REPO_ROOT, "packages/cli/dist/main.js")

export interface ProcessRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a built entry point to its end (asynchronously: the server under test must keep answering). */
export const runToEnd = (main: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>>): Promise<ProcessRun> =>
  new Promise((resolve, reject) => {
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith("AGENT_RUNS_") && name !== "PORT" && name !== "HOST")
    )
    const child = spawn(process.execPath, [main, ...args], { cwd: REPO_ROOT, env: { ...inherited, ...env } })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000)
    child.once("error", reject)
    child.once("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

/** Runs the built CLI. */
export const cli = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) => runToEnd(CLI, args, env)

const roots: Array<string> = []
afterAll(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })))

/** A new empty directory, removed after the file's tests. */
export const temporaryDir = (prefix: string): string => {
  const root = mkdtempSync(join(tmpdir(), prefix))
  roots.push(root)
  return root
}

/** A definitions directory with these files (path relative to it → text). */
export const directory = (files: Readonly<Record<string, string>>): string => {
  const root = temporaryDir("agent-runs-definitions-")
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

