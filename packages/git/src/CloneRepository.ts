/**
 * A sandbox's repository: from the Git host through the team's mirror (shallow, `origin` the
 * host's URL), or from a local repository (its whole history). The one step both executors take
 * for each repository of a sandbox.
 *
 * Where a clone from the host starts: the run's own branch when the host has it (a follow-up goes
 * on with the run's work), else the `ref` asked for (a branch, a tag, or a commit, looked up in
 * that order in the mirror; a name it has none of fails the clone naming it), else the default
 * branch. Pull requests target the ref when it is a branch, else the default branch.
 */
import type { Redacted } from "effect"
import { Effect } from "effect"
import { checkout, checkoutCommit, type CheckoutOptions, commitPattern } from "./Checkout.js"
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
  /** A branch to start from when the host has it (a run's own branch, for its follow-ups). */
  readonly prefer?: string | undefined
  /** The branch, tag or commit to start from otherwise; the default branch when undefined. */
  readonly ref?: string | undefined
}

/** Where a clone from the host started: its branch and commit (none for a local repository). */
export interface Cloned {
  readonly branch: string | undefined
  readonly commit: string | undefined
  /** The branch its pull requests target: the ref when it is a branch; undefined: the default branch. */
  readonly base: string | undefined
}

/** git in the repository at `dir` (a mirror or a local repository, bare or not). */
const gitIn = (dir: string, args: ReadonlyArray<string>, timeoutMs: number) =>
  runGit(["-c", `safe.directory=${dir}`, "-C", dir, ...args], { timeoutMs })

const hasRef = (dir: string, ref: string, timeoutMs: number) =>
  Effect.map(gitIn(dir, ["rev-parse", "--verify", "-q", ref], timeoutMs), (r) => r.code === 0)

const defaultBranch = (dir: string, timeoutMs: number) =>
  Effect.map(gitIn(dir, ["symbolic-ref", "--short", "HEAD"], timeoutMs), (r) => (r.code === 0 ? r.stdout.trim() : undefined))

type RefKind = "branch" | "tag" | "commit"

/** What `ref` is in the repository at `dir`: a branch, a tag, or a commit; a GitError naming it when none. */
const kindOf = (dir: string, name: string, ref: string, timeoutMs: number) =>
  Effect.gen(function*() {
    if (yield* hasRef(dir, `refs/heads/${ref}`, timeoutMs)) return "branch" as const
    if (yield* hasRef(dir, `refs/tags/${ref}`, timeoutMs)) return "tag" as const
    if (commitPattern.test(ref) && (yield* hasRef(dir, `${ref}^{commit}`, timeoutMs))) return "commit" as const
    return yield* new GitError({ message: `cloning ${name}: it has no branch, tag or commit ${ref}`, status: undefined, result: undefined })
  })

/** Where a clone starts: a ref of a kind (none: the default branch), and the branch its pull requests target. */
interface Start {
  readonly ref: string | undefined
  readonly kind: RefKind | undefined
  readonly branch: string | undefined
  readonly base: string | undefined
}

/** Where the clone from the mirror starts. */
const startOf = (mirror: string, options: CloneRepositoryOptions): Effect.Effect<Start, GitError> =>
  Effect.gen(function*() {
    const { prefer, ref, timeoutMs } = options
    if (prefer !== undefined && (yield* hasRef(mirror, `refs/heads/${prefer}`, timeoutMs))) {
      const base = ref !== undefined && (yield* hasRef(mirror, `refs/heads/${ref}`, timeoutMs)) ? ref : undefined
      return { ref: prefer, kind: "branch" as const, branch: prefer, base }
    }
    if (ref === undefined) {
      const branch = yield* defaultBranch(mirror, timeoutMs)
      return { ref: branch, kind: "branch" as const, branch, base: undefined }
    }
    const kind = yield* kindOf(mirror, options.name, ref, timeoutMs)
    const base = kind === "branch" ? ref : undefined
    return { ref, kind, branch: base, base }
  })

/** Clones `source` into `target` from where it starts. */
const place = (source: string, target: string, start: Pick<Start, "ref" | "kind">, options: CheckoutOptions) =>
  start.kind === "commit" && start.ref !== undefined
    ? checkoutCommit(source, target, start.ref, options)
    : checkout(source, target, { ...options, ref: start.ref })

/** Clones a local repository at the ref (its whole history). */
const cloneLocal = (options: CloneRepositoryOptions) =>
  Effect.gen(function*() {
    const { local, name, ref, timeoutMs } = options
    const kind = ref === undefined ? undefined : yield* kindOf(local, name, ref, timeoutMs)
    yield* place(local, options.target, { ref, kind }, { name, timeoutMs })
    return { branch: undefined, commit: undefined, base: undefined }
  })

/** Clones the repository into `target`. */
export const cloneRepository = (options: CloneRepositoryOptions): Effect.Effect<Cloned, GitError> => {
  const { name, remote, target, timeoutMs } = options
  if (remote === undefined) return cloneLocal(options)
  return options.mirrors.use(options.team, { url: remote.url, name, token: remote.token }, (mirror) =>
    Effect.gen(function*() {
      const start = yield* startOf(mirror, options)
      yield* place(mirror, target, start, { name, timeoutMs, depth: 1, originUrl: remote.url })
      // Read now, while the clone is still the service's own (before the sandbox gets it).
      const head = yield* runGit(["-C", target, "rev-parse", "HEAD"], { timeoutMs })
      return { branch: start.branch, commit: head.code === 0 ? head.stdout.trim() : undefined, base: start.base }
    }))
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

/**
 * Pushes a sandbox's clone as `branch` (see `publishBranch`), through the team's mirror; with the
 * branch its pull request targets (`base`: undefined for the default branch).
 */
export const publishRepository = (options: PublishRepositoryOptions): Effect.Effect<Published & { readonly base: string | undefined }, GitError> =>
  // Brought up to date (made again if it was removed while the agent worked): the push borrows its objects.
  options.mirrors.use(options.team, { ...options.remote, name: options.name }, (mirror) => publishFrom(mirror, options))

/** How a sandbox's clones are pushed: its team's mirrors, where each clone (by directory) started, and how to run in it. */
export interface SandboxClones {
  readonly mirrors: MirrorCache
  readonly team: string
  readonly started: ReadonlyMap<string, Cloned>
  readonly start: StartInSandbox
  readonly timeoutMs: number
}

/**
 * Pushes the sandbox's clone of `repository` (cloned into `<workdir>/<repo>`) as `branch`: what
 * an executor's `Sandbox.publish` does. A repository without a host has nothing to push to.
 */
export const publishClone = (clones: SandboxClones) =>
(
  repository: { readonly owner: string; readonly repo: string; readonly remote?: PublishRepositoryOptions["remote"] | undefined },
  branch: string
): Effect.Effect<Published & { readonly base: string | undefined }, GitError> =>
  repository.remote === undefined
    ? Effect.fail(new GitError({ message: `repository ${repository.owner}/${repository.repo} has no host to push to`, status: undefined, result: undefined }))
    : publishRepository({
      mirrors: clones.mirrors,
      team: clones.team,
      name: `${repository.owner}/${repository.repo}`,
      remote: repository.remote,
      start: clones.start,
      repoDir: repository.repo,
      started: clones.started.get(repository.repo),
      branch,
      timeoutMs: clones.timeoutMs
    })

const publishFrom = (mirror: string, options: PublishRepositoryOptions) =>
  Effect.gen(function*() {
    const startedAt = options.started?.commit
    const base = options.started?.branch ?? (yield* defaultBranch(mirror, options.timeoutMs))
    if (startedAt === undefined || base === undefined) {
      return yield* new GitError({ message: `publishing ${options.name}: where its clone started is not known here`, status: undefined, result: undefined })
    }
    const published = yield* publishBranch({
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
    return { ...published, base: options.started?.base }
  })
