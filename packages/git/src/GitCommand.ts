/**
 * One git command, through git's own CLI: its exit code and output as data (never a thrown
 * error), a time limit after which it is killed, and an environment of its own.
 *
 * Decisions:
 * - No user or system configuration (`GIT_CONFIG_GLOBAL=/dev/null`, `GIT_CONFIG_NOSYSTEM`): what
 *   the service does with git does not depend on the machine's `~/.gitconfig` (its credential
 *   helpers, `insteadOf` rewrites, hooks paths), and no prompt ever waits for a terminal.
 * - A credential goes in the environment of that one command (`Credential.ts`), never in its
 *   arguments, which every user of the machine can read in `/proc/<pid>/cmdline`.
 * - Interrupting the effect kills the command.
 */
import { Effect, Redacted } from "effect"
import { execFile } from "node:child_process"
import { credentialEnv } from "./Credential.js"

export interface GitOptions {
  readonly cwd?: string | undefined
  readonly timeoutMs: number
  /** A token for the remote, sent as an HTTP header by this command only. */
  readonly token?: Redacted.Redacted<string> | undefined
  /** More variables (an author's name, say). */
  readonly env?: Readonly<Record<string, string>>
}

export interface GitResult {
  /** The exit code; null when the command was killed (its time limit). */
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  readonly timedOut: boolean
}

/** The environment every command gets: nothing of the server's own but what git needs to run. */
const baseEnv = (): Record<string, string> => ({
  PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
  HOME: process.env.HOME ?? "/nonexistent",
  LANG: "C",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_TERMINAL_PROMPT: "0",
  GIT_ASKPASS: "/bin/false",
  GCM_INTERACTIVE: "never"
})

/** Runs `git args`; resolves with how it ended, whatever that was. */
export const runGit = (args: ReadonlyArray<string>, options: GitOptions): Effect.Effect<GitResult> =>
  Effect.async<GitResult>((resume) => {
    const env = { ...baseEnv(), ...options.env, ...credentialEnv(options.token === undefined ? undefined : Redacted.value(options.token)) }
    let timedOut = false
    const child = execFile(
      "git",
      [...args],
      { cwd: options.cwd, env, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        clearTimeout(timer)
        const code = error === null ? 0 : typeof (error as { code?: unknown }).code === "number" ? (error as { code: number }).code : null
        resume(Effect.succeed({ code, stdout, stderr, timedOut }))
      }
    )
    const timer = setTimeout(() => {
      timedOut = true
      child.kill("SIGKILL")
    }, options.timeoutMs)
    return Effect.sync(() => {
      clearTimeout(timer)
      child.kill("SIGKILL")
    })
  })
