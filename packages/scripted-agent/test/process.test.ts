/**
 * Black-box tests of the built program: `node dist/main.js` as a child process, JSON Lines on its
 * stdin and stdout (the globalSetup builds it first).
 */
import { spawn } from "node:child_process"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { beforeAll, describe, expect, inject, it } from "vitest"
import { start } from "./memory.js"

const MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url))

interface Ended {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: ReadonlyArray<string>
  readonly stderr: string
  readonly millis: number
}

/** The agent as a process: write to its stdin, wait for a stdout line, wait for its end. */
const spawnAgent = () => {
  const child = spawn(process.execPath, [MAIN], { stdio: ["pipe", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  let watchers: Array<() => void> = []
  const began = Date.now()
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk
    const current = watchers
    watchers = []
    for (const watch of current) watch()
  })
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
  child.stdin.on("error", () => {}) // the agent may exit before reading everything
  const ended = new Promise<Ended>((resolve) =>
    child.on("close", (code, signal) =>
      resolve({ code, signal, stdout: stdout.split("\n").filter((l) => l !== ""), stderr, millis: Date.now() - began })
    )
  )
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000)
  void ended.then(() => clearTimeout(timer))
  return {
    sendRaw: (line: string) => child.stdin.write(`${line}\n`),
    send: (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`),
    end: () => child.stdin.end(),
    /** Resolves once stdout has a line containing `text`. */
    waitFor: async (text: string) => {
      while (!stdout.includes(text)) await new Promise<void>((resolve) => watchers.push(resolve))
    },
    ended
  }
}

const json = (lines: ReadonlyArray<string>) => lines.map((line) => JSON.parse(line) as Record<string, unknown>)

beforeAll(() => {
  const build = inject("scriptedAgentBuild")
  if (!build.ok) throw new Error(`npx tsc -b packages/scripted-agent failed, so dist is stale:\n${build.output}`)
})

describe("node dist/main.js", () => {
  it("runs a prompt and exits 0 with every line flushed", async () => {
    const agent = spawnAgent()
    agent.send(start({ execution_id: "e-1", prompt: '@say hello\n@tool bash {"cmd":"ls"}\n@big 200000' }))
    agent.end()
    const ended = await agent.ended
    expect(ended.code).toBe(0)
    const messages = json(ended.stdout)
    expect(messages.map((m) => m.type)).toEqual([
      "session", "step_start", "message", "action", "action_result", "message", "usage", "step_end", "result"
    ])
    expect(messages[0]).toEqual({ type: "session", session_id: "scripted-e-1", session_link: null })
    expect((messages[5]?.text as string).length).toBe(200_000)
    expect(messages.at(-1)).toEqual({ type: "result", outcome: "succeeded" })
  })

  it("@exit 3 exits with code 3 and no result", async () => {
    const agent = spawnAgent()
    agent.send(start({ prompt: "@say bye\n@exit 3" }))
    const ended = await agent.ended
    expect(ended.code).toBe(3)
    expect(json(ended.stdout).map((m) => m.type)).toEqual(["session", "step_start", "message"])
  })

  it("@fail exits 1 after the failed result", async () => {
    const agent = spawnAgent()
    agent.send(start({ prompt: "@fail tests_failed 2 failures" }))
    const ended = await agent.ended
    expect(ended.code).toBe(1)
    expect(json(ended.stdout).at(-1)).toEqual({ type: "result", outcome: "failed", error_code: "tests_failed", message: "2 failures" })
  })

  it("ignores garbage stdin lines, and @print and @stderr write raw output", async () => {
    const agent = spawnAgent()
    agent.sendRaw("this is not json")
    agent.sendRaw("[1,2,3]")
    agent.sendRaw('{"type":')
    agent.send(start({ prompt: "@print raw line\n@stderr to stderr\n@await-followup" }))
    agent.sendRaw("more garbage \u0000\u00ff")
    agent.send({ type: "followup", message: "hi", mode: "normal" })
    agent.end()
    const ended = await agent.ended
    expect(ended.code).toBe(0)
    expect(ended.stdout).toContain("raw line")
    expect(ended.stderr).toBe("to stderr\n")
    const messages = json(ended.stdout.filter((l) => l !== "raw line"))
    expect(messages.filter((m) => m.type === "message").map((m) => m.text)).toEqual(["received: hi"])
  })

  it("waits for a live follow-up and finishes when stdin closes while waiting", async () => {
    const agent = spawnAgent()
    agent.send(start({ prompt: "@say ready\n@await-followup\n@await-followup\n@say end" }))
    await agent.waitFor('"ready"')
    agent.send({ type: "followup", message: "@say got it", mode: "normal" })
    await agent.waitFor('"got it"')
    agent.end()
    const ended = await agent.ended
    expect(ended.code).toBe(0)
    expect(json(ended.stdout).filter((m) => m.type === "message").map((m) => m.text)).toEqual(["ready", "got it", "end"])
  })

  it("a cancel during @sleep 10000 exits 0 quickly", async () => {
    const agent = spawnAgent()
    agent.send(start({ prompt: "@say sleeping\n@sleep 10000" }))
    await agent.waitFor('"sleeping"')
    agent.send({ type: "cancel" })
    const ended = await agent.ended
    expect(ended.code).toBe(0)
    expect(ended.millis).toBeLessThan(5000)
    expect(json(ended.stdout).at(-1)).toEqual({ type: "status", message: "cancelled" })
  })

  it("@spawn POSTs to the API with the run token and says the child run id", async () => {
    const requests: Array<{ method: string | undefined; url: string | undefined; headers: IncomingHttpHeaders; body: string }> = []
    const server = createServer((req, res) => {
      let body = ""
      req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk))
      req.on("end", () => {
        requests.push({ method: req.method, url: req.url, headers: req.headers, body })
        const ok = JSON.parse(body).prompt !== "refuse"
        res.writeHead(ok ? 201 : 422, { "content-type": "application/json" })
        res.end(ok ? JSON.stringify({ run_id: "child-42", state: "QUEUED" }) : '{"error":"nope"}')
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`
      const agent = spawnAgent()
      agent.send(start({ prompt: "@spawn write the docs\n@spawn refuse", api: { base_url: baseUrl, run_token: "run-token-1" } }))
      agent.end()
      const ended = await agent.ended
      expect(ended.code).toBe(1)
      expect(requests.map((r) => [r.method, r.url, r.headers.authorization, r.headers["content-type"], r.body])).toEqual([
        ["POST", "/api/v1/agent/runs", "Bearer run-token-1", "application/json", '{"prompt":"write the docs"}'],
        ["POST", "/api/v1/agent/runs", "Bearer run-token-1", "application/json", '{"prompt":"refuse"}']
      ])
      const messages = json(ended.stdout)
      expect(messages.filter((m) => m.type === "message").map((m) => m.text)).toEqual(["spawned: child-42"])
      expect(messages.at(-1)).toEqual({
        type: "result",
        outcome: "failed",
        error_code: "agent_failed",
        message: `@spawn: POST ${baseUrl}/agent/runs answered 422: {"error":"nope"}`
      })
    } finally {
      server.close()
    }
  })
})
