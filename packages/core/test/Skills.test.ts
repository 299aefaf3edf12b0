import { describe, expect, it } from "@effect/vitest"
import { DateTime, Either, FastCheck as fc, Option, Redacted } from "effect"
import { Effect } from "effect"
import { parseSkillSpec } from "../src/domain/Agent.js"
import type { AgentVariant } from "../src/domain/Agent.js"
import { parseRegistered, resolveMcpServers, secretReferences, substituteSecrets } from "../src/domain/McpServers.js"
import type { SecretName } from "../src/domain/Secret.js"
import type { TeamUid } from "../src/domain/Ids.js"
import { parseSkillFile, skillsOf } from "../src/domain/SkillFiles.js"
import { groupAgents, parseRepoParam } from "../src/services/Skills.js"

const name = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,30}$/)
const description = fc.string({ minLength: 1, maxLength: 60 }).filter((s) => s.trim() !== "")
const body = fc.string({ maxLength: 200 })

describe("parseSkillFile", () => {
  it("reads name, description and the trimmed body", () => {
    const parsed = parseSkillFile("---\nname: deploy\ndescription: Deploys the app\n---\n\n# Deploy\nRun it.\n")
    expect(parsed).toEqual(Either.right({ name: "deploy", description: "Deploys the app", body: "# Deploy\nRun it." }))
  })

  it("says what is wrong with a malformed file", () => {
    const error = (text: string) => Either.match(parseSkillFile(text), { onLeft: (p) => p.error, onRight: () => "ok" })
    expect(error("# no front matter")).toContain("no YAML front matter")
    expect(error("---\nname: x\ndescription: y\n")).toContain("not closed")
    expect(error("---\nname: [unclosed\n---\n")).toContain("not valid YAML")
    expect(error("---\n- a\n- b\n---\n")).toContain("mapping")
    expect(error("---\ndescription: y\n---\n")).toBe("front matter has no name")
    expect(error("---\nname: 3\ndescription: y\n---\n")).toBe("front matter name must be a string")
    expect(error("---\nname: has space\ndescription: y\n---\n")).toContain("letters, digits")
    expect(error("---\nname: ok\n---\n")).toBe("front matter has no description")
    expect(error("---\nname: ok\ndescription: [1]\n---\n")).toBe("front matter description must be a string")
    expect(error("---\nname: ok\ndescription: '  '\n---\n")).toContain("blank")
    // The name is kept when only the description is wrong (the skill is grouped under it).
    expect(parseSkillFile("---\nname: ok\n---\n")).toEqual(Either.left({ error: "front matter has no description", name: "ok" }))
  })

  it.prop("a rendered skill parses back to what was rendered", [name, description, body], ([n, d, b]) => {
    const text = `---\nname: ${JSON.stringify(n)}\ndescription: ${JSON.stringify(d)}\n---\n${b}`
    expect(parseSkillFile(text)).toEqual(Either.right({ name: n, description: d, body: b.trim() }))
  })

  it.prop("never throws", [fc.string({ maxLength: 300 })], ([text]) => {
    const parsed = parseSkillFile(`---\n${text}`)
    expect(Either.isEither(parsed)).toBe(true)
  })
})

describe("skillsOf", () => {
  it("keeps SKILL.md files only, with ids and names; malformed ones under their folder's name", () => {
    const ok = "---\nname: deploy\ndescription: d\n---\nbody"
    const skills = skillsOf("acme", "widgets", [
      { path: "skills/deploy/SKILL.md", size: ok.length, content: ok },
      { path: "skills/broken/SKILL.md", size: 3, content: "bad" },
      { path: "SKILL.md", size: 300_000, content: undefined },
      { path: "docs/NOTSKILL.md", size: 1, content: "x" }
    ])
    expect(skills.map((s) => [s.id, s.name, Either.isRight(s.parsed)])).toEqual([
      ["acme/widgets:SKILL.md", "widgets", false],
      ["acme/widgets:skills/broken/SKILL.md", "broken", false],
      ["acme/widgets:skills/deploy/SKILL.md", "deploy", true]
    ])
    expect(Either.getLeft(skills[0]!.parsed).pipe(Option.map((p) => p.error))).toEqual(Option.some("the file is larger than 262144 bytes"))
  })
})

describe("parseSkillSpec", () => {
  const segment = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,11}$/)
  it.prop("a path spec gives its parts back", [segment, segment, fc.array(segment, { maxLength: 3 })], ([o, r, dirs]) => {
    const path = [...dirs, "SKILL.md"].join("/")
    expect(parseSkillSpec(`${o}/${r}:${path}`)).toEqual({ owner: o, repo: r, kind: "path", path })
  })
  it.prop("a name spec gives its parts back", [segment, segment, segment], ([o, r, n]) => {
    expect(parseSkillSpec(`${o}/${r}:${n}`)).toEqual({ owner: o, repo: r, kind: "name", name: n })
  })
  it("refuses what is neither", () => {
    for (const bad of ["acme/widgets", "widgets:deploy", "a/b/c:deploy", "acme/widgets:../SKILL.md", "acme/widgets:a/README.md", "acme/widgets:"]) {
      expect(parseSkillSpec(bad)).toBeUndefined()
    }
  })
  it("the repo parameter must be owner/repo", () => {
    expect(Either.isRight(parseRepoParam("acme/widgets"))).toBe(true)
    for (const bad of ["acme", "acme/widgets/x", "/widgets", "acme/wid gets"]) {
      expect(Either.getLeft(parseRepoParam(bad)).pipe(Option.map((e) => e.field))).toEqual(Option.some("repo"))
    }
  })
})

describe("groupAgents", () => {
  const variant = (id: string, at: number | null): AgentVariant => ({
    id: id as AgentVariant["id"],
    base_prompt: "",
    description: "",
    environments: [],
    source: { owner: "o", name: "r", skill_path: id },
    last_run_timestamp: at === null ? null : DateTime.unsafeMake(at)
  })
  it("groups by name; sorts by name or by last run (never-run last)", () => {
    const vs = [
      { name: "b", variant: variant("o/r:b/SKILL.md", 10) },
      { name: "a", variant: variant("o/s:a/SKILL.md", null) },
      { name: "c", variant: variant("o/r:c/SKILL.md", 20) },
      { name: "a", variant: variant("o/r:a/SKILL.md", 5) }
    ]
    const byName = groupAgents(vs, "name")
    expect(byName.map((a) => a.name)).toEqual(["a", "b", "c"])
    expect(byName[0]!.variants.map((v) => v.id)).toEqual(["o/r:a/SKILL.md", "o/s:a/SKILL.md"])
    expect(groupAgents(vs, "last_run").map((a) => a.name)).toEqual(["c", "b", "a"])
    expect(groupAgents([...vs, { name: "d", variant: variant("o/r:d/SKILL.md", null) }], "last_run").map((a) => a.name))
      .toEqual(["c", "b", "a", "d"])
  })
})

describe("MCP servers", () => {
  const secretName = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/)
  it.prop("substitution replaces every reference and leaves other text alone", [
    fc.array(fc.tuple(fc.stringMatching(/^[a-z ]{0,5}$/), secretName), { maxLength: 4 })
  ], ([parts]) => {
    const text = parts.map(([t, n]) => `${t}\${{ secrets.${n} }}`).join("")
    expect(substituteSecrets(text, (n) => `<${n}>`)).toBe(parts.map(([t, n]) => `${t}<${n}>`).join(""))
  })

  it("finds references in args, env and headers only", () => {
    expect(secretReferences({ command: "x ${{secrets.A}}", args: ["--t=${{ secrets.B }}"], env: { K: "${{ secrets.C }}" } }))
      .toEqual([{ field: "args[0]", name: "B" }, { field: "env.K", name: "C" }])
    expect(secretReferences({ url: "https://x.example/${{ secrets.A }}", headers: { Authorization: "Bearer ${{ secrets.T }}" } }))
      .toEqual([{ field: "headers.Authorization", name: "T" }])
  })

  it("a registered configuration must be the JSON of a stdio or HTTP server", () => {
    expect(parseRegistered(JSON.stringify({ url: "https://mcp.example/x" }))).toEqual(Either.right({ url: "https://mcp.example/x" }))
    expect(Either.isLeft(parseRegistered("not json"))).toBe(true)
    expect(Either.isLeft(parseRegistered(JSON.stringify({ server_id: "x" })))).toBe(true)
  })

  it.effect("resolution fills secrets in and expands registered servers", () =>
    Effect.gen(function*() {
      const values: Record<string, string> = {
        TOKEN: "s3cret",
        MCP_SERVER_docs: JSON.stringify({ url: "https://docs.example/mcp", headers: { "X-Key": "${{ secrets.TOKEN }}" } })
      }
      const store = {
        get: (_: TeamUid, n: SecretName) => Effect.succeed(Option.map(Option.fromNullable(values[n]), Redacted.make)),
        put: () => Effect.void,
        list: () => Effect.succeed([]),
        remove: () => Effect.succeed(false)
      }
      const resolved = yield* resolveMcpServers(store, "t" as TeamUid, {
        local: { command: "tool", env: { T: "${{ secrets.TOKEN }}" } },
        docs: { server_id: "docs" }
      })
      expect(resolved).toEqual({
        local: { command: "tool", env: { T: "s3cret" } },
        docs: { url: "https://docs.example/mcp", headers: { "X-Key": "s3cret" } }
      })
      const gone = yield* Effect.flip(resolveMcpServers(store, "t" as TeamUid, { x: { server_id: "nope" } }))
      expect(gone.message).toContain("no longer exists")
    }))
})
