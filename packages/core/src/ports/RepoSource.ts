/**
 * Port: the repositories environments name (`owner/repo`), read on their default branch, for
 * skill discovery (`SKILL.md` files). A local-directory adapter reads the git repositories of
 * `AGENT_RUNS_REPOS_DIR` (`@agent-runs/executor-process` `LocalRepoSource`).
 *
 * A `Context.Reference` whose default knows no repository: an embedder without repositories
 * provides nothing and simply has no skills.
 */
import { Context, Data, Effect, Option } from "effect"

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
  /**
   * The files named `fileName` anywhere in the default branch of `owner/repo` (their content up
   * to the adapter's size limit); none when there is no such repository (or it has no commit).
   */
  readonly findFiles: (
    owner: string,
    repo: string,
    fileName: string
  ) => Effect.Effect<Option.Option<RepoFiles>, RepoSourceError>
}

/** The default: no repository at all. */
export const noRepositories: RepoSourceService = {
  findFiles: () => Effect.succeed(Option.none())
}

export class RepoSource extends Context.Reference<RepoSource>()("@agent-runs/core/RepoSource", {
  defaultValue: (): RepoSourceService => noRepositories
}) {}
