/**
 * A sandbox's repository: from the Git host through the team's mirror (shallow, `origin` the
 * host's URL), or from a local repository (its whole history). The one step both executors take
 * for each repository of a sandbox.
 */
import type { Redacted } from "effect"
import { Effect } from "effect"
import { checkout } from "./Checkout.js"
import type { GitError } from "./GitError.js"
import type { MirrorCache } from "./MirrorCache.js"

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
}

/** Clones the repository into `target`. */
export const cloneRepository = (options: CloneRepositoryOptions): Effect.Effect<void, GitError> => {
  const { name, remote, target, timeoutMs } = options
  if (remote === undefined) return checkout(options.local, target, { name, timeoutMs })
  return Effect.flatMap(
    options.mirrors.refresh(options.team, { url: remote.url, name, token: remote.token }),
    (mirror) => checkout(mirror, target, { name, timeoutMs, depth: 1, originUrl: remote.url })
  )
}
