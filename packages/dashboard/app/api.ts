/**
 * The app's only way out: the public API under `<prefix>/api/v1`, with the bearer token and the
 * team of this browser tab. The token and the team are kept in `sessionStorage` (gone when the
 * tab closes), never in a URL. A 401 to a request sent with the tab's current token forgets it
 * and tells the app the API's reason (it asks for a token again over the page, keeping what was
 * typed); a late 401 to one sent with a token since replaced changes nothing. A token that cannot
 * be sent in a header is refused before any call (`tokenProblem`).
 */

/** The mount prefix the server named in `<meta name="agent-runs-base">` (`""` at the root). */
export const prefix: string =
  document.querySelector<HTMLMetaElement>("meta[name=\"agent-runs-base\"]")?.content.replace(/\/+$/, "") ?? ""

/** Where the API is. */
export const apiBase = `${prefix}/api/v1`

const TOKEN_KEY = "agent-runs.token"
const TEAM_KEY = "agent-runs.team"

export const session = {
  token: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  team: (): string => sessionStorage.getItem(TEAM_KEY) ?? "",
  signIn: (token: string, team: string): void => {
    sessionStorage.setItem(TOKEN_KEY, token)
    session.setTeam(team)
  },
  setTeam: (team: string): void => {
    if (team === "") sessionStorage.removeItem(TEAM_KEY)
    else sessionStorage.setItem(TEAM_KEY, team)
  },
  /** Forgets the token only (it stopped working): the team stays for signing in again. */
  forgetToken: (): void => {
    sessionStorage.removeItem(TOKEN_KEY)
  },
  signOut: (): void => {
    sessionStorage.removeItem(TOKEN_KEY)
    sessionStorage.removeItem(TEAM_KEY)
  }
}

/** What a token may hold: visible ASCII, as every HTTP header value (an API token is `ar_` and base64url). */
const TOKEN_CHARACTER = /[\x21-\x7e]/

const nameOf = (character: string): string => {
  const code = `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`
  if (character === " ") return "a space"
  if (character === "\t") return "a tab"
  if (character === "\n" || character === "\r") return "a line break"
  // Invisible characters are named by their code only.
  return /^[\p{L}\p{N}\p{P}\p{S}]$/u.test(character) ? `“${character}” (${code})` : code
}

/**
 * Why `token` cannot be a token, or undefined when it may be one: a character outside visible
 * ASCII (a space, a line break, a letter with an accent, a typographic quote…) cannot even be
 * sent in a header, so `fetch` would fail as if the service could not be reached.
 */
export const tokenProblem = (token: string): string | undefined => {
  const wrong = [...new Set([...token].filter((c) => !TOKEN_CHARACTER.test(c)))]
  if (wrong.length === 0) return undefined
  const named = wrong.slice(0, 5).map(nameOf).join(", ")
  return `The token has characters a token never has: ${named}${wrong.length > 5 ? ", …" : ""}. Copy it again, exactly as it was given.`
}

/** An answer of the API that is not a success: its status, its `error` text and the field it names. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | undefined,
    readonly field: string | undefined
  ) {
    super(message)
  }
}

/** The text of a failure to show: the API's `error` for an `ApiError`, else what went wrong. */
export const messageOf = (failure: unknown): string => (failure instanceof ApiError ? failure.message : String(failure))

type Unauthorized = (reason: string) => void
let onUnauthorized: Unauthorized = () => {}

/** Who is told when the API refuses the token (the app shows the sign-in page with the reason). */
export const whenUnauthorized = (listener: Unauthorized): void => {
  onUnauthorized = listener
}

export interface RequestOptions {
  readonly method?: "GET" | "POST" | "PUT" | "DELETE"
  readonly body?: unknown
  readonly signal?: AbortSignal
  /** Another token or team than the session's (signing in, switching teams). */
  readonly token?: string
  readonly team?: string
}

const problemOf = async (response: Response): Promise<ApiError> => {
  let body: unknown
  try {
    body = await response.json()
  } catch {
    body = undefined
  }
  const record = typeof body === "object" && body !== null ? body as Record<string, unknown> : {}
  const text = typeof record["error"] === "string" ? record["error"] : `the API answered ${response.status} ${response.statusText}`
  const code = typeof record["error_code"] === "string" ? record["error_code"] : undefined
  const field = typeof record["field"] === "string" ? record["field"] : undefined
  return new ApiError(response.status, text, code, field)
}

/** Calls the API; its successful answer, else fails with an `ApiError` carrying the API's `error` text. */
const respond = async (path: string, accept: string, options: RequestOptions): Promise<Response> => {
  const token = options.token ?? session.token()
  const team = options.team ?? session.team()
  const headers: Record<string, string> = { accept }
  const malformed = token === null ? undefined : tokenProblem(token)
  if (malformed !== undefined) throw new ApiError(0, malformed, undefined, undefined)
  if (token !== null) headers["authorization"] = `Bearer ${token}`
  if (team !== "") headers["x-team-uid"] = team
  if (options.body !== undefined) headers["content-type"] = "application/json"
  let response: Response
  try {
    response = await fetch(`${apiBase}${path}`, {
      method: options.method ?? "GET",
      headers,
      credentials: "omit",
      // Prompts, conversations and payloads stay out of the browser's disk cache.
      cache: "no-store",
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      ...(options.signal !== undefined ? { signal: options.signal } : {})
    })
  } catch (error) {
    if (error instanceof DOMException && error.name === "AbortError") throw error
    throw new ApiError(0, "the service cannot be reached; check your connection and try again", undefined, undefined)
  }
  if (!response.ok) {
    const problem = await problemOf(response)
    // Only a refusal of the token the tab holds now signs it out: a late answer to a request sent
    // with a token since replaced (signed in again meanwhile) must not forget the new one.
    if (problem.status === 401 && options.token === undefined && token === session.token()) onUnauthorized(problem.message)
    throw problem
  }
  return response
}

/** Calls the API for JSON; fails with an `ApiError` carrying the API's `error` text. */
export const request = async <A>(path: string, options: RequestOptions = {}): Promise<A> =>
  await (await respond(path, "application/json", options)).json() as A

/** Calls the API for text (JSON lines, say); fails as `request` does. */
export const requestText = async (path: string, options: RequestOptions = {}): Promise<string> =>
  await (await respond(path, "*/*", options)).text()

// The wire shapes the app reads (docs/reference/api.md), as far as it reads them.

export type RunState =
  | "QUEUED" | "PENDING" | "CLAIMED" | "INPROGRESS" | "SUCCEEDED" | "FAILED" | "BLOCKED" | "ERROR" | "CANCELLED"

export const RUN_STATES: ReadonlyArray<RunState> = [
  "QUEUED", "PENDING", "CLAIMED", "INPROGRESS", "SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"
]

export const TERMINAL_STATES: ReadonlyArray<RunState> = ["SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"]

export const RUN_SOURCES = [
  "API", "CLI", "WEB_APP", "SCHEDULED_AGENT", "WEBHOOK", "LOCAL", "GITHUB_ACTION", "SLACK", "LINEAR", "CLOUD_MODE"
] as const

export const RUN_SORTS = ["updated_at", "created_at", "title", "agent"] as const

export interface PrincipalRef {
  readonly type: string
  readonly uid: string
  readonly display_name: string
}

/** `GET /agent/me`: the caller, the token it called with (null for a run token) and the teams it may act in. */
export interface Me {
  readonly principal: PrincipalRef
  readonly token: {
    readonly token_id: string
    readonly name: string | null
    readonly expires_at: string | null
    readonly team_uid: string | null
    readonly max_role: string | null
  } | null
  readonly instance_admin: boolean
  readonly teams: ReadonlyArray<{ readonly uid: string; readonly name: string; readonly role: string }>
  readonly teams_truncated: boolean
  readonly default_team_uid: string | null
}

export interface Artifact {
  readonly artifact_type: string
  readonly created_at?: string
  readonly data?: Record<string, unknown>
}

export interface Run {
  readonly run_id: string
  readonly title: string
  readonly prompt: string
  readonly state: RunState
  readonly created_at: string
  readonly updated_at: string
  readonly started_at: string | null
  readonly ended_at: string | null
  readonly conversation_id?: string
  readonly agent_config: Record<string, unknown>
  readonly agent_skill?: Record<string, unknown>
  readonly creator: PrincipalRef
  readonly executor: PrincipalRef
  readonly source: string
  readonly execution_location: string
  readonly environment_id: string | null
  readonly schedule?: { readonly schedule_id: string; readonly schedule_name: string }
  readonly parent_run_id: string | null
  readonly metadata: Record<string, string>
  readonly artifacts: ReadonlyArray<Artifact>
  readonly status_message?: { readonly message: string; readonly error_code?: string; readonly session_debug_until?: string }
  readonly attempt: number
  readonly execution_count: number
}

export interface RunList {
  readonly runs: ReadonlyArray<Run>
  readonly page_info: { readonly has_next_page: boolean; readonly next_cursor?: string }
}

/** `GET /agent/run-counts`: how many runs the list's filters select, by state (every state). */
export interface RunCounts {
  readonly counts: Readonly<Record<RunState, number>>
  readonly total: number
}

/**
 * `GET /agent/runs/{id}/transcript-link`: the transcript's signed, time-limited URL (it needs no
 * token; the page navigates to it rather than fetching it, so it may be on another origin).
 */
export interface TranscriptLink {
  readonly url: string
  readonly expires_at: string
}

export interface TimelineEvent {
  readonly sequence: number
  readonly event_type: string
  readonly occurred_at: string
  readonly execution_id: string
  readonly message?: string
}

export type ContentBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "action"; readonly id: string; readonly category: string; readonly name: string; readonly input: unknown }
  | {
    readonly type: "action_result"
    readonly action_id: string
    readonly category: string
    readonly name: string
    readonly state: string
    readonly output: unknown
  }
  | { readonly type: "event"; readonly name: string; readonly data: unknown }

export interface ConversationMessage {
  readonly role: "user" | "assistant" | "tool" | "system"
  readonly timestamp?: string
  readonly content: ReadonlyArray<ContentBlock>
}

export interface ConversationStep {
  readonly id: string
  readonly description?: string
  readonly messages: ReadonlyArray<ConversationMessage>
  readonly steps: ReadonlyArray<ConversationStep>
}

export interface Conversation {
  readonly conversation_id: string
  readonly run_ids: ReadonlyArray<string>
  readonly steps: ReadonlyArray<ConversationStep>
}

/** How a run's event stream ended: with `event: end` (the run ended), or closed before. */
export type StreamEnd = "ended" | "closed"

/**
 * Reads a Server-Sent Events stream of the API (`GET /agent/runs/{id}/events`) with the bearer
 * token in its header (an `EventSource` cannot send one, and the token never goes in a URL),
 * telling `onEvent` each event's name and data.
 */
export const streamEvents = async (
  path: string,
  onEvent: (event: string, data: string) => void,
  signal: AbortSignal
): Promise<StreamEnd> => {
  const token = session.token()
  const team = session.team()
  const headers: Record<string, string> = { accept: "text/event-stream" }
  if (token !== null) headers["authorization"] = `Bearer ${token}`
  if (team !== "") headers["x-team-uid"] = team
  const response = await fetch(`${apiBase}${path}`, { headers, credentials: "omit", signal, cache: "no-store" })
  if (!response.ok || response.body === null) {
    const problem = await problemOf(response)
    if (problem.status === 401) onUnauthorized(problem.message)
    throw problem
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return "closed"
    buffer += value.replace(/\r\n?/g, "\n")
    let end = buffer.indexOf("\n\n")
    while (end >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let event = "message"
      const data: Array<string> = []
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim()
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
      }
      if (data.length > 0 || event !== "message") {
        onEvent(event, data.join("\n"))
        if (event === "end") {
          await reader.cancel()
          return "ended"
        }
      }
      end = buffer.indexOf("\n\n")
    }
  }
}

/** An entry of the audit log (docs/audit.md). */
export interface AuditEntry {
  readonly id: string
  readonly at: string
  readonly team_uid: string | null
  readonly actor: {
    readonly principal_uid: string | null
    readonly display_name: string | null
    readonly token_id: string | null
    readonly run_id: string | null
    readonly instance_admin: boolean
  }
  readonly action: string
  readonly resource: { readonly type: string; readonly id: string | null }
  readonly outcome: "succeeded" | "denied" | "failed"
  readonly error_code: string | null
  readonly origin: { readonly address: string | null; readonly user_agent: string | null }
}

export interface AuditLogPage {
  readonly entries: ReadonlyArray<AuditEntry>
  readonly page_info: { readonly has_next_page: boolean; readonly next_cursor?: string }
}
