/**
 * Port: the repositories environments name (`owner/repo`), read on their default branch, for
 * skill discovery (`SKILL.md` files), and whether a team has a repository at all. A local-directory
 * adapter reads the git repositories of `AGENT_RUNS_REPOS_DIR` (`@agent-runs/executor-process`
 * `LocalRepoSource`).
 *
 * Repositories belong to a team: every question names the team, and a team sees only its own
 * (`owner/repo` of one team and of another are two repositories, or one team has it and the other
 * does not). The service checks environments (and runs using them) against `has`, lists skills and
 * resolves them in the caller's team, and executors clone from the run's team only
 * (`SandboxSpec.team_uid`).
 *
 * A `Context.Reference` whose default knows no repository: an embedder without repositories
 * provides nothing and simply has no skills, and no environment may name a repository. An embedder
 * whose executor clones from elsewhere provides a source whose `has` answers for its teams.
 */
import { Context, Data, Effect, Option } from "effect"
import type { TeamUid } from "../domain/Ids.js"

/** A file of a repository's default branch. `content` is `undefined` when it was too large to read. */
export interface RepoFile {
  /** The path inside the repository, `/`-separated, no leading `/`. */
  readonly path: string
  readonly size: number
  readonly content: string | undefined
}

/** What a repository holds of the files asked for, at one revision of its default branch. */
export interface RepoFiles {
  /** The commit of the default branch the files were read at. */
  readonly revision: string
  readonly files: ReadonlyArray<RepoFile>
}

/** The repository exists but could not be read. */
export class RepoSourceError extends Data.TaggedError("RepoSourceError")<{
  readonly repository: string
  readonly message: string
}> {}

export interface RepoSourceService {
  /** Whether the team has the repository `owner/repo` (it may have no commit yet). */
  readonly has: (team: TeamUid, owner: string, repo: string) => Effect.Effect<boolean, RepoSourceError>
  /**
   * The files named `fileName` anywhere in the default branch of the team's `owner/repo` (their
   * content up to the adapter's size limit); none when the team has no such repository (or it has
   * no commit).
   */
  readonly findFiles: (
    team: TeamUid,
    owner: string,
    repo: string,
    fileName: string
  ) => Effect.Effect<Option.Option<RepoFiles>, RepoSourceError>
}

/** The default: no repository at all. */
export const noRepositories: RepoSourceService = {
  has: () => Effect.succeed(false),
  findFiles: () => Effect.succeed(Option.none())
}

export class RepoSource extends Context.Reference<RepoSource>()("@agent-runs/core/RepoSource", {
  defaultValue: (): RepoSourceService => noRepositories
}) {}
