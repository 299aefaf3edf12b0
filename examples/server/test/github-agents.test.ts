/**
 * A real agent CLI on a team's GitHub repository (issue 32): Claude Code (the pinned
 * devDependency) run by the bundled server on local processes against the fake Anthropic server,
 * on a repository of the GitHub double on loopback. The agent edits a file of the clone (of the
 * branch the environment names); the service pushes the run's branch and opens the pull request
 * into that branch, titled by the run; a follow-up's edit updates it. An agent given the team's
 * token (`github_token`, team admins only) pushes a branch and opens a pull request itself, which
 * the service records instead of opening a second; an agent not given it has no token.
 */
import { claudeCodePackage, cliPath, type FakeGitHub, fakeModel, startFakeGitHub } from "@agent-runs/testing"
import { Effect, Exit, Scope } from "effect"
import { mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeTeam, startServer, type TestServer, waitForRun } from "./harness.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const blocks = (steps: ReadonlyArray<Json>): Array<Json> =>
  steps.flatMap((step) => [...step.messages.flatMap((m: Json) => m.content), ...blocks(step.steps)])

describe("a real agent CLI on a team's GitHub repository (sqlite, process executor)", () => {
  const scope = Effect.runSync(Scope.make())
  const path = process.env["PATH"] ?? ""
  const bin = mkdtempSync(join(tmpdir(), "agent-runs-bin-"))
  let server: TestServer
  let host: FakeGitHub
  let team: Awaited<ReturnType<typeof makeTeam>>
  let modelUrl = ""
  let pat = ""
  const admin = () => ({ token: team.tokens.admin })

  beforeAll(async () => {
    symlinkSync(cliPath(claudeCodePackage(), "claude"), join(bin, "claude"))
    // Read by the process executor when the server starts: the sandbox's PATH.
    process.env["PATH"] = `${bin}${delimiter}${path}`
    modelUrl = (await Effect.runPromise(Scope.extend(fakeModel({ apiKey: "sk-team-key" }), scope))).url
    host = await startFakeGitHub()
    // As harnesses.test.ts: the CLI is this checkout's devDependency, which sandbox users may not reach.
    server = await Effect.runPromise(Scope.extend(startServer("sqlite", {}, { concurrency: 2, processIsolation: "none" }), scope))
    team = await makeTeam(server, "github agents")
    pat = host.addToken({ repositories: ["acme/agent", "acme/own"], permission: "write" })
    for (const [name, value] of [["GH_TOKEN", pat], ["ANTHROPIC_API_KEY", "sk-team-key"]] as const) {
      expect((await call(server, "PUT", `/api/v1/agent/secrets/${name}`, { ...admin(), body: { value } })).status).toBe(200)
    }
    expect((await call(server, "PUT", "/api/v1/agent/github", { ...admin(), body: { base_url: host.url, auth: { type: "token", token_secret: "GH_TOKEN" } } })).status).toBe(200)
  }, 60_000)
  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await host?.close()
    process.env["PATH"] = path
    rmSync(bin, { recursive: true, force: true })
  }, 60_000)

  const environment = async (name: string, repo: Json, extra: Json = {}) => {
    const made = await call(server, "POST", "/api/v1/agent/environments", {
      ...admin(),
      body: {
        config: {
          name,
          github_repos: [repo],
          harness: { type: "claude", model_id: "claude-sonnet-4-5" },
          env: { ANTHROPIC_BASE_URL: modelUrl },
          pull_request: { enabled: true },
          ...extra
        },
        team: true
      }
    })
    expect(made.status).toBe(201)
    return made.body.uid as string
  }
  const runTo = async (body: Json, done?: (run: Json) => boolean) => {
    const created = await call(server, "POST", "/api/v1/agent/runs", { ...admin(), body })
    expect(created.status).toBe(200)
    return waitForRun(server, team.tokens.admin, created.body.run_id, done, 120_000)
  }
  const said = async (runId: string) =>
    blocks((await call(server, "GET", `/api/v1/agent/runs/${runId}/conversation`, admin())).body.steps)
      .filter((b) => b.type === "text").map((b) => b.text as string)

  it("Claude Code edits a file of the branch the environment names; the pull request goes into it, and a follow-up updates it", async () => {
    host.createRepository("acme", "agent", { "README.md": "start\n" })
    host.setRef("acme", "agent", "refs/heads/release", host.branch("acme", "agent", "main")!)
    host.commit("acme", "agent", "release", { "README.md": "release\n" })
    const env = await environment("claude-on-release", { owner: "acme", repo: "agent", ref: "release" })
    const run = await runTo({ prompt: "RUN: echo fixed-by-claude >> agent/README.md", title: "Fix the README", config: { environment_id: env } })
    expect([run.state, run.status_message?.message]).toEqual(["SUCCEEDED", undefined])
    const branch = `agent-runs/${run.run_id}`
    expect(host.file("acme", "agent", branch, "README.md")).toBe("release\nfixed-by-claude")
    const pull = host.pulls.find((p) => p.repo === "agent")!
    expect(pull).toMatchObject({ title: "Fix the README", head: branch, base: "release", state: "open" })
    expect(run.artifacts).toEqual([{
      artifact_type: "PULL_REQUEST",
      created_at: expect.any(String),
      data: { branch, url: `${host.url}/acme/agent/pull/${pull.number}`, number: pull.number, repository: "acme/agent" }
    }])
    // The agent had no token of the team's.
    const tokenless = await runTo({ prompt: "RUN: echo \"token=${GH_TOKEN:-none}\"", config: { environment_id: env, pull_request: { enabled: false } } })
    expect(tokenless.state).toBe("SUCCEEDED")
    expect(await said(tokenless.run_id)).toContain("DONE: token=none")

    expect((await call(server, "POST", `/api/v1/agent/runs/${run.run_id}/followups`, { ...admin(), body: { message: "RUN: echo more >> agent/README.md" } })).status).toBeLessThan(300)
    const again = await waitForRun(server, team.tokens.admin, run.run_id, (r: Json) => r.execution_count === 2 && ["SUCCEEDED", "FAILED", "ERROR"].includes(r.state), 120_000)
    expect([again.state, again.status_message?.message]).toEqual(["SUCCEEDED", undefined])
    expect(host.file("acme", "agent", branch, "README.md")).toBe("release\nfixed-by-claude\nmore")
    expect(pull.comments).toHaveLength(1)
    expect(host.pulls.filter((p) => p.repo === "agent")).toHaveLength(1)
  }, 300_000)

  it("an agent given the team's token pushes its own branch and opens its own pull request; the service records it and opens none", async () => {
    host.createRepository("acme", "own", { "README.md": "own\n" })
    const env = await environment("claude-with-token", { owner: "acme", repo: "own" }, { github_token: true })
    const open = `curl -sf -X POST -H "Authorization: Bearer $GH_TOKEN" ${host.apiUrl}/repos/acme/own/pulls ` +
      `-d '{"title":"By the agent","head":"own/fix","base":"main"}' -o /dev/null`
    const work = "cd own && git checkout -q -b own/fix && echo by-agent >> README.md && " +
      "git -c user.name=agent -c user.email=agent@localhost commit -qam fix && git push -q origin own/fix"
    const run = await runTo({ prompt: `RUN: ${work} && ${open} && echo opened`, config: { environment_id: env } })
    expect([run.state, run.status_message?.message]).toEqual(["SUCCEEDED", undefined])
    expect((await said(run.run_id)).some((t) => t.includes("DONE: opened"))).toBe(true)
    const pulls = host.pulls.filter((p) => p.repo === "own")
    expect(pulls.map((p) => [p.title, p.head])).toEqual([["By the agent", "own/fix"]])
    expect(host.branch("acme", "own", `agent-runs/${run.run_id}`)).toBeUndefined()
    expect(run.artifacts.map((a: Json) => a.data)).toEqual([{ branch: "own/fix", url: `${host.url}/acme/own/pull/${pulls[0]!.number}`, number: pulls[0]!.number, repository: "acme/own" }])
    // Handing the token to the agent is a read of the connection's secret, in the audit log.
    const log = await fetch(`${server.url}/api/v1/admin/audit-log/export`, { headers: { authorization: `Bearer ${server.adminToken}` } }).then((r) => r.text())
    const reads = log.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l)).filter((e: Json) => e.action === "secret.read" && e.actor.run_id === run.run_id)
    expect(reads.map((e: Json) => e.resource.id).sort()).toEqual(["ANTHROPIC_API_KEY", "GH_TOKEN"])
    expect(log).not.toContain(pat)
  }, 300_000)
})
