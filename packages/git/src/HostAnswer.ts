/**
 * What a Git host answered, read from a failed command's stderr, in words a run's status message
 * can carry: the HTTP status the host gave (401: the credential was refused; 403: it may not do
 * this; 404: no such repository, or one the credential cannot see) or why the host was not
 * reached, and the last lines git printed. Never the credential: git does not print headers, and
 * the text is cut to a few hundred characters.
 */
import type { GitResult } from "./GitCommand.js"

export type HostStatus = 401 | 403 | 404

/** The host's HTTP status in a failed command's output, when it names one. */
export const hostStatus = (stderr: string): HostStatus | undefined => {
  if (/returned error: 401|Authentication failed|could not read Username|could not read Password/.test(stderr)) return 401
  if (/returned error: 403|Permission to .* denied/.test(stderr)) return 403
  if (/returned error: 404|repository '.*' not found|Repository not found/.test(stderr)) return 404
  return undefined
}

const meaning: Record<HostStatus, string> = {
  401: "the host refused the credential (401): check the team's GitHub token or App",
  403: "the credential may not do this (403)",
  404: "the host has no such repository, or the credential cannot see it (404)"
}

/** The last lines of git's output, short. */
const tail = (text: string) => {
  const lines = text.trim().split("\n").filter((l) => l.trim() !== "")
  const shown = lines.slice(-3).join(" / ")
  return shown.length > 300 ? `${shown.slice(0, 300)}…` : shown
}

/** Why `what` (cloning acme/app, say) failed, naming the host's answer when there was one. */
export const describeFailure = (what: string, result: GitResult, timeoutMs: number): string => {
  if (result.timedOut) return `${what} did not finish within ${timeoutMs} ms`
  const status = hostStatus(result.stderr)
  const detail = tail(result.stderr)
  // A refused credential's output is git failing to ask for a user name: nothing to add.
  if (status === 401) return `${what} failed: ${meaning[status]}`
  if (status !== undefined) return `${what} failed: ${meaning[status]}${detail === "" ? "" : ` (git: ${detail})`}`
  return `${what} failed (git exited with ${result.code})${detail === "" ? "" : `: ${detail}`}`
}
