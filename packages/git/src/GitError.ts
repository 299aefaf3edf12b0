/** A git command that failed: the message names what was done and what the host answered. */
import { Data } from "effect"
import type { GitResult } from "./GitCommand.js"
import type { HostStatus } from "./HostAnswer.js"

export class GitError extends Data.TaggedError("GitError")<{
  readonly message: string
  readonly status: HostStatus | undefined
  readonly result: GitResult | undefined
}> {}
