/**
 * What the fake model server sees of one model call (a {@link ModelTurn}) and what a script
 * answers to it (a {@link ModelReply}). Shared by the server and the four protocol modules.
 */

/** The wire protocols the fake model server speaks. */
export type Protocol = "anthropic" | "responses" | "chat" | "gemini"

/** What the scripted model answers to one call. */
export type ModelReply =
  | { readonly text: string }
  /** A call of the CLI's own shell tool with this command (see {@link shellToolCall}). */
  | { readonly tool: { readonly command: string } }
  /** This HTTP status, with the protocol's error JSON body carrying this message. */
  | { readonly error: { readonly status: number; readonly message: string } }

/** One model call, as read from the request of the CLI. */
export interface ModelTurn {
  readonly protocol: Protocol
  readonly model: string
  /** The system prompt / instructions, joined with blank lines (Codex: `instructions` and the developer messages). */
  readonly system: string
  /**
   * The user messages' texts, in order, each with the CLI's own wrappers removed (see
   * `userText` in `text.ts`); user messages without any text (only tool results) are left out.
   */
  readonly userTexts: ReadonlyArray<string>
  /** The newest of {@link userTexts} ("" when there is none). */
  readonly lastUser: string
  /** When the newest input is a tool result: its output text (several results joined by newlines). */
  readonly toolOutput: string | undefined
  /**
   * Every tool result the request carries, oldest first: the conversation's earlier tool calls
   * included (a resumed session sends them again; a new session told the conversation has none).
   */
  readonly toolOutputs: ReadonlyArray<string>
  /** Names of the tools offered, in the order the request lists them. */
  readonly tools: ReadonlyArray<string>
  /**
   * Names of the tools the request offers by name only, their schemas to be loaded on demand:
   * Claude Code's deferred tools (2.1.332 defers the MCP servers' tools), listed in a
   * `<system-reminder>` "The following deferred tools are … available via ToolSearch", loaded
   * through its `ToolSearch` tool. A `tool` reply never calls one of them.
   */
  readonly deferredTools: ReadonlyArray<string>
  /** The shell tool among {@link tools} that a `tool` reply calls, if any. */
  readonly shellTool: string | undefined
  /**
   * The JSON schema the request demands the answer to follow (Claude Code's title call, Gemini
   * CLI's routing call), or undefined. A text reply that is not JSON is then made JSON: the schema
   * filled with the text (see `jsonFor` in `text.ts`).
   */
  readonly responseSchema: unknown
  /** The request's headers, names in lower case. */
  readonly headers: Readonly<Record<string, string>>
  readonly stream: boolean
  /** The request path, with its query. */
  readonly path: string
}
