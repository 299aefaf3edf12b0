/**
 * Threat: repositories were not team-scoped. Any team whose environment named `owner/repo` got the
 * server's repository of that name: a member of another team could clone a team's private code
 * into its own runs (setup commands and agents read it) and list and run the skills in it.
 *
 * Attack: team A has `acme/secret` (a secret file and a skill). A member of team B creates an
 * environment naming `acme/secret`, lists the skills, runs A's skill, and runs in A's environment
 * once A shares it with them as a guest. The repository is also left where every team found it
 * before repositories were per team (`<reposDir>/acme/secret`).
 *
 * Expected: B's environment is refused with 400 naming `config.github_repos[0]`; B's skill list
 * shows nothing of A's, A's skill is an unknown skill (400); B's run in A's shared environment is
 * refused with 400 naming `config.environment_id`. A team with its own `acme/secret` (B, later)
 * gets its own copy in its runs, never A's, and A keeps getting A's.
 */
import { writeRepository } from "@agent-runs/core/testing"
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeTeam, startServer, type TestServer } from "../harness.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const secretOf = (team: string) => ({
  "SECRET.txt": `secret of team ${team}\n`,
  "skills/leak/SKILL.md": `---\nname: leak\ndescription: Team ${team}'s skill\n---\n@say team ${team}'s skill\n`
})

describe("repositories belong to teams", () => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer
  let a: Awaited<ReturnType<typeof makeTeam>>
  let b: Awaited<ReturnType<typeof makeTeam>>
  let envA = ""
  /** A team environment that clones acme/secret and checks, in its setup, that it is team `team`'s copy. */
  const secretEnvironment = (token: string, name: string, team: string) =>
    call(server, "POST", "/api/v1/agent/environments", {
      token,
      body: {
        team: true,
        config: { name, github_repos: [{ owner: "acme", repo: "secret" }], setup_commands: [`grep -q 'team ${team}' secret/SECRET.txt`] }
      }
    })

  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(startServer("sqlite", {}, { concurrency: 2 }), scope))
    a = await makeTeam(server, "repos-a")
    b = await makeTeam(server, "repos-b")
    const reposDir = server.config.execution.reposDir
    writeRepository(reposDir, a.uid, "acme/secret", secretOf("A"))
    // Where the repository was for every team before repositories were per team.
    writeRepository(reposDir, ".", "acme/secret", secretOf("A"))
    const env = await secretEnvironment(a.tokens.admin, "secret env", "A")
    expect(env.status).toBe(201)
    envA = env.body.uid
  }, 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

  const agentIds = async (token: string): Promise<Array<string>> => {
    const listed = await call(server, "GET", "/api/v1/agent?refresh=true&include_malformed_skills=true", { token })
    expect(listed.status).toBe(200)
    return listed.body.agents.flatMap((agent: Json) => agent.variants.map((v: Json) => v.id))
  }
  const ended = async (token: string, runId: string): Promise<Json> => {
    const deadline = Date.now() + 20_000
    for (;;) {
      const run = (await call(server, "GET", `/api/v1/agent/runs/${runId}`, { token })).body
      if (["SUCCEEDED", "FAILED", "ERROR", "CANCELLED", "BLOCKED"].includes(run.state) || Date.now() > deadline) return run
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  it("another team cannot name, list, run or clone a team's repository", async () => {
    expect(await agentIds(a.tokens.member)).toContain("acme/secret:skills/leak/SKILL.md")

    // B names A's repository in an environment of its own: refused, naming the field.
    const named = await call(server, "POST", "/api/v1/agent/environments", {
      token: b.tokens.admin,
      body: { team: true, config: { name: "stolen", github_repos: [{ owner: "acme", repo: "secret" }] } }
    })
    expect(named.status).toBe(400)
    expect(named.body.error).toContain("config.github_repos[0]")
    expect(named.body.error).toContain("acme/secret")
    // Nor by replacing an environment it has.
    const plain = await call(server, "POST", "/api/v1/agent/environments", { token: b.tokens.admin, body: { team: true, config: { name: "plain" } } })
    expect(plain.status).toBe(201)
    const replaced = await call(server, "PUT", `/api/v1/agent/environments/${plain.body.uid}`, {
      token: b.tokens.admin,
      body: { config: { name: "plain", github_repos: [{ owner: "acme", repo: "secret" }] } }
    })
    expect(replaced.status).toBe(400)
    expect(replaced.body.error).toContain("config.github_repos[0]")

    // A shares its environment with B's member as a guest: B sees the environment, not the repository.
    const shared = await call(server, "PUT", `/api/v1/agent/environments/${envA}`, {
      token: a.tokens.admin,
      body: {
        config: { name: "secret env", github_repos: [{ owner: "acme", repo: "secret" }], setup_commands: ["grep -q 'team A' secret/SECRET.txt"] },
        sharing: { guests: [b.principals.member], link_sharing: false }
      }
    })
    expect(shared.status).toBe(200)
    expect((await call(server, "GET", `/api/v1/agent/environments/${envA}`, { token: b.tokens.member })).status).toBe(200)
    expect(await agentIds(b.tokens.member)).toEqual([])
    const skill = await call(server, "POST", "/api/v1/agent/runs", {
      token: b.tokens.member,
      body: { prompt: "@skill", skill: "acme/secret:leak" }
    })
    expect(skill.status).toBe(400)
    expect(skill.body.error).toContain("skill")
    const guestRun = await call(server, "POST", "/api/v1/agent/runs", {
      token: b.tokens.member,
      body: { prompt: "@say in A's environment", config: { environment_id: envA } }
    })
    expect(guestRun.status).toBe(400)
    expect(guestRun.body.error).toContain("config.environment_id")
    expect(guestRun.body.error).toContain("acme/secret")
  }, 60_000)

  it("a team with a repository of the same name gets its own copy in its runs; the other team keeps its own", async () => {
    writeRepository(server.config.execution.reposDir, b.uid, "acme/secret", secretOf("B"))
    const env = await secretEnvironment(b.tokens.admin, "b's own", "B")
    expect(env.status).toBe(201)
    const runB = await call(server, "POST", "/api/v1/agent/runs", {
      token: b.tokens.member,
      body: { prompt: "@say done", config: { environment_id: env.body.uid } }
    })
    expect(runB.status).toBe(200)
    const runA = await call(server, "POST", "/api/v1/agent/runs", {
      token: a.tokens.member,
      body: { prompt: "@say done", config: { environment_id: envA } }
    })
    expect(runA.status).toBe(200)
    const [endedB, endedA] = [await ended(b.tokens.member, runB.body.run_id), await ended(a.tokens.member, runA.body.run_id)]
    expect(endedB.state, JSON.stringify(endedB.status_message)).toBe("SUCCEEDED")
    expect(endedA.state, JSON.stringify(endedA.status_message)).toBe("SUCCEEDED")
    // Each team lists its own skill.
    expect(await agentIds(b.tokens.member)).toEqual(["acme/secret:skills/leak/SKILL.md"])
    const listedB = await call(server, "GET", "/api/v1/agent", { token: b.tokens.member })
    expect(listedB.body.agents[0].variants[0].description).toBe("Team B's skill")
  }, 60_000)
})
