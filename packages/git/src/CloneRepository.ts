/**
 * A sandbox's repository: from the Git host through the team's mirror (shallow, `origin` the
 * host's URL; the run's own branch when the host has it, else the default branch), or from a
 * local repository (its whole history). The one step both executors take for each repository of
 * a sandbox.
 */
import type { Redacted } from "effect"
import { Effect } from "effect"
import { checkout } from "./Checkout.js"
import { runGit } from "./GitCommand.js"
import { GitError } from "./GitError.js"
import type { MirrorCache } from "./MirrorCache.js"
import { type Published, publishBranch, type StartInSandbox } from "./PublishBranch.js"
import { dirname } from "node:path"

export interface CloneRepositoryOptions {
  readonly mirrors: MirrorCache
  readonly team: string
  /** `owner/repo`, for messages. */
  readonly name: string
  /** The host's repository; undefined: the local one. */
  readonly remote: { readonly url: string; readonly token: Redacted.Redacted<string> } | undefined
  /** The local repository's directory (used without a remote). */
  readonly local: string
  readonly target: string
  readonly timeoutMs: number
  /** A branch to start from when the host has it (a run's own branch, for its follow-ups); else the default branch. */
  readonly prefer?: string | undefined
}

/** Where a clone from the host started: its branch and commit (none for a local repository). */
export interface Cloned {
  readonly branch: string | undefined
  readonly commit: string | undefined
}

/** The mirror's branch to start from: `prefer` when it has it, else its default branch. */
const startingBranch = (mirror: string, prefer: string | undefined, timeoutMs: number) =>
  Effect.gen(function*() {
    if (prefer !== undefined) {
      const found = yield* runGit(["--git-dir", mirror, "rev-parse", "--verify", "-q", `refs/heads/${prefer}`], { timeoutMs })
      if (found.code === 0) return prefer
    }
    const head = yield* runGit(["--git-dir", mirror, "symbolic-ref", "--short", "HEAD"], { timeoutMs })
    return head.code === 0 ? head.stdout.trim() : undefined
  })

/** Clones the repository into `target`. */
export const cloneRepository = (options: CloneRepositoryOptions): Effect.Effect<Cloned, GitError> => {
  const { name, remote, target, timeoutMs } = options
  if (remote === undefined) return Effect.as(checkout(options.local, target, { name, timeoutMs }), { branch: undefined, commit: undefined })
  return Effect.gen(function*() {
    const mirror = yield* options.mirrors.refresh(options.team, { url: remote.url, name, token: remote.token })
    const branch = yield* startingBranch(mirror, options.prefer, timeoutMs)
    yield* checkout(mirror, target, { name, timeoutMs, depth: 1, ref: branch, originUrl: remote.url })
    // Read now, while the clone is still the service's own (before the sandbox gets it).
    const head = yield* runGit(["-C", target, "rev-parse", "HEAD"], { timeoutMs })
    return { branch, commit: head.code === 0 ? head.stdout.trim() : undefined }
  })
}

export interface PublishRepositoryOptions {
  readonly mirrors: MirrorCache
  readonly team: string
  /** `owner/repo`, for messages. */
  readonly name: string
  readonly remote: { readonly url: string; readonly token: Redacted.Redacted<string> }
  /** Starts a command in the sandbox, as its user. */
  readonly start: StartInSandbox
  /** The clone's directory in the sandbox's working directory. */
  readonly repoDir: string
  /** Where the clone started (what `cloneRepository` answered). */
  readonly started: Cloned | undefined
  readonly branch: string
  readonly timeoutMs: number
}

/** Pushes a sandbox's clone as `branch` (see `publishBranch`), through the team's mirror directory. */
export const publishRepository = (options: PublishRepositoryOptions): Effect.Effect<Published, GitError> =>
  Effect.gen(function*() {
    const mirror = options.mirrors.pathOf(options.team, options.remote.url)
    const startedAt = options.started?.commit
    const base = options.started?.branch ?? (yield* startingBranch(mirror, undefined, options.timeoutMs))
    if (startedAt === undefined || base === undefined) {
      return yield* new GitError({ message: `publishing ${options.name}: where its clone started is not known here`, status: undefined, result: undefined })
    }
    return yield* publishBranch({
      start: options.start,
      repoDir: options.repoDir,
      startedAt,
      mirror,
      base,
      remote: { ...options.remote, name: options.name },
      branch: options.branch,
      scratch: dirname(mirror),
      timeoutMs: options.timeoutMs
    })
  })
