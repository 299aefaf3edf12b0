/**
 * Port: an agent CLI run as a harness (`config.harness.type` `claude`, `codex`, `gemini` or
 * `opencode`; docs/harnesses.md). One adapter package per CLI implements it; the engine
 * (engine/CliAgent.ts) starts the CLI in the run's sandbox as the adapter says, keeps the CLI's raw
 * output as the run's transcript, turns each line into our harness events with the adapter's
 * decoder, and resumes the CLI's session in a new process for each follow-up.
 *
 * What every adapter keeps to:
 * - `launch` is pure: the argv, variables and files of one process. The command runs in the work
 *   directory with `HOME` set to the agent's own home (`AGENT_HOME`, inside the work directory,
 *   made fresh for each execution), where `files` are written first (paths relative to it, created
 *   readable by the agent only). Its stdin is the file `stdin` names, else empty.
 * - The auth secret goes to the CLI the way it expects it (a variable, a config file) and nowhere
 *   else: never into argv (other processes of the sandbox could read it).
 * - The decoder is stateful and total: one reads an execution's output, its processes' one after
 *   the other (each starts with the CLI's own start event); a line it does not know yields nothing
 *   (the transcript keeps it); it never throws.
 */
import { Context } from "effect"
import type { HarnessEvent, StartMessage } from "../domain/Harness.js"
import type { CliHarnessType, ReasoningLevel } from "../domain/HarnessSelection.js"
import type { McpDirectServer } from "../domain/McpServers.js"
import type { SandboxAttachment } from "./Executor.js"

/** The agent's home directory, relative to the work directory. */
export const AGENT_HOME = ".agent-home"

/** What one process of an agent CLI is to do. */
export interface HarnessTurn {
  /** The user's message: the prompt, or the follow-ups since the last turn. */
  readonly message: string
  /** The CLI session to resume; null starts a new one. */
  readonly session_id: string | null
  /** The run's base prompt (the skill's body when it has a skill), added to the CLI's system prompt. */
  readonly base_prompt: string | null
  readonly skill: StartMessage["skill"]
  readonly model_id: string | null
  readonly reasoning_level: ReasoningLevel | null
  /** The run's MCP servers, resolved (secrets substituted). */
  readonly mcp_servers: Readonly<Record<string, McpDirectServer>>
  /** The value of the harness's auth secret; null without one. */
  readonly auth: string | null
  readonly attachments: ReadonlyArray<SandboxAttachment>
}

/** One process of an agent CLI: run as `command` in the work directory, `HOME` the agent's home. */
export interface HarnessLaunch {
  readonly command: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  /** Files written before the command starts, relative to the agent's home. */
  readonly files: ReadonlyArray<{ readonly path: string; readonly content: string }>
  /** A file of `files` given to the command as its stdin; none: an empty stdin. */
  readonly stdin?: string
}

/** Turns one line of the CLI's output (without its newline) into our harness events. */
export type HarnessDecoder = (line: string) => ReadonlyArray<HarnessEvent>

/**
 * Where a CLI keeps its sessions, so that a continued run (a new execution, in a new sandbox)
 * resumes the same session: `paths` (relative to the agent's home) are saved when an execution
 * ends and restored before the next one's first turn.
 */
export interface SessionState {
  readonly paths: ReadonlyArray<string>
  /**
   * A shell script run after a restore (`/bin/sh -c`), in the work directory with `HOME` set and
   * `$1` the session to resume (letters, digits, `_`, `-` and `.` only): it makes the session
   * usable there (a CLI that files sessions under its work directory's path, which differs from
   * one sandbox to the next) and exits 0 only when the session is among the restored files.
   * Otherwise (the session's files are gone) the continuation starts a new session told the
   * conversation so far, instead of a CLI that would fail on an unknown session. Without it the
   * session is taken to be there.
   */
  readonly afterRestore?: string
}

/** An agent CLI. */
export interface AgentHarness {
  readonly type: CliHarnessType
  /** The process for a turn. */
  readonly launch: (turn: HarnessTurn) => HarnessLaunch
  /** A decoder for one execution's output. */
  readonly decoder: () => HarnessDecoder
  /** Its sessions' files; without it a continued run starts a new session with the conversation so far. */
  readonly sessionState?: SessionState
}

/** The agent CLIs the service can run, by type; a type without an adapter fails its runs. */
export class AgentHarnesses extends Context.Tag("@agent-runs/core/AgentHarnesses")<
  AgentHarnesses,
  ReadonlyMap<CliHarnessType, AgentHarness>
>() {}

export type AgentHarnessesService = Context.Tag.Service<AgentHarnesses>
