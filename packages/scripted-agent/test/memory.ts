/**
 * The scripted agent in memory: stdin is a channel the test pushes lines into, stdout and stderr
 * are arrays, files and HTTP are stubs, and `sleep` waits for real (tests use short sleeps).
 */
import { type AgentIO, type FetchResponse, runAgent } from "../src/index.js"

/** An async iterable of lines that the test feeds and closes. */
export class LineChannel implements AsyncIterable<string> {
  private readonly buffered: Array<string> = []
  private waiting: ((result: IteratorResult<string>) => void) | undefined
  private closed = false

  push(line: string): void {
    if (this.waiting) {
      const resolve = this.waiting
      this.waiting = undefined
      resolve({ value: line, done: false })
    } else this.buffered.push(line)
  }

  send(message: unknown): void {
    this.push(JSON.stringify(message))
  }

  close(): void {
    this.closed = true
    this.waiting?.({ value: undefined, done: true })
    this.waiting = undefined
  }

  [Symbol.asyncIterator](): AsyncIterator<string> {
    return {
      next: () => {
        const line = this.buffered.shift()
        if (line !== undefined) return Promise.resolve({ value: line, done: false })
        if (this.closed) return Promise.resolve({ value: undefined, done: true })
        return new Promise((resolve) => (this.waiting = resolve))
      }
    }
  }
}

export interface FetchCall {
  readonly url: string
  readonly method: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
}

export interface MemoryAgent {
  readonly stdin: LineChannel
  /** Every stdout line so far. */
  readonly lines: Array<string>
  /** The stdout lines that are JSON, parsed. */
  readonly messages: () => ReadonlyArray<Record<string, unknown>>
  /** The texts of the `message` lines. */
  readonly said: () => ReadonlyArray<string>
  readonly stderr: Array<string>
  readonly fetches: Array<FetchCall>
  readonly sleeps: Array<number>
  /** The exit code, once the agent has finished. */
  readonly exit: Promise<number>
  /** Resolves once a stdout line satisfies `predicate`. */
  readonly waitFor: (predicate: (message: Record<string, unknown>) => boolean) => Promise<void>
}

export interface MemoryOptions {
  readonly files?: Readonly<Record<string, string>>
  readonly fetch?: (call: FetchCall) => Promise<FetchResponse>
}

const parsed = (line: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(line)
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** Starts the agent in memory; the test pushes the start line (and more) into `stdin`. */
export const memoryAgent = (options: MemoryOptions = {}): MemoryAgent => {
  const stdin = new LineChannel()
  const lines: Array<string> = []
  const stderr: Array<string> = []
  const fetches: Array<FetchCall> = []
  const sleeps: Array<number> = []
  let watchers: Array<() => void> = []
  const io: AgentIO = {
    lines: stdin,
    writeLine: (line) => {
      lines.push(line)
      const current = watchers
      watchers = []
      for (const watch of current) watch()
    },
    writeStderr: (text) => {
      stderr.push(text)
    },
    readFile: async (path) => {
      const content = options.files?.[path]
      if (content === undefined) throw new Error(`ENOENT: no such file ${path}`)
      return content
    },
    fetch: async (url, init) => {
      const call = { url, method: init.method, headers: init.headers, body: init.body }
      fetches.push(call)
      if (!options.fetch) throw new Error("no fetch stub")
      return options.fetch(call)
    },
    sleep: (ms, signal) => {
      sleeps.push(ms)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, ms)
        signal.addEventListener("abort", () => {
          clearTimeout(timer)
          reject(new Error("aborted"))
        })
      })
    }
  }
  const messages = () => lines.map(parsed).filter((m): m is Record<string, unknown> => m !== undefined)
  const waitFor = async (predicate: (message: Record<string, unknown>) => boolean): Promise<void> => {
    while (!messages().some(predicate)) await new Promise<void>((resolve) => watchers.push(resolve))
  }
  return {
    stdin,
    lines,
    messages,
    said: () => messages().filter((m) => m.type === "message").map((m) => m.text as string),
    stderr,
    fetches,
    sleeps,
    exit: runAgent(io),
    waitFor
  }
}

/** The start message with defaults for everything the test does not set. */
export const start = (fields: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: "start",
  run_id: "run-1",
  execution_id: "1",
  conversation_id: "conv-1",
  mode: "normal",
  prompt: "",
  title: "",
  base_prompt: "",
  model_id: "scripted",
  skill: null,
  mcp_servers: {},
  attachments: [],
  history: [],
  followups: [],
  api: { base_url: "http://127.0.0.1:1", run_token: "token-1" },
  ...fields
})

/** Runs the agent on one start message with stdin closed after it: the agent and its exit code. */
export const runOnce = async (
  fields: Record<string, unknown>,
  options: MemoryOptions = {}
): Promise<{ readonly agent: MemoryAgent; readonly code: number }> => {
  const agent = memoryAgent(options)
  agent.stdin.send(start(fields))
  agent.stdin.close()
  return { agent, code: await agent.exit }
}
