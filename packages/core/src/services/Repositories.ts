/**
 * Repositories belong to teams (issue 15; docs/skills.md, docs/execution.md): a team sees and uses
 * only its own. The `RepoSource` port answers per team; this module holds the rule the services
 * share when a request names repositories.
 *
 * - An environment's `config.github_repos` may name only repositories its team has: creating or
 *   replacing one that names another is a 400 naming `config.github_repos[i]`.
 * - A run (or a scheduled run) uses the repositories of its own team: a run in an environment
 *   naming a repository the run's team does not have (an environment shared by a guest link from
 *   another team, or a repository removed since) is a 400 naming `config.environment_id`.
 * - Skills are listed and resolved in the caller's team's repositories (Skills.ts), and executors
 *   clone from the run's team's (`SandboxSpec.team_uid`).
 * - A run's (or schedule's) `repo_refs` names repositories of its environment only: another key
 *   (or any, without an environment) is a 400 naming `config.repo_refs.<owner/repo>`
 *   (`agent_config.repo_refs.<owner/repo>` for a schedule).
 * - A repository source that cannot answer is a 503 (try again).
 */
import { Effect } from "effect"
import { InvalidRequest, ResourceUnavailable } from "../domain/Errors.js"
import type { TeamUid } from "../domain/Ids.js"
import { repoKeyOf, type RepoRefs } from "../domain/GitRef.js"
import type { RepoSourceService } from "../ports/RepoSource.js"

type Repository = { readonly owner: string; readonly repo: string }

/** The index of the first of `repos` the team does not have, or undefined when it has them all. */
export const firstMissing = (source: RepoSourceService, team: TeamUid, repos: ReadonlyArray<Repository>) =>
  Effect.gen(function*() {
    for (const [i, { owner, repo }] of repos.entries()) {
      const has = yield* source.has(team, owner, repo).pipe(
        Effect.mapError((e) => new ResourceUnavailable({ message: `repository ${e.repository} could not be read; try again` }))
      )
      if (!has) return i
    }
    return undefined
  })

/** An environment's repositories, for its team: a 400 naming `config.github_repos[i]` for the first it does not have. */
export const checkEnvironmentRepositories = (source: RepoSourceService, team: TeamUid, repos: ReadonlyArray<Repository>) =>
  Effect.gen(function*() {
    const i = yield* firstMissing(source, team, repos)
    if (i === undefined) return
    const { owner, repo } = repos[i]!
    return yield* InvalidRequest.forField(
      `config.github_repos[${i}]`,
      `your team has no repository ${owner}/${repo} (a team uses only its own repositories)`
    )
  })

/**
 * The repositories of the environment a run uses, for the run's team: a 400 naming `field` (the
 * run's `config.environment_id`) for the first the team does not have.
 */
export const checkRunRepositories = (
  source: RepoSourceService,
  team: TeamUid,
  environment: { readonly uid: string; readonly repos: ReadonlyArray<Repository> },
  field: string
) =>
  Effect.gen(function*() {
    const i = yield* firstMissing(source, team, environment.repos)
    if (i === undefined) return
    const { owner, repo } = environment.repos[i]!
    return yield* InvalidRequest.forField(
      field,
      `environment ${environment.uid} names repository ${owner}/${repo} (config.github_repos[${i}]), ` +
        "which your team does not have (a team uses only its own repositories)"
    )
  })

/** A run's `repo_refs` against its environment: a 400 naming the first key (under `field`) that is not one of its repositories. */
export const checkRepoRefs = (
  refs: RepoRefs | undefined,
  environment: { readonly uid: string; readonly config: { readonly github_repos: ReadonlyArray<Repository> } } | undefined,
  field: string
) => {
  const names = new Set((environment?.config.github_repos ?? []).map(repoKeyOf))
  const stray = Object.keys(refs ?? {}).find((key) => !names.has(key))
  if (stray === undefined) return Effect.void
  return Effect.fail(InvalidRequest.forField(
    `${field}.${stray}`,
    environment === undefined
      ? "the run has no environment, so no repositories to start from a ref"
      : `environment ${environment.uid} has no repository ${stray} (config.github_repos)`
  ))
}
