/**
 * The work of a sandbox, pushed to its Git host as a branch: what the agent committed (the caller
 * commits what was left uncommitted, inside the sandbox), packed by the sandbox itself into a git
 * bundle, read as bytes into a file of the service's own, and pushed from a repository of the
 * service's own, with the credential given to the push alone.
 *
 * Decisions:
 * - Git never runs on the service's side against anything of the sandbox's: its repository, its
 *   `.git` (a file the agent can point anywhere), its `shallow` and `packed-refs` (symbolic links
 *   the agent can aim at the service's secrets) are read only by git running inside the sandbox,
 *   as the sandbox's user (`git bundle create - HEAD ^<base>`). The service reads the bundle's
 *   bytes from that process's output, up to `maxBundleBytes`, and fetches from its own copy.
 * - Nothing to push when the sandbox's `HEAD` is the commit its clone started at (the sandbox says
 *   so with exit code 10), or is already in the mirror's `base` branch: `pushed: false`.
 * - The push is a fast-forward: a branch that moved on the host since (someone else pushed) is
 *   refused, named in the error, never overwritten.
 */
import type { Redacted, Scope, Stream } from "effect"
import { Effect } from "effect"
import { mkdtemp, open, rm, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Stream as Streams } from "effect"
import { runGit } from "./GitCommand.js"
import { GitError } from "./GitError.js"
import { describeFailure, hostStatus } from "./HostAnswer.js"

/** A process started in the sandbox, as its user: its output and its exit code. */
export interface SandboxProcess {
  readonly stdout: Stream.Stream<Uint8Array, unknown>
  readonly exitCode: Effect.Effect<number, unknown>
}

/** Starts a command in the sandbox (its working directory the sandbox's), with `env` added. */
export type StartInSandbox = (
  command: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>
) => Effect.Effect<SandboxProcess, unknown, Scope.Scope>

export interface PublishBranchOptions {
  /** Starts the bundle's packing inside the sandbox. */
  readonly start: StartInSandbox
  /** The clone's directory inside the sandbox's working directory (`app` for `acme/app`). */
  readonly repoDir: string
  /** The commit the clone started at (its parent is the host's). */
  readonly startedAt: string
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
  /** The largest bundle read from the sandbox; default 1 GiB. */
  readonly maxBundleBytes?: number
}

export interface Published {
  /** Whether the branch was pushed (false: no commit beyond `base`). */
  readonly pushed: boolean
  /** The commit pushed, or the one the clone started at when nothing was. */
  readonly head: string
}

/** Packs HEAD beyond `$AGENT_RUNS_BASE` to stdout; exit 10 when there is nothing beyond it. Run as the sandbox's user. */
const bundleScript = [
  "cd \"$AGENT_RUNS_REPO\" || exit 3",
  "head=$(git -c core.fsmonitor=false rev-parse HEAD) || exit 4",
  "[ \"$head\" = \"$AGENT_RUNS_BASE\" ] && exit 10",
  "exec git -c core.fsmonitor=false bundle create - HEAD \"^$AGENT_RUNS_BASE\" 2>/dev/null"
].join("\n")

const NOTHING = 10

const failure = (message: string) => new GitError({ message, status: undefined, result: undefined })

/** Copies the sandbox's bundle into `file`, up to `max` bytes: the packing's exit code. */
const readBundle = (options: PublishBranchOptions, file: string, max: number) =>
  Effect.scoped(Effect.gen(function*() {
    const process = yield* options.start(["/bin/sh", "-c", bundleScript], { AGENT_RUNS_REPO: options.repoDir, AGENT_RUNS_BASE: options.startedAt }).pipe(
      Effect.mapError((e) => failure(`packing the work of ${options.remote.name} in the sandbox could not start: ${String((e as Error)?.message ?? e)}`))
    )
    const handle = yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => open(file, "wx", 0o600), catch: (e) => failure(`publishing ${options.remote.name}: ${(e as Error).message}`) }),
      (h) => Effect.promise(() => h.close())
    )
    let size = 0
    yield* Streams.runForEach(process.stdout, (chunk) =>
      Effect.gen(function*() {
        size += chunk.length
        if (size > max) return yield* failure(`the work of ${options.remote.name} is larger than ${max} bytes`)
        yield* Effect.tryPromise({ try: () => handle.write(chunk), catch: (e) => failure(`publishing ${options.remote.name}: ${(e as Error).message}`) })
      })).pipe(Effect.catchAll((e) => (e instanceof GitError ? Effect.fail(e) : Effect.void)))
    return yield* process.exitCode.pipe(Effect.orElseSucceed(() => -1))
  }))

/** Pushes the sandbox's `HEAD` to `branch` on the host, as `options` says. */
export const publishBranch = (options: PublishBranchOptions): Effect.Effect<Published, GitError> =>
  Effect.acquireUseRelease(
    Effect.tryPromise({ try: () => mkdtemp(join(options.scratch, "publish-")), catch: (e) => failure(`publishing ${options.remote.name}: ${(e as Error).message}`) }),
    (dir) => publishFrom(dir, options),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  ).pipe(
    Effect.timeoutFail({ duration: options.timeoutMs, onTimeout: () => failure(`publishing ${options.remote.name} did not finish within ${options.timeoutMs} ms`) })
  )

const publishFrom = (dir: string, options: PublishBranchOptions) =>
  Effect.gen(function*() {
    const { branch, remote, timeoutMs } = options
    const git = (what: string, args: ReadonlyArray<string>, token?: Redacted.Redacted<string>) =>
      runGit(["-C", join(dir, "repo.git"), ...args], { timeoutMs, token, env: { GIT_ALLOW_PROTOCOL: token === undefined ? "file" : "http:https" } }).pipe(
        Effect.flatMap((result) =>
          result.code === 0
            ? Effect.succeed(result.stdout.trim())
            : Effect.fail(new GitError({ message: describeFailure(what, result, timeoutMs), status: hostStatus(result.stderr), result }))
        )
      )
    const bundle = join(dir, "work.bundle")
    const packed = yield* readBundle(options, bundle, options.maxBundleBytes ?? 1024 ** 3)
    if (packed === NOTHING) return { pushed: false, head: options.startedAt }
    if (packed !== 0) return yield* failure(`packing the work of ${remote.name} in the sandbox failed (exit ${packed})`)
    yield* runGit(["init", "--quiet", "--bare", join(dir, "repo.git")], { timeoutMs })
    yield* Effect.tryPromise({
      try: () => writeFile(join(dir, "repo.git", "objects", "info", "alternates"), `${join(options.mirror, "objects")}\n`),
      catch: (e) => failure(`publishing ${remote.name}: ${(e as Error).message}`)
    })
    yield* git(`taking the work of ${remote.name} from the sandbox`, ["fetch", "--quiet", "--no-tags", bundle, `+HEAD:refs/heads/${branch}`])
    const head = yield* git("reading the sandbox's HEAD", ["rev-parse", `refs/heads/${branch}`])
    const base = yield* git(`reading ${options.base} of ${remote.name}`, ["--git-dir", options.mirror, "rev-parse", `refs/heads/${options.base}`])
    const inBase = yield* runGit(["-C", join(dir, "repo.git"), "merge-base", "--is-ancestor", head, base], { timeoutMs }).pipe(Effect.map((r) => r.code === 0))
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
