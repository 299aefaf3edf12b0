/**
 * The end of a successful execution of a run that asks for pull requests (`config.pull_request`,
 * a team connected to GitHub; docs/github.md), for each repository cloned from the host:
 *
 * 1. What the agent left uncommitted is committed, inside the sandbox, as the sandbox's user
 *    (`git add -A`, then a commit without hooks): git runs on the agent's repository only there.
 * 2. The executor pushes the clone's `HEAD` as the run's branch, from outside the sandbox with the
 *    team's token (`Sandbox.publish`); nothing beyond the branch it started from is no push.
 * 3. The pull request: an open one for the branch is commented on (a follow-up's push updates it,
 *    as GitHub shows new commits); otherwise one is opened, the run's title and prompt as its title
 *    and body, into the branch the clone started from (the run's or environment's ref, when a
 *    branch) or else the repository's default branch, draft when asked; it becomes the run's
 *    `PULL_REQUEST` artifact.
 *
 * An agent that left its clone on a branch of its own with an open pull request at its commit
 * (Claude Code with `gh`, say) made its own: that one is recorded, and nothing is pushed for it. Any failure (a
 * commit, a push the host refuses, an API answer) ends the run FAILED with the host's answer: a
 * run that asked for a pull request never succeeds silently without it.
 */
import { Chunk, Clock, Data, DateTime, Effect, Option, Stream } from "effect"
import type { Scope } from "effect"
import { holdsGitHubToken } from "../domain/AgentGitHubToken.js"
import type { Artifact } from "../domain/Artifact.js"
import { concatBytes } from "../internal/Bytes.js"
import type { GitHostAccess, GitHostService } from "../ports/GitHost.js"
import type { Sandbox, SandboxRepository } from "../ports/Executor.js"
import type { StorageError } from "../ports/Storage.js"
import type { ExecutionPlan } from "./ExecutionPlan.js"

/** The longest pull request body taken from a prompt (GitHub takes 65,536 characters). */
const MAX_BODY_CHARS = 60_000

/** Commits what is uncommitted in `$AGENT_RUNS_REPO`, then prints the branch the clone is on and its commit. */
const commitScript = [
  "cd \"$AGENT_RUNS_REPO\" || exit 3",
  // The agent's own configuration may name commands to run: none of them, and no hooks.
  "g() { git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c commit.gpgsign=false \"$@\"; }",
  "g add -A || exit 4",
  "if ! g diff --cached --quiet; then",
  "  g -c user.name=\"Agent Runs\" -c user.email=agent-runs@localhost commit -q --no-verify -m \"$AGENT_RUNS_MESSAGE\" || exit 5",
  "fi",
  "g rev-parse --abbrev-ref HEAD && g rev-parse HEAD"
].join("\n")

/** The most of the commit step's output read (a branch name); the longest it may take. */
const COMMIT_OUTPUT_BYTES = 4096
const COMMIT_TIMEOUT_MS = 5 * 60_000

export interface PublishInput {
  readonly plan: ExecutionPlan
  readonly sandbox: Sandbox
  readonly host: GitHostService
  readonly title: string
  readonly prompt: string
  readonly addArtifact: (artifact: Artifact) => Effect.Effect<void, StorageError>
}

class Refused extends Data.TaggedError("Refused")<{ readonly message: string }> {}

const text = (stream: Stream.Stream<Uint8Array, unknown>) =>
  Stream.runCollect(Stream.takeUntil(stream, (() => {
    let read = 0
    return (chunk: Uint8Array) => (read += chunk.length) >= COMMIT_OUTPUT_BYTES
  })())).pipe(
    Effect.map((chunks) => new TextDecoder().decode(concatBytes(Chunk.toReadonlyArray(chunks)))),
    Effect.orElseSucceed(() => "")
  )

/** Commits in the sandbox; the branch its clone is on and the commit. */
const commit = (sandbox: Sandbox, repository: SandboxRepository, message: string) =>
  Effect.gen(function*() {
    const process = yield* sandbox.start(["/bin/sh", "-c", commitScript], { AGENT_RUNS_REPO: repository.repo, AGENT_RUNS_MESSAGE: message })
    const [said, code] = yield* Effect.all([text(process.stdout), process.exitCode], { concurrency: 2 })
    if (code !== 0) return yield* Effect.fail(new Refused({ message: `committing the work in ${repository.owner}/${repository.repo} failed (exit ${code})` }))
    const [branch = "", head = ""] = said.trim().split("\n").slice(-2)
    return { branch, head }
  }).pipe(
    Effect.scoped,
    Effect.timeoutFail({
      duration: COMMIT_TIMEOUT_MS,
      onTimeout: () => new Refused({ message: `committing the work in ${repository.owner}/${repository.repo} did not finish within ${COMMIT_TIMEOUT_MS} ms` })
    })
  )

const titleOf = (input: PublishInput) => {
  const first = (input.title.trim() === "" ? input.prompt : input.title).trim().split("\n")[0] ?? "Agent run"
  return first.length > 200 ? `${first.slice(0, 199)}…` : first
}

const bodyOf = (input: PublishInput) => {
  const prompt = input.prompt.length > MAX_BODY_CHARS ? `${input.prompt.slice(0, MAX_BODY_CHARS)}…` : input.prompt
  return `${prompt}\n\n---\nOpened by Agent Runs for run \`${input.plan.run_id}\`.`
}

/** The host's default branch of a repository (`main` when the host does not say). */
const defaultBranchOf = (host: PublishInput["host"], access: GitHostAccess, { owner, repo }: SandboxRepository) =>
  Effect.map(host.repository(access, owner, repo), Option.match({ onNone: () => "main", onSome: (r) => r.default_branch }))

/**
 * The pull request the agent opened itself: an agent holding the team's token (`github_token`; no
 * other can push) left its clone on a branch other than the run's and the one it started from
 * (the ref, or the default branch), with an open pull request whose head is the clone's commit,
 * what is uncommitted committed. A pull request of a branch the agent checked out and changed is
 * not the run's (its head is not the agent's commit).
 */
const agentsOwn = (input: PublishInput, access: GitHostAccess, repository: SandboxRepository, branch: string, on: { branch: string; head: string }) =>
  Effect.gen(function*() {
    if (!holdsGitHubToken(input.plan.agent_env)) return Option.none()
    if (on.branch === "HEAD" || on.branch === "" || on.branch === branch || on.branch === repository.ref) return Option.none()
    if (on.branch === (yield* defaultBranchOf(input.host, access, repository))) return Option.none()
    const found = yield* input.host.findOpenPullRequest(access, repository.owner, repository.repo, on.branch)
    return Option.filter(found, (pull) => pull.head_commit === on.head)
  })

/** One repository's branch and pull request: the artifact to record, if any. */
const publishOne = (input: PublishInput, access: GitHostAccess, repository: SandboxRepository, branch: string, draft: boolean) =>
  Effect.gen(function*() {
    const { owner, repo } = repository
    const host = input.host
    const hostFailed = (what: string) => (e: { readonly message: string }) => new Refused({ message: `${what} of ${owner}/${repo}: ${e.message}` })
    const on = yield* commit(input.sandbox, repository, titleOf(input))
    const own = yield* agentsOwn(input, access, repository, branch, on).pipe(Effect.mapError(hostFailed("looking for the pull request")))
    if (Option.isSome(own)) return Option.some({ branch: own.value.branch, url: own.value.url, number: own.value.number, repository: `${owner}/${repo}` })
    if (input.sandbox.publish === undefined) return yield* Effect.fail(new Refused({ message: "this executor cannot push a sandbox's work (no pull request)" }))
    const published = yield* input.sandbox.publish(repository, branch).pipe(Effect.mapError((e) => new Refused({ message: e.message })))
    if (!published.pushed) return Option.none()
    const open = yield* host.findOpenPullRequest(access, owner, repo, branch).pipe(Effect.mapError(hostFailed("looking for the pull request")))
    if (Option.isSome(open)) {
      yield* host.comment(access, owner, repo, open.value.number, `New commits from run \`${input.plan.run_id}\`: ${published.head.slice(0, 12)}.`).pipe(
        Effect.mapError(hostFailed("commenting on the pull request"))
      )
      return Option.none()
    }
    const base = published.base ?? (yield* defaultBranchOf(host, access, repository).pipe(Effect.mapError(hostFailed("reading the repository"))))
    const pull = yield* host.createPullRequest(access, { owner, repo, head: branch, base, title: titleOf(input), body: bodyOf(input), draft }).pipe(
      Effect.mapError(hostFailed("opening the pull request"))
    )
    return Option.some({ branch: pull.branch, url: pull.url, number: pull.number, repository: `${owner}/${repo}` })
  })

/** Publishes the run's work: none, or why the run fails. */
export const publishPullRequests = (input: PublishInput): Effect.Effect<Option.Option<string>, StorageError, Scope.Scope> =>
  Effect.gen(function*() {
    const wanted = input.plan.pull_request
    if (wanted === null) return Option.none()
    const access: GitHostAccess = { apiUrl: wanted.api_url, token: wanted.token }
    for (const repository of input.plan.sandbox.repos) {
      if (repository.remote === undefined) continue
      const made = yield* Effect.either(publishOne(input, access, repository, wanted.branch, wanted.draft))
      if (made._tag === "Left") {
        const e = made.left
        return Option.some(e._tag === "Refused" ? e.message : `publishing ${repository.owner}/${repository.repo} failed: ${e.message}`)
      }
      if (Option.isSome(made.right)) {
        const created_at = DateTime.unsafeMake(yield* Clock.currentTimeMillis)
        yield* input.addArtifact({ artifact_type: "PULL_REQUEST", created_at, data: made.right.value })
      }
    }
    return Option.none()
  })
