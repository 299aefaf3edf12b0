/**
 * The work of a sandbox, pushed to its Git host as a branch: what the agent committed (the caller
 * commits what was left uncommitted, inside the sandbox), taken from the sandbox's repository and
 * pushed from a repository of the service's own, with the credential given to the push alone.
 *
 * Decisions:
 * - Git never runs inside the sandbox's repository on the service's side: its configuration and
 *   hooks are the agent's (`core.fsmonitor`, `core.hooksPath`, filters run commands). The commits
 *   are fetched from it into a new bare repository (`git fetch` runs `upload-pack` there, which
 *   git keeps safe on repositories it does not trust), borrowing the mirror's objects, and pushed
 *   from that one.
 * - Nothing to push when the sandbox's `HEAD` is already in the mirror's `base` branch (the
 *   default branch, or the run's branch): `pushed: false`.
 * - The push is a fast-forward: a branch that moved on the host since (someone else pushed) is
 *   refused, named in the error, never overwritten.
 */
import type { Redacted } from "effect"
import { Effect } from "effect"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { runGit } from "./GitCommand.js"
import { GitError } from "./GitError.js"
import { describeFailure, hostStatus } from "./HostAnswer.js"

export interface PublishBranchOptions {
  /** The sandbox's repository (its working tree's directory). */
  readonly source: string
  /** The team's mirror of the repository (its objects are borrowed; `base` is read there). */
  readonly mirror: string
  /** The branch of the mirror the sandbox started from. */
  readonly base: string
  readonly remote: { readonly url: string; readonly name: string; readonly token: Redacted.Redacted<string> }
  /** The branch to push to on the host. */
  readonly branch: string
  /** Where the temporary repository is made (a private directory of the service). */
  readonly scratch: string
  readonly timeoutMs: number
}

export interface Published {
  /** Whether the branch was pushed (false: no commit beyond `base`). */
  readonly pushed: boolean
  /** The commit the sandbox's `HEAD` is at. */
  readonly head: string
}

/** Pushes the sandbox's `HEAD` to `branch` on the host, as `options` says. */
export const publishBranch = (options: PublishBranchOptions): Effect.Effect<Published, GitError> =>
  Effect.acquireUseRelease(
    Effect.tryPromise({
      try: () => mkdtemp(join(options.scratch, "publish-")),
      catch: (e) => new GitError({ message: `publishing ${options.remote.name}: ${(e as Error).message}`, status: undefined, result: undefined })
    }),
    (dir) => publishFrom(dir, options),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  )

const publishFrom = (dir: string, options: PublishBranchOptions) =>
  Effect.gen(function*() {
    const { branch, remote, timeoutMs } = options
    const git = (what: string, args: ReadonlyArray<string>, token?: Redacted.Redacted<string>) =>
      runGit(["-C", dir, ...args], { timeoutMs, token, env: { GIT_ALLOW_PROTOCOL: token === undefined ? "file" : "http:https" } }).pipe(
        Effect.flatMap((result) =>
          result.code === 0
            ? Effect.succeed(result.stdout.trim())
            : Effect.fail(new GitError({ message: describeFailure(what, result, timeoutMs), status: hostStatus(result.stderr), result }))
        )
      )
    yield* git("publishing", ["init", "--quiet", "--bare"])
    yield* Effect.tryPromise({
      try: () => writeFile(join(dir, "objects", "info", "alternates"), `${join(options.mirror, "objects")}\n`),
      catch: (e) => new GitError({ message: `publishing ${remote.name}: ${(e as Error).message}`, status: undefined, result: undefined })
    })
    yield* git(`taking the work of ${remote.name} from the sandbox`, [
      // The sandbox's repository is its user's: git's ownership check is lifted for that read alone.
      "fetch", "--quiet", "--no-tags", "--update-shallow", "--upload-pack=git -c safe.directory=* upload-pack",
      `file://${options.source}`, `+HEAD:refs/heads/${branch}`
    ])
    const head = yield* git("reading the sandbox's HEAD", ["rev-parse", `refs/heads/${branch}`])
    const base = yield* git(`reading ${options.base} of ${remote.name}`, ["--git-dir", options.mirror, "rev-parse", `refs/heads/${options.base}`])
    const inBase = yield* runGit(["-C", dir, "merge-base", "--is-ancestor", head, base], { timeoutMs }).pipe(Effect.map((r) => r.code === 0))
    if (inBase) return { pushed: false, head }
    yield* git(`pushing ${branch} to ${remote.name}`, ["push", "--quiet", remote.url, `refs/heads/${branch}:refs/heads/${branch}`], remote.token).pipe(
      Effect.mapError((e) =>
        e.result !== undefined && /\[rejected\]|non-fast-forward|fetch first/.test(e.result.stderr)
          ? new GitError({ ...e, message: `pushing ${branch} to ${remote.name} failed: the branch moved on the host since (someone else pushed to it); it was not overwritten` })
          : e
      )
    )
    return { pushed: true, head }
  })
