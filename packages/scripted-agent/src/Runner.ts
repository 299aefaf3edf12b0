/**
 * The scripted agent itself, with its I/O injected (`AgentIO`), so tests run it in memory and
 * `main.ts` runs it on stdin/stdout. `runAgent` reads the start message, acts on the prompt's
 * directives and the follow-ups as its README describes, and resolves with the
 * exit code the process should end with.
 */
import { type Directive, directivesOf } from "./Directive.js"
import { type Followup, Inbox } from "./Inbox.js"
import { encodeOutput, type OutputMessage, type StartMessage } from "./Protocol.js"

/** The answer of `AgentIO.fetch`: the subset of the global `Response` the agent reads. */
export interface FetchResponse {
  readonly status: number
  readonly text: () => Promise<string>
}

/** Everything the agent does to the outside world. */
export interface AgentIO {
  /** stdin, line by line (without newlines); ends when stdin closes. */
  readonly lines: AsyncIterable<string>
  /** Writes one stdout line; the newline is the writer's. */
  readonly writeLine: (line: string) => void
  /** Writes text to stderr as is. */
  readonly writeStderr: (text: string) => void
  readonly readFile: (path: string) => Promise<string>
  readonly fetch: (
    url: string,
    init: {
      readonly method: string
      readonly headers: Readonly<Record<string, string>>
      readonly body?: string
      readonly signal: AbortSignal
    }
  ) => Promise<FetchResponse>
  /** Waits `ms` milliseconds; may reject once `signal` aborts (the agent has stopped by then). */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>
}

/** Why the agent stops acting before the end of its script. */
type Stop =
  | { readonly kind: "block" }
  | { readonly kind: "fail"; readonly code: string; readonly message: string }
  | { readonly kind: "exit"; readonly code: number }

const agentFailed = (message: string): Stop => ({ kind: "fail", code: "agent_failed", message })

/** Characters as a reader counts them (code points, not UTF-16 units). */
const characters = (text: string): number => {
  let n = 0
  for (const _ of text) n++
  return n
}

const isJsonAttachment = (name: string, mediaType: string): boolean =>
  name.toLowerCase().endsWith(".json") || /^application\/json\b/i.test(mediaType)

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const MAX_BODY_IN_MESSAGE = 2000

/** A response body as said in a message: at most MAX_BODY_IN_MESSAGE characters. */
const shorten = (body: string): string => body.length > MAX_BODY_IN_MESSAGE ? `${body.slice(0, MAX_BODY_IN_MESSAGE)}…` : body

/** One run of the agent, from the start message to the exit code. */
class Session {
  private inputChars: number
  private outputChars = 0
  private cost = 0
  private toolCount = 0
  private stepCount = 0
  private readonly openSteps: Array<string> = []
  private readonly executionStep: string

  constructor(
    private readonly start: StartMessage,
    private readonly inbox: Inbox,
    private readonly io: AgentIO,
    private readonly emit: (message: OutputMessage) => void,
    private readonly writeRaw: (line: string) => void,
    private readonly signal: AbortSignal
  ) {
    this.inputChars = characters(start.prompt)
    this.executionStep = `execution-${start.execution_id}`
  }

  async run(): Promise<number> {
    this.emit({ type: "session", session_id: `scripted-${this.start.execution_id}`, session_link: null })
    this.emit({ type: "step_start", id: this.executionStep, description: this.start.title || "Scripted run" })
    const stop = await this.body()
    return this.finish(stop)
  }

  private async body(): Promise<Stop | undefined> {
    if (this.start.mode === "debug") {
      const handled = await this.handlePending()
      if (handled.count === 0) this.say("debug: no message")
      return handled.stop
    }
    if (this.start.history.length > 0) {
      const handled = await this.handlePending()
      if (handled.count === 0) this.say(`Continued with ${this.start.history.length} messages of history`)
      return handled.stop
    }
    const directives = directivesOf(this.start.prompt)
    if (directives.length === 0) {
      this.say(`Done: ${this.start.prompt.split("\n")[0] ?? ""}`)
    } else {
      const stop = await this.act(directives)
      if (stop !== undefined) return stop
    }
    return (await this.handlePending()).stop
  }

  /** Handles every follow-up already received (and those arriving meanwhile), in order. */
  private async handlePending(): Promise<{ readonly count: number; readonly stop: Stop | undefined }> {
    let count = 0
    for (let followup = this.inbox.take(); followup !== undefined; followup = this.inbox.take()) {
      count++
      const stop = await this.handleFollowup(followup)
      if (stop !== undefined) return { count, stop }
    }
    return { count, stop: undefined }
  }

  private async handleFollowup(followup: Followup): Promise<Stop | undefined> {
    this.inputChars += characters(followup.text)
    if ((followup.mode ?? this.start.mode) === "debug") {
      this.say(`debug: ${followup.text}`)
      return undefined
    }
    const directives = directivesOf(followup.text)
    if (directives.length === 0) {
      this.say(`received: ${followup.text}`)
      return undefined
    }
    return this.act(directives)
  }

  private async act(directives: ReadonlyArray<Directive>): Promise<Stop | undefined> {
    for (const directive of directives) {
      const stop = await this.perform(directive)
      if (stop !== undefined) return stop
    }
    return undefined
  }

  private say(text: string): void {
    this.outputChars += characters(text)
    this.emit({ type: "message", role: "assistant", text })
  }

  private async perform(directive: Directive): Promise<Stop | undefined> {
    switch (directive.kind) {
      case "say":
        this.say(directive.text)
        return undefined
      case "tool": {
        const id = `tool-${++this.toolCount}`
        this.emit({ type: "action", id, category: "command", name: directive.name, input: directive.input })
        this.emit({ type: "action_result", action_id: id, state: "completed", output: { ok: true, input: directive.input } })
        return undefined
      }
      case "sleep":
        await this.io.sleep(directive.ms, this.signal)
        return undefined
      case "read-skill":
        this.emit(
          directive.bundledId === undefined
            ? { type: "read_skill", skill_path: directive.path }
            : { type: "read_skill", skill_path: directive.path, bundled_skill_id: directive.bundledId }
        )
        return undefined
      case "artifact":
        this.emit(
          directive.artifactType === "PULL_REQUEST"
            ? { type: "artifact", artifact_type: "PULL_REQUEST", data: { branch: directive.branch, url: directive.url } }
            : { type: "artifact", artifact_type: "EXTERNAL_REFERENCE", data: { url: directive.url } }
        )
        return undefined
      case "await-followup": {
        const followup = await this.inbox.next()
        return followup === undefined ? undefined : this.handleFollowup(followup)
      }
      case "block":
        this.emit({ type: "blocked", message: directive.text })
        return { kind: "block" }
      case "fail":
        return { kind: "fail", code: directive.code, message: directive.message }
      case "exit":
        return { kind: "exit", code: directive.code }
      case "attachments":
        return this.sayAttachments()
      case "skill": {
        const skill = this.start.skill
        this.say(skill === null ? "no skill" : `skill: ${skill.name} ${skill.spec}\n${skill.content}`)
        return undefined
      }
      case "mcp":
        this.say(`mcp_servers: ${JSON.stringify(this.start.mcp_servers ?? {})}`)
        return undefined
      case "traceparent": {
        const traceparent = process.env["TRACEPARENT"]
        this.say(traceparent === undefined || traceparent === "" ? "no traceparent" : `traceparent: ${traceparent}`)
        return undefined
      }
      case "spawn":
        return this.spawn(directive.prompt)
      case "api":
        return this.callApi(directive.method, directive.path, directive.body)
      case "step": {
        const id = `step-${++this.stepCount}`
        this.openSteps.push(id)
        this.emit({ type: "step_start", id, description: directive.description })
        return undefined
      }
      case "end-step": {
        const id = this.openSteps.pop()
        if (id === undefined) this.say("no open step to end")
        else this.emit({ type: "step_end", id, summary: directive.summary })
        return undefined
      }
      case "history": {
        const history = this.start.history
        const last = history[history.length - 1]
        this.say(`history: ${history.length} messages${last === undefined ? "" : ` last: ${last.text}`}`)
        return undefined
      }
      case "print":
        this.writeRaw(directive.text)
        return undefined
      case "big":
        this.say("x".repeat(directive.size))
        return undefined
      case "stderr":
        this.io.writeStderr(`${directive.text}\n`)
        return undefined
      case "spend":
        this.cost += directive.usd
        this.reportUsage()
        return undefined
      case "invalid":
        return agentFailed(directive.problem)
      case "unknown":
        this.say(`unknown directive: ${directive.name}`)
        return undefined
    }
  }

  private async sayAttachments(): Promise<undefined> {
    if (this.start.attachments.length === 0) {
      this.say("no attachments")
      return undefined
    }
    for (const { name, path, media_type } of this.start.attachments) {
      if (!isJsonAttachment(name, media_type)) {
        this.say(`attachment: ${name}`)
        continue
      }
      try {
        const content = await this.io.readFile(path)
        this.say(`attachment: ${name}\n${content.trimEnd()}`)
      } catch (error) {
        this.say(`attachment: ${name} (unreadable: ${errorText(error)})`)
      }
    }
    return undefined
  }

  /**
   * Sends a request to the service's API (`path` under the start message's `api.base_url`) with
   * the run token: its status and body, or why it could not be sent.
   */
  private async request(
    method: string,
    path: string,
    body: string | undefined
  ): Promise<{ readonly url: string; readonly status: number; readonly body: string } | { readonly problem: string }> {
    const api = this.start.api
    if (api === null || api.base_url === "") return { problem: "the start message has no api.base_url" }
    const url = `${api.base_url.replace(/\/+$/, "")}${path}`
    try {
      const response = await this.io.fetch(url, {
        method,
        headers: { "content-type": "application/json", authorization: `Bearer ${api.run_token}` },
        ...(body === undefined ? {} : { body }),
        signal: this.signal
      })
      return { url, status: response.status, body: await response.text() }
    } catch (error) {
      return { problem: `${method} ${url} failed: ${errorText(error)}` }
    }
  }

  /** `@api`: says `api: METHOD PATH -> STATUS BODY` (the body cut short), whatever the status. */
  private async callApi(method: string, path: string, body: string | undefined): Promise<Stop | undefined> {
    const answer = await this.request(method, path, body)
    if ("problem" in answer) return agentFailed(`@api: ${answer.problem}`)
    this.say(`api: ${method} ${path} -> ${answer.status} ${shorten(answer.body)}`)
    return undefined
  }

  private async spawn(prompt: string): Promise<Stop | undefined> {
    const answer = await this.request("POST", "/agent/runs", JSON.stringify({ prompt }))
    if ("problem" in answer) return agentFailed(`@spawn: ${answer.problem}`)
    const { body, status, url } = answer
    const shown = shorten(body)
    if (status < 200 || status > 299) return agentFailed(`@spawn: POST ${url} answered ${status}: ${shown}`)
    let runId: unknown
    try {
      runId = (JSON.parse(body) as { run_id?: unknown } | null)?.run_id
    } catch {
      runId = undefined
    }
    if (typeof runId !== "string") return agentFailed(`@spawn: POST ${url} answered ${status} without a run_id: ${shown}`)
    this.say(`spawned: ${runId}`)
    return undefined
  }

  /** Reports the execution's usage so far (characters as tokens, and what `@spend` added). */
  private reportUsage(): void {
    this.emit({ type: "usage", input_tokens: this.inputChars, output_tokens: this.outputChars, inference_cost: this.cost, compute_cost: 0 })
  }

  /** Closes the open steps, reports usage and the result; the exit code. */
  private finish(stop: Stop | undefined): number {
    if (stop?.kind === "exit") return stop.code
    for (let id = this.openSteps.pop(); id !== undefined; id = this.openSteps.pop()) {
      this.emit({ type: "step_end", id, summary: "done" })
    }
    this.reportUsage()
    this.emit({ type: "step_end", id: this.executionStep, summary: "done" })
    if (stop?.kind === "block") return 0
    if (stop?.kind === "fail") {
      this.emit({
        type: "result",
        outcome: "failed",
        error_code: stop.code,
        ...(stop.message === "" ? {} : { message: stop.message })
      })
      return 1
    }
    this.emit({ type: "result", outcome: "succeeded" })
    return 0
  }
}

/**
 * Runs the scripted agent on `io` until it finishes, fails, exits or is cancelled: the exit code.
 * Never rejects: an unexpected error is a failed result (`agent_failed`) and exit code 1. Once it
 * has resolved, it writes nothing more.
 */
export const runAgent = async (io: AgentIO): Promise<number> => {
  let open = true
  const writeRaw = (line: string): void => {
    if (open) io.writeLine(line)
  }
  const emit = (message: OutputMessage): void => writeRaw(encodeOutput(message))
  const controller = new AbortController()
  const inbox = new Inbox(io.lines)

  const main = async (): Promise<number> => {
    try {
      const start = await inbox.start
      if (start === undefined) {
        emit({ type: "result", outcome: "failed", error_code: "agent_failed", message: "stdin closed before the start message" })
        return 1
      }
      return await new Session(start, inbox, io, emit, writeRaw, controller.signal).run()
    } catch (error) {
      emit({ type: "result", outcome: "failed", error_code: "agent_failed", message: `scripted agent error: ${errorText(error)}` })
      return 1
    }
  }

  const outcome = await Promise.race([main(), inbox.cancelled.then(() => "cancelled" as const)])
  if (outcome === "cancelled") emit({ type: "status", message: "cancelled" })
  open = false
  controller.abort()
  return outcome === "cancelled" ? 0 : outcome
}
