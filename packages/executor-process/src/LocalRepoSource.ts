/**
 * The RepoSource port of @agent-runs/core over the local repositories directory the executors
 * clone from (`AGENT_RUNS_REPOS_DIR`): `owner/repo` is the git repository (bare or not) at
 * `<reposDir>/<owner>/<repo>`, read on its default branch (`HEAD`) with `git ls-tree` and
 * `git cat-file`: committed files only, whatever the working tree holds.
 *
 * - A missing directory, or a repository without a commit, is no repository (none).
 * - Files larger than `maxFileBytes` (256 KiB) are listed without content; at most `maxFiles`
 *   (500) matching files are read, the first in path order.
 * - Each git command has `timeoutMs` (10 s); a failure is a `RepoSourceError`.
 */
import { RepoSource } from "@agent-runs/core/ports/RepoSource"
import type { RepoFile, RepoSourceService } from "@agent-runs/core/ports/RepoSource"
import { RepoSourceError } from "@agent-runs/core/ports/RepoSource"
import { Effect, Layer, Option } from "effect"
import { execFile } from "node:child_process"
import { existsSync, statSync } from "node:fs"
import { join, resolve } from "node:path"
import { repositoryProblem } from "./internal/names.js"

export interface LocalRepoSourceOptions {
  /** Where repositories are found, as `<reposDir>/<owner>/<repo>`. */
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
  return {
    findFiles: (owner, repo, fileName) =>
      Effect.gen(function*() {
        if (repositoryProblem({ owner, repo }) !== undefined) return Option.none()
        const dir = join(root, owner, repo)
        if (!existsSync(dir) || !statSync(dir).isDirectory()) return Option.none()
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

/** RepoSource over a repositories directory. */
export const layer = (options: LocalRepoSourceOptions): Layer.Layer<RepoSource> =>
  Layer.succeed(RepoSource, make(options))
