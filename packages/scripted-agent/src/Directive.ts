/**
 * The directives of the scripted agent (docs/reference/harness-protocol.md, and the README with its testing extensions):
 * a prompt or follow-up line that starts with `@` is `@name` followed by its arguments. Parsing is
 * pure and total: a line that is not a directive is `undefined`, a directive with bad arguments is
 * an `invalid` directive carrying the problem, an unknown name an `unknown` one.
 */

export type ArtifactDirective =
  | { readonly kind: "artifact"; readonly artifactType: "PULL_REQUEST"; readonly branch: string; readonly url: string }
  | { readonly kind: "artifact"; readonly artifactType: "EXTERNAL_REFERENCE"; readonly url: string }

export type Directive =
  | { readonly kind: "say"; readonly text: string }
  | { readonly kind: "tool"; readonly name: string; readonly input: unknown }
  | { readonly kind: "sleep"; readonly ms: number }
  | { readonly kind: "read-skill"; readonly path: string; readonly bundledId: string | undefined }
  | ArtifactDirective
  | { readonly kind: "await-followup" }
  | { readonly kind: "block"; readonly text: string }
  | { readonly kind: "fail"; readonly code: string; readonly message: string }
  | { readonly kind: "exit"; readonly code: number }
  | { readonly kind: "attachments" }
  /** Says the skill of the start message (`skill: NAME SPEC`, then its content), or `no skill`. */
  | { readonly kind: "skill" }
  /** Says the MCP servers of the start message as JSON (`mcp_servers: {...}`). */
  | { readonly kind: "mcp" }
  /** Says the `TRACEPARENT` of its environment (`traceparent: …`), or `no traceparent`. */
  | { readonly kind: "traceparent" }
  /** Adds `usd` to the execution's inference cost and reports its usage now. */
  | { readonly kind: "spend"; readonly usd: number }
  | { readonly kind: "spawn"; readonly prompt: string }
  /** Calls the service's API with the run token (`METHOD PATH [JSON]`) and says the status and answer. */
  | { readonly kind: "api"; readonly method: string; readonly path: string; readonly body: string | undefined }
  | { readonly kind: "step"; readonly description: string }
  | { readonly kind: "end-step"; readonly summary: string }
  | { readonly kind: "history" }
  | { readonly kind: "print"; readonly text: string }
  | { readonly kind: "big"; readonly size: number }
  | { readonly kind: "stderr"; readonly text: string }
  /** A known directive whose arguments do not parse: acting on it fails the run (`agent_failed`). */
  | { readonly kind: "invalid"; readonly name: string; readonly problem: string }
  /** `@whatever`: the agent says `unknown directive: @whatever` and goes on. */
  | { readonly kind: "unknown"; readonly name: string }

/** Splits `rest` into its first whitespace-separated word and what follows (trimmed). */
const firstWord = (rest: string): readonly [string, string] => {
  const match = /^(\S*)\s*([\s\S]*)$/.exec(rest)
  return match ? [match[1] ?? "", match[2] ?? ""] : ["", ""]
}

const words = (rest: string): ReadonlyArray<string> => rest.split(/\s+/).filter((w) => w.length > 0)

const invalid = (name: string, problem: string): Directive => ({ kind: "invalid", name, problem })

/** A non-negative decimal integer no larger than `max`, or `undefined`. */
const natural = (text: string, max: number): number | undefined => {
  if (!/^\d+$/.test(text)) return undefined
  const n = Number(text)
  return Number.isSafeInteger(n) && n <= max ? n : undefined
}

const API_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]

/** `@api METHOD PATH [JSON]`: PATH under the API's base URL, starting with `/`; JSON checked here. */
const parseApi = (rest: string): Directive => {
  const [method, afterMethod] = firstWord(rest)
  const [path, body] = firstWord(afterMethod)
  if (!API_METHODS.includes(method) || !path.startsWith("/")) {
    return invalid("api", `@api takes METHOD PATH [JSON] (METHOD one of ${API_METHODS.join(", ")}, PATH starting with /)`)
  }
  if (body === "") return { kind: "api", method, path, body: undefined }
  try {
    JSON.parse(body)
  } catch (error) {
    return invalid("api", `@api: invalid JSON body: ${error instanceof Error ? error.message : String(error)}`)
  }
  return { kind: "api", method, path, body }
}

const parseTool = (rest: string): Directive => {
  const [name, json] = firstWord(rest)
  if (name === "") return invalid("tool", "@tool needs a tool name: @tool NAME JSON")
  if (json === "") return { kind: "tool", name, input: {} }
  try {
    return { kind: "tool", name, input: JSON.parse(json) as unknown }
  } catch (error) {
    return invalid("tool", `@tool ${name}: invalid JSON input: ${error instanceof Error ? error.message : String(error)}`)
  }
}

const parseArtifact = (rest: string): Directive => {
  const args = words(rest)
  if (args[0] === "PULL_REQUEST" && args.length === 3) {
    return { kind: "artifact", artifactType: "PULL_REQUEST", branch: args[1]!, url: args[2]! }
  }
  if (args[0] === "EXTERNAL_REFERENCE" && args.length === 2) {
    return { kind: "artifact", artifactType: "EXTERNAL_REFERENCE", url: args[1]! }
  }
  return invalid("artifact", "@artifact takes PULL_REQUEST BRANCH URL or EXTERNAL_REFERENCE URL")
}

const MAX_SLEEP_MS = 24 * 60 * 60 * 1000
const MAX_BIG = 256 * 1024 * 1024
const MAX_SPEND = 1_000_000

/**
 * Parses one prompt or follow-up line. `undefined` when the line does not start with `@` (leading
 * whitespace and a trailing `\r` are ignored); otherwise the directive, never throwing.
 */
export const parseDirective = (line: string): Directive | undefined => {
  const trimmed = line.replace(/\r$/, "").trimStart()
  if (!trimmed.startsWith("@")) return undefined
  const [word, rest] = firstWord(trimmed.slice(1))
  const text = rest.trimEnd()
  switch (word) {
    case "say":
      return { kind: "say", text }
    case "tool":
      return parseTool(text)
    case "sleep": {
      const ms = natural(text, MAX_SLEEP_MS)
      return ms === undefined ? invalid("sleep", `@sleep needs milliseconds (0 to ${MAX_SLEEP_MS}), got "${text}"`) : { kind: "sleep", ms }
    }
    case "read-skill": {
      const args = words(text)
      if (args.length < 1 || args.length > 2) return invalid("read-skill", "@read-skill takes PATH [BUNDLED_ID]")
      return { kind: "read-skill", path: args[0]!, bundledId: args[1] }
    }
    case "artifact":
      return parseArtifact(text)
    case "await-followup":
      return { kind: "await-followup" }
    case "block":
      return { kind: "block", text }
    case "fail": {
      const [code, message] = firstWord(text)
      return code === "" ? invalid("fail", "@fail needs an error code: @fail CODE MESSAGE") : { kind: "fail", code, message }
    }
    case "exit": {
      const code = natural(text, 255)
      return code === undefined ? invalid("exit", `@exit needs an exit code (0 to 255), got "${text}"`) : { kind: "exit", code }
    }
    case "attachments":
      return { kind: "attachments" }
    case "skill":
      return { kind: "skill" }
    case "mcp":
      return { kind: "mcp" }
    case "traceparent":
      return { kind: "traceparent" }
    case "spawn":
      return text === "" ? invalid("spawn", "@spawn needs a prompt") : { kind: "spawn", prompt: text }
    case "api":
      return parseApi(text)
    case "step":
      return { kind: "step", description: text }
    case "end-step":
      return { kind: "end-step", summary: text }
    case "history":
      return { kind: "history" }
    case "print":
      return { kind: "print", text }
    case "big": {
      const size = natural(text, MAX_BIG)
      return size === undefined ? invalid("big", `@big needs a size in characters (0 to ${MAX_BIG}), got "${text}"`) : { kind: "big", size }
    }
    case "stderr":
      return { kind: "stderr", text }
    case "spend": {
      const usd = /^\d+(\.\d+)?$/.test(text) ? Number(text) : Number.NaN
      return Number.isFinite(usd) && usd <= MAX_SPEND ? { kind: "spend", usd } : invalid("spend", `@spend needs US dollars (0 to ${MAX_SPEND}), got "${text}"`)
    }
    default:
      return { kind: "unknown", name: `@${word}` }
  }
}

const withArgs = (name: string, ...args: ReadonlyArray<string | undefined>): string =>
  [`@${name}`, ...args.filter((a): a is string => a !== undefined && a !== "")].join(" ")

/**
 * The text form of a directive: `parseDirective(formatDirective(d))` gives `d` back for every
 * directive whose text arguments are single lines without surrounding whitespace, and for the
 * `unknown` ones `parseDirective` produced. An `invalid` directive formats as its bare `@name`.
 */
export const formatDirective = (directive: Directive): string => {
  switch (directive.kind) {
    case "say":
    case "block":
    case "print":
    case "stderr":
      return withArgs(directive.kind, directive.text)
    case "tool":
      return withArgs("tool", directive.name, JSON.stringify(directive.input))
    case "sleep":
      return withArgs("sleep", String(directive.ms))
    case "read-skill":
      return withArgs("read-skill", directive.path, directive.bundledId)
    case "artifact":
      return directive.artifactType === "PULL_REQUEST"
        ? withArgs("artifact", directive.artifactType, directive.branch, directive.url)
        : withArgs("artifact", directive.artifactType, directive.url)
    case "await-followup":
    case "attachments":
    case "skill":
    case "mcp":
    case "traceparent":
    case "history":
      return `@${directive.kind}`
    case "fail":
      return withArgs("fail", directive.code, directive.message)
    case "exit":
      return withArgs("exit", String(directive.code))
    case "spawn":
      return withArgs("spawn", directive.prompt)
    case "api":
      return withArgs("api", directive.method, directive.path, directive.body)
    case "step":
      return withArgs("step", directive.description)
    case "end-step":
      return withArgs("end-step", directive.summary)
    case "big":
      return withArgs("big", String(directive.size))
    case "spend":
      return withArgs("spend", String(directive.usd))
    case "invalid":
      return `@${directive.name}`
    case "unknown":
      return directive.name
  }
}

/** The directives of a prompt or follow-up, in order (lines that do not start with `@` are skipped). */
export const directivesOf = (text: string): ReadonlyArray<Directive> =>
  text
    .split("\n")
    .map(parseDirective)
    .filter((d): d is Directive => d !== undefined)
