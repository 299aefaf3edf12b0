/**
 * A cache of remote repositories, one bare mirror per team and remote URL, kept with `git fetch`:
 * the first run of a repository downloads it once; every later one asks the host only for what
 * changed since, and sandboxes clone from the mirror on the local disk.
 *
 * Decisions:
 * - Per team: `<root>/<team>/<sha256(url), 24 hex>.git`. Teams never share a mirror (one team's
 *   credential never serves another's clone, and a team's objects stay its own), and the name
 *   holds nothing of the URL a path could be made from.
 * - Branches and tags only (`+refs/heads/*`, `+refs/tags/*`, pruned): not a host's pull request
 *   refs, which can outnumber the branches a hundredfold.
 * - A new mirror is a bare clone (HEAD names the host's default branch of that day) made in a
 *   temporary directory and renamed into place when it succeeded: a half-made mirror is never
 *   used, and a failed download leaves nothing behind.
 * - One fetch per mirror at a time: a caller that arrives while a fetch runs waits for it and
 *   uses its result (so 50 runs starting together fetch once). The fetch runs on its own fiber:
 *   a caller that gives up does not stop it for the others. A mirror fetched within `freshForMs`
 *   (default 0: always fetch) is used as it is.
 * - The mirror's configuration names the URL only: the credential goes to each fetch alone.
 * - One cache per directory in a process (`make` answers the same one again).
 * - A mirror is used within `use` (refreshed first): while it runs, the mirror is not removed to
 *   keep the cache within its bound (`maxBytes`, MirrorQuota.ts).
 */
import type { Redacted } from "effect"
import { Clock, Effect, Fiber, Option } from "effect"
import { createHash } from "node:crypto"
import { mkdir, rename, rm, stat } from "node:fs/promises"
import { dirname, join, resolve } from "node:path"
import { runGit } from "./GitCommand.js"
import { describeFailure, hostStatus } from "./HostAnswer.js"
import { GitError } from "./GitError.js"
import { DEFAULT_MIRRORS_MAX_BYTES, makeQuota } from "./MirrorQuota.js"

/** A repository on a Git host, and the token to read it with. */
export interface Remote {
  /** `https://github.com/acme/app.git`, say: no credential in it. */
  readonly url: string
  /** How the repository is named in messages (`acme/app`). */
  readonly name: string
  readonly token?: Redacted.Redacted<string> | undefined
}

export interface MirrorCacheOptions {
  readonly root: string
  /** The longest a fetch (or a first download) may take; default 10 minutes. */
  readonly timeoutMs?: number
  /** A mirror fetched this recently is used without fetching; default 0. */
  readonly freshForMs?: number
  /** The most bytes all the mirrors may take; default 20 GiB (MirrorQuota.ts). */
  readonly maxBytes?: number | undefined
}

export interface MirrorCache {
  /** Runs `f` with the team's mirror of `remote` brought up to date (its directory). */
  readonly use: <A, E, R>(team: string, remote: Remote, f: (dir: string) => Effect.Effect<A, E, R>) => Effect.Effect<A, E | GitError, R>
  /** Where the team's mirror of `url` is (or would be). */
  readonly pathOf: (team: string, url: string) => string
}

/** A file-system step, its failure a GitError naming it. */
const io = (what: string, f: () => Promise<unknown>) =>
  Effect.tryPromise({ try: f, catch: (e) => new GitError({ message: `${what}: ${(e as Error).message}`, status: undefined, result: undefined }) })

const teamPattern = /^[A-Za-z0-9_-]{1,64}$/

/** The caches made, by root: one per directory in a process, so every user shares its fetches. */
const made = new Map<string, MirrorCache>()

/**
 * The cache of a directory: made once per process and directory (the executors and the skills
 * reader of one server share it, and so its one-fetch-at-a-time); later options are ignored.
 */
export const make = (options: MirrorCacheOptions): MirrorCache => {
  const key = resolve(options.root)
  const existing = made.get(key)
  if (existing !== undefined) return existing
  const cache = makeUnshared({ ...options, root: key })
  made.set(key, cache)
  return cache
}

const makeUnshared = (options: MirrorCacheOptions): MirrorCache => {
  const timeoutMs = options.timeoutMs ?? 10 * 60_000
  const freshForMs = options.freshForMs ?? 0
  const quota = makeQuota(options.root, options.maxBytes ?? DEFAULT_MIRRORS_MAX_BYTES)
  const running = new Map<string, Fiber.RuntimeFiber<string, GitError>>()
  const fetchedAt = new Map<string, number>()

  const pathOf = (team: string, url: string) => {
    if (!teamPattern.test(team)) throw new Error(`not a team uid: ${JSON.stringify(team)}`)
    return join(options.root, team, `${createHash("sha256").update(url).digest("hex").slice(0, 24)}.git`)
  }

  const git = (remote: Remote, what: string, args: ReadonlyArray<string>, cwd: string) =>
    runGit(args, { cwd, timeoutMs, token: remote.token }).pipe(
      Effect.flatMap((result) =>
        result.code === 0 ? Effect.succeed(result) : Effect.fail(new GitError({ message: describeFailure(what, result, timeoutMs), status: hostStatus(result.stderr), result }))
      )
    )

  const fetchInto = (dir: string, remote: Remote, what: string) =>
    git(remote, what, ["fetch", "--quiet", "--prune", "--no-write-fetch-head", "origin"], dir)

  const create = (dir: string, remote: Remote) =>
    Effect.gen(function*() {
      const made = `${dir}.tmp-${process.pid}-${Date.now()}`
      const steps = Effect.gen(function*() {
        // A bare clone: the branches, the tags, and HEAD naming the host's default branch.
        yield* git(remote, `downloading ${remote.name}`, ["clone", "--quiet", "--bare", "--", remote.url, made], dirname(made))
        yield* git(remote, "making the mirror", ["config", "--add", "remote.origin.fetch", "+refs/heads/*:refs/heads/*"], made)
        yield* git(remote, "making the mirror", ["config", "--add", "remote.origin.fetch", "+refs/tags/*:refs/tags/*"], made)
        yield* io("putting the mirror in place", () => rename(made, dir))
      })
      yield* steps.pipe(Effect.onError(() => Effect.promise(() => rm(made, { recursive: true, force: true }))))
    })

  const exists = (dir: string) => Effect.promise(() => stat(dir).then((s) => s.isDirectory(), () => false))

  const update = (dir: string, remote: Remote) =>
    Effect.gen(function*() {
      yield* io("making the team's mirror directory", () => mkdir(dirname(dir), { recursive: true, mode: 0o700 }))
      if (yield* exists(dir)) yield* fetchInto(dir, remote, `fetching ${remote.name}`)
      else yield* create(dir, remote)
      fetchedAt.set(dir, yield* Clock.currentTimeMillis)
      return dir
    }).pipe(Effect.ensuring(Effect.sync(() => running.delete(dir))))

  const dirOf = (team: string, url: string) =>
    Effect.try({ try: () => pathOf(team, url), catch: (e) => new GitError({ message: (e as Error).message, status: undefined, result: undefined }) })

  const hold = <A, E, R>(team: string, url: string, f: (dir: string) => Effect.Effect<A, E, R>) =>
    Effect.flatMap(dirOf(team, url), (dir) => Effect.acquireUseRelease(quota.acquire(dir), () => f(dir), () => quota.release(dir)))

  const use = <A, E, R>(team: string, remote: Remote, f: (dir: string) => Effect.Effect<A, E, R>) =>
    hold(team, remote.url, (dir) =>
      Effect.zipRight(
        Effect.tap(refresh(dir, remote), () => quota.record(dir, remote.name)),
        f(dir)
      ))

  const refresh = (dir: string, remote: Remote): Effect.Effect<string, GitError> =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const last = Option.fromNullable(fetchedAt.get(dir))
      if (freshForMs > 0 && Option.isSome(last) && now - last.value < freshForMs && (yield* exists(dir))) return dir
      let fiber = running.get(dir)
      if (fiber === undefined) {
        // The fetch holds its mirror itself: a caller that gives up does not leave it removable mid-fetch.
        fiber = yield* Effect.forkDaemon(Effect.acquireUseRelease(quota.acquire(dir), () => update(dir, remote), () => quota.release(dir)))
        running.set(dir, fiber)
      }
      return yield* Fiber.join(fiber)
    })

  return { use, pathOf }
}
