/**
 * Where a repository's clone starts (docs/github.md): a branch, a tag or a commit, named by an
 * environment's repository (`github_repos[].ref`) or by a run (`config.repo_refs`, by `owner/repo`).
 *
 * Decisions:
 * - A ref is what git itself accepts as a branch or tag name, narrowed to letters, digits and
 *   `_ . / -`: never starting with `-` or `/` (it is handed to git as an argument), no `..`, no
 *   `//`, not ending with `/`, `.` or `.lock`; at most 255 characters. A commit is 7 to 40 hex
 *   digits (the clone is then the whole history, checked out at it).
 * - A run's `repo_refs` names repositories of its environment only (400 otherwise, at creation);
 *   at most as many entries as an environment may have repositories.
 */
import { Schema } from "effect"

export const MAX_REF_LENGTH = 255
/** The most repositories one environment (and so one run's `repo_refs`) may name. */
export const MAX_REPOSITORIES = 32

const refPattern = /^[A-Za-z0-9_][A-Za-z0-9_./-]*$/

/** Why `ref` is not a ref this service hands to git; undefined when it is one. */
export const refProblem = (ref: string): string | undefined => {
  const fine = ref.length <= MAX_REF_LENGTH && refPattern.test(ref) && !ref.includes("..") && !ref.includes("//") &&
    !ref.endsWith("/") && !ref.endsWith(".") && !ref.endsWith(".lock")
  return fine
    ? undefined
    : `must be a branch, tag or commit: letters, digits, '_', '.', '/' or '-', not starting with '-' or '/', without '..' (at most ${MAX_REF_LENGTH})`
}

/** A branch, tag or commit of a repository. */
export const GitRef = Schema.String.pipe(
  Schema.filter((ref) => refProblem(ref) ?? true, { description: "a branch, tag or commit", jsonSchema: { pattern: refPattern.source } })
).annotations({
  identifier: "GitRef",
  arbitrary: () => (fc) => fc.stringMatching(/^[a-z][a-z0-9-]{0,11}(\/[a-z0-9]{1,6})?$/)
})

const repositoryKeyPattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}\/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/

/** A run's refs, by `owner/repo`: each overrides its environment repository's `ref`. */
export const RepoRefs = Schema.Record({ key: Schema.String, value: GitRef }).pipe(
  // Checked on the whole record: a record's key refinement would drop a bad key silently.
  Schema.filter((refs) => {
    const keys = Object.keys(refs)
    if (keys.length > MAX_REPOSITORIES) return `at most ${MAX_REPOSITORIES} repositories`
    const bad = keys.find((key) => !repositoryKeyPattern.test(key))
    return bad === undefined || { path: [bad], message: "a key must be a repository, owner/repo" }
  })
).annotations({
  identifier: "RepoRefs",
  arbitrary: () => (fc) => fc.dictionary(fc.constantFrom("acme/app", "acme/docs"), fc.constantFrom("main", "v1.2.0", "release/2"), { maxKeys: 2 })
})
export type RepoRefs = typeof RepoRefs.Type

/** The key of a repository in `repo_refs`. */
export const repoKeyOf = (repository: { readonly owner: string; readonly repo: string }): string => `${repository.owner}/${repository.repo}`
