/**
 * Skills and MCP servers through the bundled server (in-process, SQLite and PostgreSQL, the
 * process executor and the scripted agent): a test repository of the team in the server's
 * repositories directory (`<reposDir>/<team_uid>/acme/skills`) with valid and malformed `SKILL.md` files, an environment naming it, `GET /agent`
 * with its parameters, a run with a `skill_spec` that hands the skill to the agent, the `skill`
 * filter and `sort_by=agent`, and MCP servers (validation 400s, a forbidden reference 403, team
 * secrets resolved in what the agent receives and nowhere else).
 */
import { writeRepository } from "@agent-runs/core/testing"
import { beforeAll, describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, suiteServer, type TestServer } from "./harness.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const DEPLOY = "---\nname: deploy\ndescription: Deploys the service\n---\n# Deploy\n@say deploying now\n"
const REPOSITORY = {
  "README.md": "# skills\n",
  ".agents/skills/deploy/SKILL.md": DEPLOY,
  "ops/review/SKILL.md": "---\nname: review\ndescription: Reviews a change\n---\nReview carefully.\n",
  "broken/SKILL.md": "# no front matter here\n",
  "nameless/SKILL.md": "---\ndescription: no name\n---\nbody\n"
}

const started = (kind: DatabaseKind) => suiteServer(kind, {}, { concurrency: 2 })

const waitForRun = async (server: TestServer, token: string, runId: string) => {
  const deadline = Date.now() + 15_000
  for (;;) {
    const run = (await call(server, "GET", `/api/v1/agent/runs/${runId}`, { token })).body
    if (["SUCCEEDED", "FAILED", "ERROR", "CANCELLED", "BLOCKED"].includes(run.state) || Date.now() > deadline) return run
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const texts = (steps: ReadonlyArray<Json>): Array<string> =>
  steps.flatMap((step) => [
    ...step.messages.flatMap((m: Json) =>
      m.role === "user" ? [] : m.content.filter((b: Json) => b.type === "text").map((b: Json) => b.text)
    ),
    ...texts(step.steps)
  ])

describe.each(["sqlite", "postgres"] as const)("skills and MCP servers (%s)", (kind) => {
  const server = started(kind)
  let team: { uid: string; tokens: Record<"admin" | "member" | "viewer", string> }
  let envUid = ""

  const agents = (query = "", token = team.tokens.member) => call(server(), "GET", `/api/v1/agent${query}`, { token })
  const run = (body: Json, token = team.tokens.member) => call(server(), "POST", "/api/v1/agent/runs", { token, body })
  const conversationText = async (runId: string, token = team.tokens.member) =>
    texts((await call(server(), "GET", `/api/v1/agent/runs/${runId}/conversation`, { token })).body.steps).join("\n")

  beforeAll(async () => {
    team = await makeTeam(server(), `skills-${kind}`)
    writeRepository(server().config.execution.reposDir, team.uid, "acme/skills", REPOSITORY)
    writeRepository(server().config.execution.reposDir, team.uid, "acme/other", { "x/SKILL.md": "---\nname: hidden\ndescription: h\n---\n" })
    const env = await call(server(), "POST", "/api/v1/agent/environments", {
      token: team.tokens.member,
      body: { team: true, config: { name: "skills env", github_repos: [{ owner: "acme", repo: "skills" }] } }
    })
    expect(env.status).toBe(201)
    envUid = env.body.uid
  })

  it("GET /agent lists the valid skills of visible environments' repositories, grouped by name", async () => {
    const listed = await agents()
    expect(listed.status).toBe(200)
    expect(listed.body.agents.map((a: Json) => a.name)).toEqual(["deploy", "review"])
    const [deploy] = listed.body.agents
    expect(deploy.variants).toEqual([{
      id: "acme/skills:.agents/skills/deploy/SKILL.md",
      base_prompt: "# Deploy\n@say deploying now",
      description: "Deploys the service",
      environments: [{ uid: envUid, name: "skills env" }],
      source: { owner: "acme", name: "skills", skill_path: ".agents/skills/deploy/SKILL.md" },
      last_run_timestamp: null
    }])
    // acme/other is in no environment of this team; another team sees nothing at all.
    const stranger = await makeTeam(server(), `stranger-${kind}`)
    expect((await agents("", stranger.tokens.member)).body).toEqual({ agents: [] })
    expect((await agents("?repo=acme/other")).body).toEqual({ agents: [] })
  })

  it("include_malformed_skills lists malformed skills with their error; repo and sort_by are checked", async () => {
    const listed = await agents("?include_malformed_skills=true&repo=acme/skills")
    expect(listed.status).toBe(200)
    const byId = new Map(listed.body.agents.flatMap((a: Json) => a.variants.map((v: Json) => [v.id, { name: a.name, ...v }])))
    expect(byId.get("acme/skills:broken/SKILL.md")).toMatchObject({
      name: "broken",
      error: "no YAML front matter: the file must start with a line '---'"
    })
    expect(byId.get("acme/skills:nameless/SKILL.md")).toMatchObject({ name: "nameless", error: "front matter has no name" })
    expect((byId.get("acme/skills:ops/review/SKILL.md") as Json).error).toBeUndefined()
    for (const bad of ["acme", "acme/skills/x", "a b/c"]) {
      const reply = await agents(`?repo=${encodeURIComponent(bad)}`)
      expect(reply.status).toBe(400)
      expect(reply.body.error).toContain("repo")
    }
    expect((await agents("?sort_by=size")).status).toBe(400)
  })

  it("the list is cached until refresh=true", async () => {
    const reposDir = server().config.execution.reposDir
    await agents()
    writeRepository(reposDir, team.uid, "acme/skills", { ...REPOSITORY, "new/SKILL.md": "---\nname: newer\ndescription: n\n---\n" })
    expect((await agents()).body.agents.map((a: Json) => a.name)).toEqual(["deploy", "review"])
    expect((await agents("?refresh=true")).body.agents.map((a: Json) => a.name)).toEqual(["deploy", "newer", "review"])
    writeRepository(reposDir, team.uid, "acme/skills", REPOSITORY)
    expect((await agents("?refresh=true")).body.agents.map((a: Json) => a.name)).toEqual(["deploy", "review"])
  })

  it("a run with skill_spec gets the skill: base prompt, name, agent_skill, and the content handed to the agent", async () => {
    const created = await run({
      prompt: "@skill\nthen done",
      config: { skill_spec: "acme/skills:deploy", environment_id: envUid }
    })
    expect(created.status).toBe(200)
    const ended = await waitForRun(server(), team.tokens.member, created.body.run_id)
    expect(ended.state).toBe("SUCCEEDED")
    expect(ended.agent_config).toMatchObject({
      name: "deploy",
      skill_spec: "acme/skills:.agents/skills/deploy/SKILL.md",
      base_prompt: "# Deploy\n@say deploying now"
    })
    expect(ended.agent_skill).toEqual({
      name: "deploy",
      description: "Deploys the service",
      full_path: "skills/.agents/skills/deploy/SKILL.md"
    })
    expect(await conversationText(created.body.run_id)).toContain(`skill: deploy acme/skills:.agents/skills/deploy/SKILL.md\n${DEPLOY}`)
    // The listing now shows when it last ran, and sorting by last run puts it first.
    const listed = await agents("?sort_by=last_run")
    expect(listed.body.agents[0].name).toBe("deploy")
    expect(listed.body.agents[0].variants[0].last_run_timestamp).toBe(ended.created_at)
  })

  it("unknown or malformed skills are 400s naming the field", async () => {
    const unknown = await run({ prompt: "x", skill: "acme/skills:nope" })
    expect([unknown.status, unknown.body.error_code]).toEqual([400, "invalid_request"])
    expect(unknown.body.error).toMatch(/^skill: unknown skill/)
    const malformed = await run({ prompt: "x", config: { skill_spec: "acme/skills:broken/SKILL.md" } })
    expect(malformed.status).toBe(400)
    expect(malformed.body.error).toMatch(/^config\.skill_spec: skill acme\/skills:broken\/SKILL\.md is malformed/)
    const unseen = await run({ prompt: "x", skill: "acme/other:hidden" })
    expect(unseen.status).toBe(400)
  })

  it("the skill filter and sort_by=agent work on the runs' skills", async () => {
    const review = (await run({ prompt: "r", skill: "acme/skills:ops/review/SKILL.md" })).body.run_id
    const deploy = (await run({ prompt: "d", skill: "acme/skills:deploy" })).body.run_id
    const plain = (await run({ prompt: "p" })).body.run_id
    const list = async (query: string) =>
      (await call(server(), "GET", `/api/v1/agent/runs?${query}`, { token: team.tokens.member })).body.runs.map((r: Json) => r.run_id)
    expect(await list("skill=acme/skills:ops/review/SKILL.md")).toEqual([review])
    expect(await list("skill=acme/skills:review")).toEqual([review])
    expect((await list("skill_spec=acme/skills:.agents/skills/deploy/SKILL.md")).includes(deploy)).toBe(true)
    const sorted: Array<string> = await list("sort_by=agent&sort_order=asc&limit=100")
    // deploy's runs before review's, runs without a skill last.
    expect(sorted.indexOf(deploy)).toBeLessThan(sorted.indexOf(review))
    expect(sorted.indexOf(review)).toBeLessThan(sorted.indexOf(plain))
    expect(await list("name=review")).toEqual([review])
  })

  it("MCP servers: invalid entries are 400s naming the field, forbidden references 403s", async () => {
    const bad = async (servers: Json) => {
      const reply = await run({ prompt: "x", config: { mcp_servers: servers } })
      return [reply.status, reply.body.error as string] as const
    }
    const [s1, e1] = await bad({ a: { command: "" } })
    expect(s1).toBe(400)
    expect(e1).toContain("config.mcp_servers")
    const [s2, e2] = await bad({ a: { url: "ftp://x" } })
    expect(s2).toBe(400)
    expect(e2).toContain("config.mcp_servers")
    const [s3, e3] = await bad({ a: { command: "x", url: "https://x.example" } })
    expect(s3).toBe(400)
    expect(e3).toContain("config.mcp_servers")
    const [s4, e4] = await bad({ a: { server_id: "unregistered" } })
    expect(s4).toBe(403)
    expect(e4).toContain("config.mcp_servers.a.server_id")
    const [s5, e5] = await bad({ a: { command: "x", env: { T: "${{ secrets.API_TOKEN }}" } } })
    expect(s5).toBe(403)
    expect(e5).toContain("config.mcp_servers.a.env.T")
  })

  it("MCP servers: the agent receives the resolved configuration, secrets filled in from team secrets", async () => {
    const admin = team.tokens.admin
    const put = (name: string, value: string) =>
      call(server(), "PUT", `/api/v1/agent/secrets/${name}`, { token: admin, body: { value } })
    expect((await put("API_TOKEN", "tok-123")).status).toBe(200)
    expect((await put("MCP_SERVER_docs", JSON.stringify({
      url: "https://docs.example/mcp",
      headers: { Authorization: "Bearer ${{ secrets.API_TOKEN }}" }
    }))).status).toBe(200)
    const servers = {
      docs: { server_id: "docs" },
      local: { command: "mcp-tool", args: ["--stdio"], env: { MODE: "ro" } }
    }
    const created = await run({ prompt: "@mcp", config: { mcp_servers: servers } })
    expect(created.status).toBe(200)
    const ended = await waitForRun(server(), team.tokens.member, created.body.run_id)
    expect(ended.state).toBe("SUCCEEDED")
    expect(ended.agent_config.mcp_servers).toEqual(servers)
    const said = await conversationText(created.body.run_id)
    const json = JSON.parse(said.slice(said.indexOf("mcp_servers: ") + "mcp_servers: ".length).split("\n")[0]!)
    expect(json).toEqual({
      docs: { url: "https://docs.example/mcp", headers: { Authorization: "Bearer tok-123" } },
      local: { command: "mcp-tool", args: ["--stdio"], env: { MODE: "ro" } }
    })
    // An admin may reference a secret inline; the run keeps the reference, not the value.
    const inline = await run({ prompt: "@mcp", config: { mcp_servers: { x: { command: "t", env: { K: "${{ secrets.API_TOKEN }}" } } } } }, admin)
    expect(inline.status).toBe(200)
    const inlineRun = await waitForRun(server(), admin, inline.body.run_id)
    expect(JSON.stringify(inlineRun)).not.toContain("tok-123")
    expect(await conversationText(inline.body.run_id, admin)).toContain(`"K":"tok-123"`)
    // A reference to a secret the team does not have is a 400 naming the field.
    const waiting = await run({ prompt: "x", config: { mcp_servers: { x: { command: "t", env: { K: "${{ secrets.GONE }}" } } } } }, admin)
    expect(waiting.status).toBe(400)
    expect(waiting.body.error).toContain("config.mcp_servers.x.env.K")
  })
})
