/**
 * Start-up failures of the built server (`node examples/server/dist/main.js`), black-box: a bad
 * setting, the port in use, PostgreSQL unreachable, a SQLite file that cannot be opened, a data
 * directory that cannot be created
 * (`/proc/nope`, where Node's recursive mkdir would never return; a file in the way) or written
 * (`/proc/self`, which no user may write) each print exactly one line on stderr, naming the
 * problem and what to do, with no stack trace, and exit 1 (a PostgreSQL that never answers after
 * the connect timeout); `AGENT_RUNS_LOG_LEVEL=debug` adds the
 * trace. SIGTERM stops a server still waiting for a PostgreSQL that accepts connections but never
 * answers within a few seconds.
 */
import { spawn } from "node:child_process"
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
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
  /** Milliseconds from the spawn (or from `signalWhen`'s signal) to the exit. */
  readonly ms: number
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
 * AGENT_RUNS_* variables); `signalWhen` sends SIGTERM once it holds, and `ms` then counts from it.
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
    let from = Date.now()
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const watch = options.signalWhen === undefined ? undefined : setInterval(() => {
      if (options.signalWhen!()) {
        clearInterval(watch)
        from = Date.now()
        child.kill("SIGTERM")
      }
    }, 50)
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
    child.once("error", reject)
    child.once("close", (code, signal) => {
      clearTimeout(timer)
      clearInterval(watch)
      resolve({ code, signal, stdout, stderr, ms: Date.now() - from })
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

describe("start-up failures of the built server", () => {
  it("a bad setting: one line naming the variable and what is wrong", async () => {
    assertBuilt(inject("serverBuild"))
    const ended = await runServer({ AGENT_RUNS_DATA_DIR: dataDir(), PORT: String(await closedPort()), AGENT_RUNS_CONCURRENCY: "-1" })
    expect(oneLineFailure(ended)).toContain("AGENT_RUNS_CONCURRENCY: must be 0 or more: correct the setting or unset it")
  })

  it("the port in use: one line naming the port and PORT", async () => {
    assertBuilt(inject("serverBuild"))
    const { port } = await listen()
    const ended = await runServer({ AGENT_RUNS_DATA_DIR: dataDir(), PORT: String(port) })
    expect(oneLineFailure(ended)).toBe(
      `agent-runs: could not start: port ${port} on 127.0.0.1 is already in use: stop what uses it, or set PORT to a free port`
    )
  })

  it("PostgreSQL unreachable: one line naming where it was sought, without the password", async () => {
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

  it("a PostgreSQL that accepts connections but never answers: one line once the connect timeout (10 s) passes", async () => {
    assertBuilt(inject("serverBuild"))
    const silent = await listen({ silent: true })
    const ended = await runServer({
      AGENT_RUNS_DATA_DIR: dataDir(),
      PORT: String(await closedPort()),
      AGENT_RUNS_DATABASE_URL: `postgres://postgres@127.0.0.1:${silent.port}/agent_runs`
    })
    const line = oneLineFailure(ended)
    expect(line, line).toMatch(
      new RegExp(`^agent-runs: could not start: cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${silent.port}/agent_runs: no answer within 10s: check AGENT_RUNS_DATABASE_URL`)
    )
    expect(ended.ms).toBeLessThan(25_000)
  })

  it("AGENT_RUNS_DATA_DIR=/proc/nope fails at once (Node's recursive mkdir never returns there)", async () => {
    assertBuilt(inject("serverBuild"))
    const ended = await runServer({ AGENT_RUNS_DATA_DIR: "/proc/nope", PORT: String(await closedPort()) })
    expect(oneLineFailure(ended)).toBe(
      "agent-runs: could not start: AGENT_RUNS_DATA_DIR: cannot create /proc/nope (ENOENT: no such file or directory, " +
        "mkdir '/proc/nope'): set AGENT_RUNS_DATA_DIR to a directory this user can create and write"
    )
    expect(ended.ms).toBeLessThan(15_000)
  })

  it("a data directory with a file in the way, and a blob directory under /proc: one line each", async () => {
    assertBuilt(inject("serverBuild"))
    const file = join(scratch, "a-file")
    writeFileSync(file, "")
    const blocked = await runServer({ AGENT_RUNS_DATA_DIR: join(file, "data"), PORT: String(await closedPort()) })
    expect(oneLineFailure(blocked)).toContain(`AGENT_RUNS_DATA_DIR: cannot create ${join(file, "data")} (ENOTDIR`)
    const blobs = await runServer({ AGENT_RUNS_DATA_DIR: dataDir(), AGENT_RUNS_BLOB_DIR: "/proc/nope/blobs", PORT: String(await closedPort()) })
    expect(oneLineFailure(blobs)).toContain("AGENT_RUNS_BLOB_DIR: cannot create /proc/nope/blobs")
  })

  it("a SQLite database file that cannot be opened, or whose directory cannot be created: one line each", async () => {
    assertBuilt(inject("serverBuild"))
    const advice = "set AGENT_RUNS_DATABASE_URL (or AGENT_RUNS_DATA_DIR) to a path this user can create and write"
    const unopenable = await runServer({
      AGENT_RUNS_DATA_DIR: dataDir(),
      PORT: String(await closedPort()),
      AGENT_RUNS_DATABASE_URL: "sqlite:/proc/agent-runs.db"
    })
    expect(oneLineFailure(unopenable)).toBe(
      `agent-runs: could not start: cannot open the SQLite database /proc/agent-runs.db: unable to open database file: ${advice}`
    )
    const uncreatable = await runServer({
      AGENT_RUNS_DATA_DIR: dataDir(),
      PORT: String(await closedPort()),
      AGENT_RUNS_DATABASE_URL: "sqlite:/proc/nope/agent-runs.db"
    })
    expect(oneLineFailure(uncreatable)).toMatch(/cannot open the SQLite database \/proc\/nope\/agent-runs\.db: .*ENOENT.*: set AGENT_RUNS_DATABASE_URL/)
  })

  it("a data directory that exists but this user cannot write (/proc/self, root included): one line", async () => {
    assertBuilt(inject("serverBuild"))
    const ended = await runServer({ AGENT_RUNS_DATA_DIR: "/proc/self", PORT: String(await closedPort()) })
    expect(oneLineFailure(ended)).toBe(
      "agent-runs: could not start: AGENT_RUNS_DATA_DIR: /proc/self is not writable by this user: set AGENT_RUNS_DATA_DIR " +
        "to a directory this user can create and write"
    )
  })

  it("AGENT_RUNS_LOG_LEVEL=debug adds the cause with its stack trace after the line", async () => {
    assertBuilt(inject("serverBuild"))
    const ended = await runServer({ AGENT_RUNS_DATA_DIR: "/proc/nope", PORT: String(await closedPort()), AGENT_RUNS_LOG_LEVEL: "debug" })
    expect(ended.code).toBe(1)
    const lines = ended.stderr.split("\n")
    expect(lines[0]).toMatch(/^agent-runs: could not start: AGENT_RUNS_DATA_DIR: cannot create \/proc\/nope/)
    expect(lines.slice(1).join("\n")).toMatch(/DirectoryUnusable[\s\S]*\n\s+at /)
  })

  it("SIGTERM stops a server still waiting for a PostgreSQL that never answers, within a few seconds", async () => {
    assertBuilt(inject("serverBuild"))
    const silent = await listen({ silent: true })
    const ended = await runServer(
      { AGENT_RUNS_DATA_DIR: dataDir(), PORT: String(await closedPort()), AGENT_RUNS_DATABASE_URL: `postgres://postgres@127.0.0.1:${silent.port}/x` },
      { signalWhen: () => silent.connections.length > 0 }
    )
    expect(silent.connections.length).toBeGreaterThan(0)
    expect(ended.signal).toBeNull()
    expect(ended.code).toBe(0)
    expect(ended.ms).toBeLessThan(6000)
    expect(ended.stderr).toBe("")
  })
})
