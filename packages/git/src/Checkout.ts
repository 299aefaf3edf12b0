/**
 * A repository checked out into a sandbox's work directory, from a repository on this machine (a
 * team's mirror, or a folder of the local repositories directory).
 *
 * Decisions:
 * - Through git's `file://` transport, never a plain path: a plain-path clone hard-links the
 *   source's object files, and a sandbox given its clone (chown to its user) would then own, and
 *   could rewrite, the objects of the mirror or folder every later run clones from.
 * - `depth` 1 by default for mirrors (`shallow`), the whole history when asked (`depth: undefined`).
 * - `ref`: a branch or tag is cloned as such; a commit (7–40 hex digits) is fetched after a clone
 *   of the whole history and checked out detached (a shallow clone cannot name any commit).
 *   Without a ref, the source's default branch (`HEAD`).
 * - `originUrl`: the clone's `origin` is set to the host's URL (without a credential), so the
 *   agent's tools (`git`, `gh`) see the repository where it lives; without one, `origin` stays the
 *   source.
 */
import { Effect } from "effect"
import { runGit } from "./GitCommand.js"
import { GitError } from "./GitError.js"
import { describeFailure, hostStatus } from "./HostAnswer.js"

export interface CheckoutOptions {
  /** How the repository is named in messages (`acme/app`). */
  readonly name: string
  readonly ref?: string | undefined
  /** How many commits of history; undefined: all of it. */
  readonly depth?: number | undefined
  readonly originUrl?: string | undefined
  readonly timeoutMs: number
}

/** A commit as a ref names it: 7 to 40 hex digits. */
export const commitPattern = /^[0-9a-f]{7,40}$/i

/** Clones `source` (a directory) into `target` (which must not exist) as `options` says. */
export const checkout = (source: string, target: string, options: CheckoutOptions): Effect.Effect<void, GitError> => {
  const git = (what: string, args: ReadonlyArray<string>, cwd?: string) =>
    runGit(args, { cwd, timeoutMs: options.timeoutMs, env: { GIT_ALLOW_PROTOCOL: "file" } }).pipe(
      Effect.flatMap((result) =>
        result.code === 0
          ? Effect.void
          : Effect.fail(new GitError({ message: describeFailure(what, result, options.timeoutMs), status: hostStatus(result.stderr), result }))
      )
    )
  const url = `file://${source}`
  const cloning = `cloning ${options.name}`
  const byCommit = options.ref !== undefined && commitPattern.test(options.ref)
  return Effect.gen(function*() {
    if (byCommit) {
      yield* git(cloning, ["-c", `safe.directory=${source}`, "clone", "--quiet", "--no-checkout", "--", url, target])
      yield* git(`checking out ${options.name} at ${options.ref}`, ["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", options.ref!], target)
    } else {
      const depth = options.depth === undefined ? [] : ["--depth", String(options.depth)]
      const branch = options.ref === undefined ? [] : ["--branch", options.ref]
      yield* git(
        options.ref === undefined ? cloning : `cloning ${options.name} at ${options.ref}`,
        ["-c", `safe.directory=${source}`, "clone", "--quiet", ...depth, ...branch, "--", url, target]
      )
    }
    if (options.originUrl !== undefined) yield* git(`setting the origin of ${options.name}`, ["remote", "set-url", "origin", options.originUrl], target)
  })
}
