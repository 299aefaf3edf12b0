/**
 * Start-up of the built server (`node examples/server/dist/main.js`), black-box: a failed start
 * prints exactly one line on stderr, naming the problem and what to do, with no stack trace and
 * no password, and exits 1; SIGTERM stops a server still waiting for a PostgreSQL that accepts
 * connections but never answers, long before the connect timeout. What each failure says (a bad
 * setting, the port in use, PostgreSQL unreachable or silent, SQLite, data and blob directories,
 * `AGENT_RUNS_LOG_LEVEL=debug`) is tested in process in packages/cli/test/Startup.test.ts.
 */
import { spawn } from "node:child_process"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, inject, it } from "vitest"
import { assertBuilt, MAIN, REPO_ROOT } from "./process.js"

interface Ended {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

const scratch = mkdtempSync(join(tmpdir(), "agent-runs-startup-"))
// Searchable: as root, the server's sandboxes run as users of their own below it.
chmodSync(scratch, 0o755)
const servers: Array<Server> = []
afterAll(() => {
  servers.forEach((server) => server.close())
  rmSync(scratch, { recursive: true, force: true })
})

/** A loopback TCP server: `silent` accepts connections and never answers (a PostgreSQL that hangs). */
const listen = (options: { readonly silent?: boolean } = {}) =>
  new Promise<{ port: number; connections: Array<Socket> }>((resolve) => {
    const connections: Array<Socket> = []
    const server = createServer((socket) => {
      connections.push(socket)
      if (options.silent !== true) socket.end()
    })
    servers.push(server)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      resolve({ port: typeof address === "object" && address !== null ? address.port : 0, connections })
    })
  })

/** A port nothing listens on. */
const closedPort = async () => {
  const { port } = await listen()
  await new Promise((resolve) => servers.pop()!.close(resolve))
  return port
}

/**
 * Runs the built server to its end (killed after 30 s) with this environment (no inherited
 * AGENT_RUNS_* variables); `signalWhen` sends SIGTERM once it holds.
 */
const runServer = (
  env: Readonly<Record<string, string>>,
  options: { readonly signalWhen?: () => boolean } = {}
): Promise<Ended> =>
  new Promise((resolve, reject) => {
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([name]) =>
        !name.startsWith("AGENT_RUNS_") && name !== "PORT" && name !== "HOST" && name !== "NODE_OPTIONS"
      )
    )
    const child = spawn(process.execPath, [MAIN], {
      cwd: REPO_ROOT,
      env: { ...inherited, HOST: "127.0.0.1", ...env }
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const watch = options.signalWhen === undefined ? undefined : setInterval(() => {
      if (options.signalWhen!()) {
        clearInterval(watch)
        child.kill("SIGTERM")
      }
    }, 50)
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
    child.once("error", reject)
    child.once("close", (code, signal) => {
      clearTimeout(timer)
      clearInterval(watch)
      resolve({ code, signal, stdout, stderr })
    })
  })

const dataDir = () => mkdtempSync(join(scratch, "data-"))

/** Exit 1 and exactly one line on stderr, without a stack trace; the line. */
const oneLineFailure = (ended: Ended): string => {
  expect(ended.code, `stdout:\n${ended.stdout}\nstderr:\n${ended.stderr}`).toBe(1)
  const lines = ended.stderr.split("\n").filter((line) => line !== "")
  expect(lines).toHaveLength(1)
  expect(ended.stderr).not.toMatch(/^\s+at /m)
  expect(lines[0]).toMatch(/^agent-runs: could not start: /)
  return lines[0]!
}

describe("start-up of the built server", () => {
  it("a failed start (PostgreSQL unreachable): exit 1, one line on stderr naming where it was sought, without the password", async () => {
    assertBuilt(inject("serverBuild"))
    const port = await closedPort()
    const ended = await runServer({
      AGENT_RUNS_DATA_DIR: dataDir(),
      PORT: String(await closedPort()),
      AGENT_RUNS_DATABASE_URL: `postgres://postgres:hunter2@127.0.0.1:${port}/agent_runs`
    })
    const line = oneLineFailure(ended)
    expect(line).toContain(`cannot connect to PostgreSQL at 127.0.0.1:${port}/agent_runs: connect ECONNREFUSED`)
    expect(line).toContain("check AGENT_RUNS_DATABASE_URL")
    expect(ended.stdout + ended.stderr).not.toContain("hunter2")
  })

  it("SIGTERM stops a server still waiting for a PostgreSQL that never answers, before the connect timeout", async () => {
    assertBuilt(inject("serverBuild"))
    const silent = await listen({ silent: true })
    // A connect timeout longer than runServer waits: only the stop while starting can end the process (0, not killed).
    const ended = await runServer(
      {
        AGENT_RUNS_DATA_DIR: dataDir(),
        PORT: String(await closedPort()),
        AGENT_RUNS_DATABASE_URL: `postgres://postgres@127.0.0.1:${silent.port}/x`,
        AGENT_RUNS_DATABASE_CONNECT_TIMEOUT_SECONDS: "600"
      },
      { signalWhen: () => silent.connections.length > 0 }
    )
    expect(silent.connections.length).toBeGreaterThan(0)
    expect(ended.signal).toBeNull()
    expect(ended.code).toBe(0)
    expect(ended.stderr).toBe("")
  })
})
