/**
 * The files of a given name anywhere in a repository's default branch (`HEAD`), read from git's
 * objects (`git ls-tree`, `git cat-file`): committed files only, whatever a working tree holds.
 * What skills are found in (`SKILL.md`), from a local repository or a team's mirror alike.
 *
 * - A repository without a commit has no files (none).
 * - Files larger than `maxFileBytes` are listed without content; at most `maxFiles` matching
 *   files are read, the first in path order.
 * - Each git command has `timeoutMs`; a failure is a `GitError` naming what failed.
 */
import { Effect, Option } from "effect"
import { runGit } from "./GitCommand.js"
import { GitError } from "./GitError.js"
import { describeFailure } from "./HostAnswer.js"

/** A file of the default branch; `content` undefined when it was too large to read. */
export interface RepoFile {
  readonly path: string
  readonly size: number
  readonly content: string | undefined
}

export interface RepoFilesOptions {
  readonly maxFileBytes: number
  readonly maxFiles: number
  readonly timeoutMs: number
}

/** Parses `git ls-tree -r -l -z` output: blobs with their object id, size and path. */
export const parseLsTree = (output: string): Array<{ readonly object: string; readonly size: number; readonly path: string }> =>
  output.split("\0").flatMap((entry) => {
    const tab = entry.indexOf("\t")
    if (tab < 0) return []
    const [, type, object, size] = entry.slice(0, tab).split(/\s+/)
    if (type !== "blob" || object === undefined || size === undefined) return []
    return [{ object, size: Number(size), path: entry.slice(tab + 1) }]
  })

const byPath = (a: { readonly path: string }, b: { readonly path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)

/** The files named `fileName` in the default branch of the repository at `dir` (`name` for messages). */
export const findFiles = (dir: string, name: string, fileName: string, options: RepoFilesOptions) =>
  Effect.gen(function*() {
    const git = (what: string, args: ReadonlyArray<string>) =>
      runGit(["-c", `safe.directory=${dir}`, "-C", dir, ...args], { timeoutMs: options.timeoutMs }).pipe(
        Effect.flatMap((result) =>
          result.code === 0
            ? Effect.succeed(result.stdout)
            : Effect.fail(new GitError({ message: describeFailure(`${what} of ${name}`, result, options.timeoutMs), status: undefined, result }))
        )
      )
    const head = yield* Effect.option(git("reading HEAD", ["rev-parse", "--verify", "-q", "HEAD^{commit}"]))
    const revision = Option.map(head, (h) => h.trim()).pipe(Option.filter((h) => h !== ""))
    if (Option.isNone(revision)) return Option.none()
    const listing = yield* git("listing the files", ["ls-tree", "-r", "-l", "-z", revision.value])
    const wanted = parseLsTree(listing)
      .filter((e) => e.path === fileName || e.path.endsWith(`/${fileName}`))
      .sort(byPath)
      .slice(0, options.maxFiles)
    const files: Array<RepoFile> = []
    for (const entry of wanted) {
      const content = entry.size > options.maxFileBytes ? undefined : yield* git(`reading ${entry.path}`, ["cat-file", "blob", entry.object])
      files.push({ path: entry.path, size: entry.size, content })
    }
    return Option.some({ revision: revision.value, files })
  })
