/**
 * The RepoSource of a server whose teams may connect to GitHub: a connected team's repositories
 * are its GitHub host's (whether it has one asks the host's API; its files are read from the
 * team's mirror, fetched first), and a team without a connection keeps the local source
 * (`AGENT_RUNS_REPOS_DIR`). What skills (`GET /agent`, `skill_spec`) and the environment checks
 * read.
 *
 * - A repository the credential cannot see is one the team does not have (the host's 404).
 * - A credential the host refuses (401: revoked, expired) cannot tell what the team has: the
 *   repository counts as had, so a run is made and its setup fails naming the host's answer,
 *   where everyone sees it, rather than its creation answering a 503 to try again forever.
 * - The host refusing the credential, or not answering, is a `RepoSourceError` (a 503 to the
 *   caller, who may try again), with the host's answer.
 * - The mirrors are the executors' (`MirrorCache`, one per directory in a process).
 */
import { repositoryUrlOf } from "@agent-runs/core/domain/GitHub"
import { gitHubAccess } from "@agent-runs/core/internal/GitHubAccess"
import { GitHost, GitHubHosts } from "@agent-runs/core/ports/GitHost"
import { IdentityStore } from "@agent-runs/core/ports/IdentityStore"
import { RepoSource, RepoSourceError, type RepoSourceService } from "@agent-runs/core/ports/RepoSource"
import { SecretStore } from "@agent-runs/core/ports/SecretStore"
import { findFiles, MirrorCache } from "@agent-runs/git"
import { Effect, Layer, Option } from "effect"

export interface GitHubRepoSourceOptions {
  /** The source of the teams without a connection (`LocalRepoSource.layer`). */
  readonly local: Layer.Layer<RepoSource>
  /** Where the mirrors are (the executors' mirror directory). */
  readonly mirrorsDir: string
  /** The most bytes the mirrors may take (the executors' bound; 20 GiB by default). */
  readonly mirrorsMaxBytes?: number | undefined
  readonly maxFileBytes?: number
  readonly maxFiles?: number
  /** For one fetch or one git command reading files; default 60 s. */
  readonly timeoutMs?: number
}

/** RepoSource routing each team to its GitHub host or to the local source. */
export const layer = (options: GitHubRepoSourceOptions): Layer.Layer<RepoSource, never, IdentityStore | SecretStore> =>
  Layer.effect(
    RepoSource,
    Effect.gen(function*() {
      const local = yield* RepoSource
      const host = yield* GitHost
      const access = gitHubAccess(yield* IdentityStore, yield* SecretStore, host, yield* GitHubHosts)
      const timeoutMs = options.timeoutMs ?? 60_000
      const mirrors = MirrorCache.make({ root: options.mirrorsDir, timeoutMs, maxBytes: options.mirrorsMaxBytes })
      const limits = { maxFileBytes: options.maxFileBytes ?? 256 * 1024, maxFiles: options.maxFiles ?? 500, timeoutMs }
      const failed = (repository: string) => (e: { readonly message: string }) => new RepoSourceError({ repository, message: e.message })
      const teamAccess = (team: Parameters<RepoSourceService["has"]>[0], repository: string) =>
        access(team).pipe(
          Effect.catchTag("StorageError", (e) => Effect.fail(new RepoSourceError({ repository, message: `storage: ${e.message}` }))),
          Effect.mapError(failed(repository))
        )
      return {
        has: (team, owner, repo) =>
          Effect.flatMap(teamAccess(team, `${owner}/${repo}`), Option.match({
            onNone: () => local.has(team, owner, repo),
            onSome: (a) =>
              host.repository(a, owner, repo).pipe(
                Effect.map(Option.isSome),
                // A refused credential cannot tell: the run is made, and its setup fails naming the 401.
                Effect.catchIf((e) => e.status === 401, () => Effect.succeed(true)),
                Effect.mapError(failed(`${owner}/${repo}`))
              )
          })),
        findFiles: (team, owner, repo, fileName) =>
          Effect.flatMap(teamAccess(team, `${owner}/${repo}`), Option.match({
            onNone: () => local.findFiles(team, owner, repo, fileName),
            onSome: (a) => {
              const name = `${owner}/${repo}`
              return mirrors.use(team, { url: repositoryUrlOf(a.connection.base_url, owner, repo), name, token: a.token }, (mirror) =>
                findFiles(mirror, name, fileName, limits)).pipe(
                Effect.catchIf((e) => e.status === 404, () => Effect.succeed(Option.none())),
                Effect.mapError(failed(name))
              )
            }
          }))
      } satisfies RepoSourceService
    })
  ).pipe(Layer.provide(options.local))
