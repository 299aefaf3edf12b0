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
import { findFiles } from "@agent-runs/git"
import { RepoSource } from "@agent-runs/core/ports/RepoSource"
import type { RepoSourceService } from "@agent-runs/core/ports/RepoSource"
import { RepoSourceError } from "@agent-runs/core/ports/RepoSource"
import { Effect, Layer, Option } from "effect"
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
      Effect.suspend(() => {
        const dir = directoryOf(team, owner, repo)
        if (dir === undefined) return Effect.succeed(Option.none())
        return findFiles(dir, `${owner}/${repo}`, fileName, { maxFileBytes, maxFiles, timeoutMs }).pipe(
          Effect.mapError((e) => new RepoSourceError({ repository: `${owner}/${repo}`, message: e.message }))
        )
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
