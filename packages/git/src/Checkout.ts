/**
 * A repository checked out into a sandbox's work directory, from a repository on this machine (a
 * team's mirror, or a folder of the local repositories directory).
 *
 * Decisions:
 * - Through git's `file://` transport, never a plain path: a plain-path clone hard-links the
 *   source's object files, and a sandbox given its clone (chown to its user) would then own, and
 *   could rewrite, the objects of the mirror or folder every later run clones from.
 * - `depth` 1 by default for mirrors (`shallow`), the whole history when asked (`depth: undefined`).
 * - `checkout` clones a branch or tag as such (the source's default branch, `HEAD`, without one);
 *   `checkoutCommit` clones the whole history and checks the commit out detached (a shallow clone
 *   cannot name any commit). Which a ref is, the caller decides (CloneRepository.ts looks it up).
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
  /** A branch or tag; the source's default branch when undefined. */
  readonly ref?: string | undefined
  /** How many commits of history; undefined: all of it. */
  readonly depth?: number | undefined
  readonly originUrl?: string | undefined
  readonly timeoutMs: number
}

/** A commit as a ref names it: 7 to 40 hex digits. */
export const commitPattern = /^[0-9a-f]{7,40}$/i

const gitStep = (options: CheckoutOptions) => (what: string, args: ReadonlyArray<string>, cwd?: string) =>
  runGit(args, { cwd, timeoutMs: options.timeoutMs, env: { GIT_ALLOW_PROTOCOL: "file" } }).pipe(
    Effect.flatMap((result) =>
      result.code === 0
        ? Effect.void
        : Effect.fail(new GitError({ message: describeFailure(what, result, options.timeoutMs), status: hostStatus(result.stderr), result }))
    )
  )

const setOrigin = (target: string, options: CheckoutOptions) =>
  options.originUrl === undefined
    ? Effect.void
    : gitStep(options)(`setting the origin of ${options.name}`, ["remote", "set-url", "origin", options.originUrl], target)

/** Clones `source` (a directory) into `target` (which must not exist) at a branch or tag, as `options` says. */
export const checkout = (source: string, target: string, options: CheckoutOptions): Effect.Effect<void, GitError> => {
  const depth = options.depth === undefined ? [] : ["--depth", String(options.depth)]
  const branch = options.ref === undefined ? [] : ["--branch", options.ref]
  const what = options.ref === undefined ? `cloning ${options.name}` : `cloning ${options.name} at ${options.ref}`
  return gitStep(options)(what, ["-c", `safe.directory=${source}`, "clone", "--quiet", ...depth, ...branch, "--", `file://${source}`, target]).pipe(
    Effect.zipRight(setOrigin(target, options))
  )
}

/** Clones `source` into `target` with its whole history, checked out detached at `commit` (a shallow clone cannot name one). */
export const checkoutCommit = (source: string, target: string, commit: string, options: Omit<CheckoutOptions, "ref" | "depth">): Effect.Effect<void, GitError> => {
  const git = gitStep(options)
  return Effect.gen(function*() {
    yield* git(`cloning ${options.name}`, ["-c", `safe.directory=${source}`, "clone", "--quiet", "--no-checkout", "--", `file://${source}`, target])
    yield* git(`checking out ${options.name} at ${commit}`, ["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", `${commit}^{commit}`], target)
    yield* setOrigin(target, options)
  })
}
