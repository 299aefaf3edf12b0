/**
 * The app's only way out: the public API under `<prefix>/api/v1`, with the bearer token and the
 * team of this browser tab. The token and the team are kept in `sessionStorage` (gone when the
 * tab closes), never in a URL. A 401 to a request sent with the tab's current token forgets it
 * and tells the app the API's reason (it asks for a token again over the page, keeping what was
 * typed); a late 401 to one sent with a token since replaced changes nothing. A token that cannot
 * be sent in a header is refused before any call (`tokenProblem`).
 */
import type { Wire } from "@agent-runs/api"

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
  readonly method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
  readonly body?: unknown
  readonly signal?: AbortSignal
  /** Another token or team than the session's (signing in, switching teams). */
  readonly token?: string
  readonly team?: string
  /** More request headers (`Last-Event-ID`, say); they cannot replace the token, team or `Accept`. */
  readonly headers?: Readonly<Record<string, string>>
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
export const respond = async (path: string, accept: string, options: RequestOptions): Promise<Response> => {
  const token = options.token ?? session.token()
  const team = options.team ?? session.team()
  const headers: Record<string, string> = { ...options.headers, accept }
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

// The wire shapes the app reads (docs/reference/api.md): the API's own types (`@agent-runs/api`'s
// `Wire`, derived from the schemas the server encodes with), imported as types only.

export type RunState = Wire.RunState
export type TeamRetention = Wire.TeamRetention
export type Run = Wire.Run
export type RunList = Wire.RunList
export type RunCounts = Wire.RunCounts
export type Artifact = Wire.Artifact
export type PrincipalRef = Wire.PrincipalRef
export type Me = Wire.Me
export type TranscriptLink = Wire.TranscriptLink
export type TimelineEvent = Wire.TimelineEvent
export type ContentBlock = Wire.ContentBlock
export type ConversationMessage = Wire.ConversationMessage
export type ConversationStep = Wire.ConversationStep
export type Conversation = Wire.Conversation
export type AuditEntry = Wire.AuditEntry
export type AuditLogPage = Wire.AuditLogPage
export type TeamBudgets = Wire.TeamBudgets
export type TeamSpend = Wire.TeamSpend
export type TeamOverview = Wire.TeamOverview

/** Every state, in the order the app shows them (checked against the API's: none missing). */
export const RUN_STATES = [
  "QUEUED", "PENDING", "CLAIMED", "INPROGRESS", "SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"
] as const satisfies ReadonlyArray<RunState>

export const TERMINAL_STATES: ReadonlyArray<RunState> = ["SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"]

export const RUN_SOURCES = [
  "API", "CLI", "WEB_APP", "SCHEDULED_AGENT", "WEBHOOK", "LOCAL", "GITHUB_ACTION", "SLACK", "LINEAR", "CLOUD_MODE"
] as const satisfies ReadonlyArray<Wire.RunSource>

export const RUN_SORTS = ["updated_at", "created_at", "title", "agent"] as const satisfies ReadonlyArray<Wire.RunSortBy>

/** Compiles only when `Listed` names every member of `All`: a state, source or sort the API adds fails the build. */
type Covers<All extends Listed, Listed> = [All, Listed]
export type ListsCoverTheApi = [
  Covers<RunState, (typeof RUN_STATES)[number]>,
  Covers<Wire.RunSource, (typeof RUN_SOURCES)[number]>,
  Covers<Wire.RunSortBy, (typeof RUN_SORTS)[number]>
]
