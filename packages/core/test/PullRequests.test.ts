/**
 * The pull requests at the end of a successful execution, over a sandbox and a host of the test's
 * own: opened once with the run's title, commented on after a later push, nothing without new
 * commits, the agent's own pull request recorded instead of a second, and every failure named.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted, Stream } from "effect"
import type { Artifact } from "../src/domain/Artifact.js"
import type { ExecutionId, RunId } from "../src/domain/Ids.js"
import { publishPullRequests } from "../src/engine/PullRequests.js"
import type { AgentProcess, PublishResult, Sandbox } from "../src/ports/Executor.js"
import { ExecutorError } from "../src/ports/Executor.js"
import { GitHostError, type GitHostService, noGitHost, type PullRequest } from "../src/ports/GitHost.js"
import { planFor } from "../testing/index.js"

const runId = "01a22686-30d3-76a8-a5a6-7d3fe0716fb2" as RunId
const branch = `agent-runs/${runId}`
const token = Redacted.make("t")

/** The clone's commit after the commit step, in every sandbox here. */
const cloneHead = "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1"

/** A sandbox whose commit step says the clone is on `on` (at `cloneHead`), and whose pushes answer `pushes` in turn. */
const sandboxOf = (on: string, pushes: Array<PublishResult | string>, commitExit = 0): Sandbox & { readonly calls: Array<string> } => {
  const calls: Array<string> = []
  const process = (out: string, code: number): AgentProcess => ({
    stdout: Stream.make(new TextEncoder().encode(out)),
    send: () => Effect.void,
    interrupt: Effect.void,
    terminate: () => Effect.void,
    exitCode: Effect.succeed(code)
  })
  return {
    calls,
    id: "sandbox",
    run_id: runId,
    execution_id: "e" as ExecutionId,
    attachments: [],
    start: (_command, env) => Effect.sync(() => (calls.push(`commit ${env["AGENT_RUNS_REPO"]}`), process(`${on}\n${cloneHead}\n`, commitExit))),
    release: Effect.void,
    publish: (repository, to) =>
      Effect.suspend(() => {
        calls.push(`push ${repository.repo} ${to}`)
        const next = pushes.shift()!
        return typeof next === "string" ? Effect.fail(new ExecutorError({ message: next })) : Effect.succeed(next)
      })
  }
}

const hostOf = (open: Array<PullRequest>, comments: Array<string>, failCreate?: string): GitHostService => ({
  ...noGitHost,
  repository: (_a, owner, repo) => Effect.succeed(Option.some({ owner, repo, default_branch: "trunk", can_push: true })),
  findOpenPullRequest: (_a, _o, _r, head) => Effect.succeed(Option.fromNullable(open.find((p) => p.branch === head))),
  createPullRequest: (_a, pull) =>
    failCreate !== undefined
      ? Effect.fail(new GitHostError({ message: failCreate, status: 422 }))
      : Effect.sync(() => {
        const made: PullRequest = { number: open.length + 1, url: `https://github.test/${pull.owner}/${pull.repo}/pull/${open.length + 1}`, branch: pull.head, head_commit: null, state: "open" }
        open.push(made)
        comments.push(`created ${pull.title} into ${pull.base} draft=${pull.draft}`)
        return made
      }),
  comment: (_a, _o, _r, number, body) => Effect.sync(() => void comments.push(`#${number}: ${body}`))
})

const plan = planFor(runId, "Fix the bug\nin detail", {
  pull_request: { draft: false, branch, api_url: "https://api.github.test", token },
  sandbox: {
    ...planFor(runId, "").sandbox,
    repos: [{ owner: "acme", repo: "app", remote: { url: "https://github.test/acme/app.git", token, branch } }, { owner: "acme", repo: "local" }]
  }
})

/** The plan of a run whose agent holds the team's token (it can push and open pull requests itself). */
const withToken = { ...plan, agent_env: { GH_TOKEN: "t" } }

const publish = (sandbox: Sandbox, host: GitHostService, artifacts: Array<Artifact>, planned = plan) =>
  Effect.scoped(publishPullRequests({ plan: planned, sandbox, host, title: "Fix the bug", prompt: "Fix the bug\nin detail", addArtifact: (a) => Effect.sync(() => void artifacts.push(a)) }))

describe("publishPullRequests", () => {
  it.effect("opens one pull request into the default branch, then comments on later pushes; nothing new is nothing", () =>
    Effect.gen(function*() {
      const open: Array<PullRequest> = []
      const comments: Array<string> = []
      const artifacts: Array<Artifact> = []
      const sandbox = sandboxOf("main", [{ pushed: true, head: "aaaaaaaaaaaaaaaa" }, { pushed: true, head: "bbbbbbbbbbbbbbbb" }, { pushed: false, head: "b" }])
      expect(yield* publish(sandbox, hostOf(open, comments), artifacts)).toEqual(Option.none())
      expect(sandbox.calls).toEqual(["commit app", `push app ${branch}`])
      expect(comments).toEqual(["created Fix the bug into trunk draft=false"])
      expect(artifacts.map((a) => a.data)).toEqual([{ branch, url: "https://github.test/acme/app/pull/1", number: 1, repository: "acme/app" }])
      expect(yield* publish(sandbox, hostOf(open, comments), artifacts)).toEqual(Option.none())
      expect(comments[1]).toBe(`#1: New commits from run \`${runId}\`: bbbbbbbbbbbb.`)
      expect(yield* publish(sandbox, hostOf(open, comments), artifacts)).toEqual(Option.none())
      expect([artifacts.length, comments.length]).toEqual([1, 2])
    }))

  it.effect("the own pull request of an agent holding the team's token is recorded, and nothing is pushed; without the token, never", () =>
    Effect.gen(function*() {
      const own: PullRequest = { number: 7, url: "https://github.test/acme/app/pull/7", branch: "fix/by-agent", head_commit: cloneHead, state: "open" }
      const artifacts: Array<Artifact> = []
      const sandbox = sandboxOf("fix/by-agent", [])
      expect(yield* publish(sandbox, hostOf([own], []), artifacts, withToken)).toEqual(Option.none())
      expect(sandbox.calls).toEqual(["commit app"])
      expect(artifacts.map((a) => a.data)).toEqual([{ branch: "fix/by-agent", url: own.url, number: 7, repository: "acme/app" }])
      // No token: the branch and commit it says it is on prove nothing; the run's own branch is pushed.
      const tokenless = sandboxOf("fix/by-agent", [{ pushed: true, head: cloneHead }])
      const pushed: Array<Artifact> = []
      expect(yield* publish(tokenless, hostOf([own], []), pushed)).toEqual(Option.none())
      expect(tokenless.calls).toEqual(["commit app", `push app ${branch}`])
      expect(pushed.map((a) => (a.data as { branch: string }).branch)).toEqual([branch])
    }))

  it.effect("someone else's pull request is not the run's: another commit at its head, or the branch the clone started from", () =>
    Effect.gen(function*() {
      const theirs: PullRequest = { number: 8, url: "https://github.test/acme/app/pull/8", branch: "feature/x", head_commit: "d".repeat(40), state: "open" }
      const open = [theirs]
      const comments: Array<string> = []
      const artifacts: Array<Artifact> = []
      const onTheirs = sandboxOf("feature/x", [{ pushed: true, head: cloneHead }])
      expect(yield* publish(onTheirs, hostOf(open, comments), artifacts, withToken)).toEqual(Option.none())
      expect(onTheirs.calls).toEqual(["commit app", `push app ${branch}`])
      expect(artifacts.map((a) => a.data)).toEqual([{ branch, url: "https://github.test/acme/app/pull/2", number: 2, repository: "acme/app" }])
      // The default branch at the clone's commit with an open pull request of its own: still not the run's.
      const trunk: PullRequest = { number: 9, url: "https://github.test/acme/app/pull/9", branch: "trunk", head_commit: cloneHead, state: "open" }
      const onTrunk = sandboxOf("trunk", [{ pushed: false, head: cloneHead }])
      expect(yield* publish(onTrunk, hostOf([trunk], []), [], withToken)).toEqual(Option.none())
      expect(onTrunk.calls).toEqual(["commit app", `push app ${branch}`])
    }))

  it.effect("the pull request targets the branch the clone started from when it is one", () =>
    Effect.gen(function*() {
      const comments: Array<string> = []
      const sandbox = sandboxOf("release/1", [{ pushed: true, head: cloneHead, base: "release/1" }])
      const release = { ...plan, sandbox: { ...plan.sandbox, repos: plan.sandbox.repos.map((r) => ({ ...r, ref: "release/1" })) } }
      const artifacts: Array<Artifact> = []
      const published = yield* Effect.scoped(publishPullRequests({
        plan: release,
        sandbox,
        host: hostOf([{ number: 3, url: "u", branch: "release/1", head_commit: cloneHead, state: "open" }], comments),
        title: "Fix the bug",
        prompt: "p",
        addArtifact: (a) => Effect.sync(() => void artifacts.push(a))
      }))
      expect(published).toEqual(Option.none())
      expect(comments).toEqual(["created Fix the bug into release/1 draft=false"])
    }))

  it.effect("a failed commit, a refused push, a refused pull request, an executor that cannot push: each named", () =>
    Effect.gen(function*() {
      expect(yield* publish(sandboxOf("main", [], 5), hostOf([], []), [])).toEqual(Option.some("committing the work in acme/app failed (exit 5)"))
      expect(yield* publish(sandboxOf("main", ["pushing x failed: the credential may not do this (403)"]), hostOf([], []), []))
        .toEqual(Option.some("pushing x failed: the credential may not do this (403)"))
      expect(yield* publish(sandboxOf("main", [{ pushed: true, head: "c" }]), hostOf([], [], "GitHub answered 422: Validation Failed"), []))
        .toEqual(Option.some("opening the pull request of acme/app: GitHub answered 422: Validation Failed"))
      const { publish: _cannot, ...noPush } = sandboxOf("main", [])
      expect(yield* publish(noPush, hostOf([], []), [])).toEqual(Option.some("this executor cannot push a sandbox's work (no pull request)"))
    }))
})
