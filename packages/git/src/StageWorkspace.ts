/**
 * A sandbox's work directory made on the executor's side: each repository of the run's team cloned
 * into `<dir>/<repo>` (the team's local one, or its Git host's through the mirror cache), each
 * attachment written into `<dir>/attachments/<name>`. The Docker executor makes it in the
 * container's mounted work directory; the Kubernetes executor in a scratch directory it then
 * streams into the pod.
 *
 * A step that cannot be done (a repository that is not the team's, a name that cannot be a file)
 * stops there: what was made stays (a debug session sees it), and the failure says what it was.
 */
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import type { Redacted } from "effect"
import { Effect } from "effect"
import { type Cloned, cloneRepository } from "./CloneRepository.js"
import type { MirrorCache } from "./MirrorCache.js"

const segment = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/

/** A name that may be one directory of a path: no separator, no `..`, at most 255 characters. */
export const isSafeSegment = (name: string): boolean => segment.test(name) && name.length <= 255 && !name.includes("..")

/** A name that may be a file's: no separator, not `.` or `..`, at most 255 characters. */
export const isSafeFileName = (name: string): boolean =>
  name.length > 0 && name.length <= 255 && name !== "." && name !== ".." && !/[/\\\0]/.test(name)

/** The directory of the attachments in a work directory (no repository may be cloned there). */
export const ATTACHMENTS = "attachments"

export interface StageWorkspaceOptions {
  readonly mirrors: MirrorCache
  /** `<reposDir>/<team>/<owner>/<repo>`: the teams' local repositories. */
  readonly reposDir: string
  /** The sandbox's: its team, repositories and attachments (an executor's `SandboxSpec`). */
  readonly spec: {
    readonly team_uid: string
    readonly repos: ReadonlyArray<{
      readonly owner: string
      readonly repo: string
      readonly ref?: string | undefined
      readonly remote?: { readonly url: string; readonly token: Redacted.Redacted<string>; readonly branch?: string | undefined } | undefined
    }>
    readonly attachments: ReadonlyArray<{ readonly name: string; readonly bytes: Uint8Array }>
  }
  /** The work directory (it exists). */
  readonly dir: string
  /** The longest one clone may take. */
  readonly timeoutMs: number
}

export interface Staged {
  /** What could not be done; undefined when everything was. */
  readonly failure: string | undefined
  /** Where each clone (by repository name) started: what a push of it is measured against. */
  readonly started: ReadonlyMap<string, Cloned>
}

/** Clones the repositories and writes the attachments into `dir`. */
export const stageWorkspace = (options: StageWorkspaceOptions): Effect.Effect<Staged> =>
  Effect.gen(function*() {
    const { attachments, repos, team_uid: team } = options.spec
    const started = new Map<string, Cloned>()
    const failed = (failure: string): Staged => ({ failure, started })
    for (const { owner, ref, remote, repo } of repos) {
      if (!isSafeSegment(owner) || !isSafeSegment(repo)) return failed(`repository ${owner}/${repo} is not a valid repository name`)
      if (repo === ATTACHMENTS) return failed(`repository ${owner}/${repo} cannot be cloned into ${ATTACHMENTS}/, where the run's attachments go`)
      if (!isSafeSegment(team)) return failed(`team ${team} cannot name a directory`)
      // The run's team's repository: a team uses only its own.
      const local = Path.join(options.reposDir, team, owner, repo)
      if (remote === undefined && !(yield* Effect.promise(() => Fs.stat(local).then((stat) => stat.isDirectory(), () => false)))) {
        return failed(`repository ${owner}/${repo} not found`)
      }
      const cloned = yield* Effect.either(cloneRepository({
        mirrors: options.mirrors,
        team,
        name: `${owner}/${repo}`,
        remote,
        local,
        target: Path.join(options.dir, repo),
        timeoutMs: options.timeoutMs,
        prefer: remote?.branch,
        ref
      }))
      if (cloned._tag === "Left") return failed(cloned.left.message)
      started.set(repo, cloned.right)
    }
    const badName = attachments.find((attachment) => !isSafeFileName(attachment.name))
    if (badName !== undefined) return failed(`attachment name ${JSON.stringify(badName.name)} is not a plain file name`)
    const attachmentsDir = Path.join(options.dir, ATTACHMENTS)
    const written = yield* Effect.tryPromise({
      try: async () => {
        await Fs.mkdir(attachmentsDir, { recursive: true })
        for (const attachment of attachments) await Fs.writeFile(Path.join(attachmentsDir, attachment.name), attachment.bytes)
      },
      catch: (cause) => `cannot write the attachments: ${cause instanceof Error ? cause.message : String(cause)}`
    }).pipe(Effect.either)
    if (written._tag === "Left") return failed(written.left)
    return { failure: undefined, started }
  })
