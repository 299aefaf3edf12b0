/**
 * Names that become path segments: repository owners and names, team, run and execution ids,
 * attachment names. Each check keeps the resulting path below the directory it is joined to.
 */
import { join } from "node:path"

const REPOSITORY_SEGMENT = /^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,99}$/

/**
 * Whether `segment` is a safe repository owner or name: 1–100 characters of `[A-Za-z0-9_.-]`, not
 * starting with `-` (never read as an option), and neither `.` nor `..`.
 */
export const isRepositorySegment = (segment: string): boolean =>
  REPOSITORY_SEGMENT.test(segment) && segment !== "." && segment !== ".."

/** Why `owner/repo` cannot be used, or undefined when both segments are safe. */
export const repositoryProblem = (repository: { readonly owner: string; readonly repo: string }): string | undefined =>
  isRepositorySegment(repository.owner) && isRepositorySegment(repository.repo)
    ? undefined
    : `repository ${JSON.stringify(`${repository.owner}/${repository.repo}`)} is not a valid owner/repo`

const ID_SEGMENT = /^[A-Za-z0-9_-]{1,128}$/

/**
 * Where a team's repository is below the repositories directory: `<reposDir>/<team>/<owner>/<repo>`
 * (repositories belong to teams), or why it cannot be used.
 */
export const repositoryDir = (
  reposDir: string,
  team: string,
  repository: { readonly owner: string; readonly repo: string }
): { readonly dir: string } | { readonly problem: string } => {
  if (!isIdSegment(team)) return { problem: `team ${JSON.stringify(team.slice(0, 40))} cannot name a directory` }
  const problem = repositoryProblem(repository)
  return problem !== undefined ? { problem } : { dir: join(reposDir, team, repository.owner, repository.repo) }
}

/** Whether a run or execution id can name a directory (ids are UUIDs; this only guards the path). */
export const isIdSegment = (id: string): boolean => ID_SEGMENT.test(id)

/**
 * Why an attachment name cannot be a file name in `attachments/`, or undefined when it can: not
 * empty, at most 255 bytes, no `/`, `\` or NUL, neither `.` nor `..`.
 */
export const attachmentNameProblem = (name: string): string | undefined => {
  if (name === "" || name === "." || name === "..") return `attachment name ${JSON.stringify(name)} is not a file name`
  if (/[/\\\0]/.test(name)) return `attachment name ${JSON.stringify(name)} contains a path separator`
  if (Buffer.byteLength(name, "utf8") > 255) return `attachment name ${JSON.stringify(name.slice(0, 40))}… is longer than 255 bytes`
  return undefined
}
