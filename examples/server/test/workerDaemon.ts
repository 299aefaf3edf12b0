/**
 * The built CLI's `agent-runs worker` as a child process, for the black-box tests of self-hosted
 * workers: started and waited for until it says it is connected, its output kept, killed by the
 * file's `afterAll`; and a team's service account to run it with.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, expect } from "vitest"
import { makeTeam } from "./harness.js"
import { call, REPO_ROOT } from "./process.js"

const CLI = join(REPO_ROOT, "packages", "cli", "dist", "main.js")

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `read` until `done` holds (or the time is up); returns the last value. */
export const until = async <A>(read: () => Promise<A>, done: (a: A) => boolean, timeoutMs = 20_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (done(value) || Date.now() > deadline) return value
    await sleep(100)
  }
}

export interface WorkerProcess {
  readonly child: ChildProcess
  readonly output: () => string
  readonly exited: Promise<void>
}

const workers = new Set<ChildProcess>()
const dirs: Array<string> = []

/** A directory removed after the file's tests. */
export const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "agent-runs-worker-"))
  dirs.push(dir)
  return dir
}

afterAll(() => {
  for (const child of workers) child.kill("SIGKILL")
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** Starts `agent-runs worker` and waits until it says it is connected. */
export const startWorker = async (options: {
  readonly url: string
  readonly token: string
  readonly workerId: string
  readonly dataDir: string
  readonly extra?: ReadonlyArray<string>
  /** Variables over this process's (without its `AGENT_RUNS_*` and `NODE_OPTIONS`). */
  readonly env?: Readonly<Record<string, string>>
}): Promise<WorkerProcess> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith("AGENT_RUNS_") && name !== "NODE_OPTIONS") env[name] = value
  }
  const child = spawn(
    process.execPath,
    [CLI, "worker", "--server", options.url, "--token", options.token, "--worker-id", options.workerId, "--data-dir", options.dataDir, ...(options.extra ?? [])],
    // Stopped, it hands its runs back at once unless a test gives it a grace period.
    { cwd: REPO_ROOT, env: { ...env, AGENT_RUNS_DRAIN_SECONDS: "0", ...options.env }, stdio: ["ignore", "pipe", "pipe"] }
  )
  workers.add(child)
  let out = ""
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (out += chunk))
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (out += chunk))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  void exited.then(() => workers.delete(child))
  await until(async () => out, (o) => o.includes("connected to") || child.exitCode !== null, 20_000)
  if (!out.includes("connected to")) throw new Error(`the worker did not connect:\n${out}`)
  return { child, output: () => out, exited }
}

/** Stops a worker with `signal` and waits for it to exit. */
export const kill = async (worker: WorkerProcess, signal: NodeJS.Signals) => {
  worker.child.kill(signal)
  await worker.exited
}

/** A team with its users (`makeTeam`) and a service account (member) whose token runs its workers. */
export const teamWithWorker = async (server: { url: string }, adminToken: string, name: string) => {
  const team = await makeTeam({ url: server.url, adminToken }, name)
  const principal = await call(server, "POST", "/api/v1/admin/principals", {
    token: adminToken,
    body: { type: "service_account", display_name: `${name} worker`, memberships: [{ team_uid: team.uid, role: "member" }] }
  })
  expect(principal.status).toBe(201)
  const token = await call(server, "POST", `/api/v1/admin/principals/${principal.body.uid}/tokens`, {
    token: adminToken,
    body: { name: "worker" }
  })
  expect(token.status).toBe(201)
  return { ...team, worker: token.body.token as string }
}
