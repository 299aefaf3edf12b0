/**
 * The RepoSource port of @agent-runs/core over the local repositories directory the executors
 * clone from (`AGENT_RUNS_REPOS_DIR`): a team's `owner/repo` is the git repository (bare or not) at
 * `<reposDir>/<team_uid>/<owner>/<repo>` (repositories belong to teams: a team has only what is in
 * its own folder), read on its default branch (`HEAD`) with `git ls-tree` and `git cat-file`:
 * committed files only, whatever the working tree holds.
 *
 * - A team has a repository when its directory exists (`has`); for its files, a repository
 *   without a commit is no repository (none).
 * - Files larger than `maxFileBytes` (256 KiB) are listed without content; at most `maxFiles`
 *   (500) matching files are read, the first in path order.
 * - Each git command has `timeoutMs` (10 s); a failure is a `RepoSourceError`.
 * - The layer warns once when the directory holds repositories where every team found them before
 *   repositories were per team (`<reposDir>/<owner>/<repo>`): no team sees those any more.
 */
import { RepoSource } from "@agent-runs/core/ports/RepoSource"
import type { RepoFile, RepoSourceService } from "@agent-runs/core/ports/RepoSource"
import { RepoSourceError } from "@agent-runs/core/ports/RepoSource"
import { Effect, Layer, Option } from "effect"
import { execFile } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join, resolve } from "node:path"
import { repositoryDir } from "./internal/names.js"

export interface LocalRepoSourceOptions {
  /** Where repositories are found, as `<reposDir>/<team_uid>/<owner>/<repo>`. */
  readonly reposDir: string
  readonly maxFileBytes?: number
  readonly maxFiles?: number
  readonly timeoutMs?: number
}

/** Runs git in `dir`; its stdout as bytes, or the exit code and stderr. */
const git = (dir: string, args: ReadonlyArray<string>, timeoutMs: number) =>
  Effect.async<Buffer, { readonly code: number | string | null; readonly stderr: string }>((resume) => {
    const child = execFile(
      "git",
      ["-c", `safe.directory=${dir}`, "-C", dir, ...args],
      { encoding: "buffer", maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs },
      (error, stdout, stderr) => {
        if (error === null) resume(Effect.succeed(stdout))
        else resume(Effect.fail({ code: (error as { code?: number | string }).code ?? null, stderr: stderr.toString("utf8").trim() }))
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** Parses `git ls-tree -r -l -z` output: blobs with their object id, size and path. */
export const parseLsTree = (output: string): Array<{ readonly object: string; readonly size: number; readonly path: string }> =>
  output.split("\0").flatMap((entry) => {
    const tab = entry.indexOf("\t")
    if (tab < 0) return []
    const [, type, object, size] = entry.slice(0, tab).split(/\s+/)
    if (type !== "blob" || object === undefined || size === undefined) return []
    return [{ object, size: Number(size), path: entry.slice(tab + 1) }]
  })

/** The service for a repositories directory. */
export const make = (options: LocalRepoSourceOptions): RepoSourceService => {
  const root = resolve(options.reposDir)
  const maxFileBytes = options.maxFileBytes ?? 256 * 1024
  const maxFiles = options.maxFiles ?? 500
  const timeoutMs = options.timeoutMs ?? 10_000
  /** The team's repository directory when it exists. */
  const directoryOf = (team: string, owner: string, repo: string): string | undefined => {
    const place = repositoryDir(root, team, { owner, repo })
    if (!("dir" in place)) return undefined
    return existsSync(place.dir) && statSync(place.dir).isDirectory() ? place.dir : undefined
  }
  return {
    has: (team, owner, repo) => Effect.sync(() => directoryOf(team, owner, repo) !== undefined),
    findFiles: (team, owner, repo, fileName) =>
      Effect.gen(function*() {
        const dir = directoryOf(team, owner, repo)
        if (dir === undefined) return Option.none()
        const name = `${owner}/${repo}`
        const failed = (what: string) => (e: { readonly code: number | string | null; readonly stderr: string }) =>
          new RepoSourceError({ repository: name, message: `${what} failed (git: ${e.code}${e.stderr === "" ? "" : `, ${e.stderr.slice(0, 200)}`})` })
        const head = yield* git(dir, ["rev-parse", "--verify", "-q", "HEAD^{commit}"], timeoutMs).pipe(
          Effect.map((out) => out.toString("utf8").trim()),
          Effect.option
        )
        if (Option.isNone(head) || head.value === "") return Option.none()
        const revision = head.value
        const listing = yield* git(dir, ["ls-tree", "-r", "-l", "-z", revision], timeoutMs).pipe(
          Effect.mapError(failed("listing the files"))
        )
        const wanted = parseLsTree(listing.toString("utf8"))
          .filter((e) => e.path === fileName || e.path.endsWith(`/${fileName}`))
          .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
          .slice(0, maxFiles)
        const files: Array<RepoFile> = []
        for (const entry of wanted) {
          const content = entry.size > maxFileBytes
            ? undefined
            : (yield* git(dir, ["cat-file", "blob", entry.object], timeoutMs).pipe(
              Effect.mapError(failed(`reading ${entry.path}`))
            )).toString("utf8")
          files.push({ path: entry.path, size: entry.size, content })
        }
        return Option.some({ revision, files })
      })
  }
}

const directories = (dir: string): Array<string> => {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name)
  } catch {
    return []
  }
}

/** Whether `dir` is a git repository, bare or not. */
const isRepository = (dir: string) => existsSync(join(dir, "HEAD")) || existsSync(join(dir, ".git"))

/**
 * The repositories laid out as `<reposDir>/<owner>/<repo>` (before repositories were per team),
 * as `owner/repo`, sorted; a team's folder holds owners, never a repository at that depth.
 */
export const unscopedRepositories = (reposDir: string): Array<string> =>
  directories(reposDir)
    .flatMap((owner) => directories(join(reposDir, owner)).filter((repo) => isRepository(join(reposDir, owner, repo))).map((repo) => `${owner}/${repo}`))
    .sort()

/** RepoSource over a repositories directory (a warning when it holds repositories of no team). */
export const layer = (options: LocalRepoSourceOptions): Layer.Layer<RepoSource> =>
  Layer.effect(
    RepoSource,
    Effect.gen(function*() {
      const unscoped = unscopedRepositories(resolve(options.reposDir))
      if (unscoped.length > 0) {
        yield* Effect.logWarning(
          `repositories: ${options.reposDir} holds ${unscoped.slice(0, 5).join(", ")}${unscoped.length > 5 ? ", …" : ""} as ` +
            "<owner>/<repo>, which no team sees: repositories belong to teams, at <reposDir>/<team_uid>/<owner>/<repo>"
        )
      }
      return make(options)
    })
  )
