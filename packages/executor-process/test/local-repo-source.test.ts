import type { TeamUid } from "@agent-runs/core/domain/Ids"
import { writeRepository } from "@agent-runs/core/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { mkdirSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { make, unscopedRepositories } from "../src/LocalRepoSource.js"

const A = "TeamA00000000000000001" as TeamUid
const B = "TeamB00000000000000002" as TeamUid

describe("LocalRepoSource: repositories belong to teams", () => {
  const reposDir = mkdtempSync(join(tmpdir(), "agent-runs-local-repos-"))
  writeRepository(reposDir, A, "acme/app", { "SKILL.md": "---\nname: a\ndescription: A's\n---\n" })
  // An empty directory is a repository the team has, without files to read.
  mkdirSync(join(reposDir, B, "acme", "empty"), { recursive: true })
  const source = make({ reposDir })

  it.effect("a team has only what is in its own folder", () =>
    Effect.gen(function*() {
      expect(yield* source.has(A, "acme", "app")).toBe(true)
      expect(yield* source.has(B, "acme", "app")).toBe(false)
      expect(yield* source.has(B, "acme", "empty")).toBe(true)
      const files = yield* source.findFiles(A, "acme", "app", "SKILL.md")
      expect(Option.map(files, (f) => f.files.map((file) => file.path))).toEqual(Option.some(["SKILL.md"]))
      expect(yield* source.findFiles(B, "acme", "app", "SKILL.md")).toEqual(Option.none())
      expect(yield* source.findFiles(B, "acme", "empty", "SKILL.md")).toEqual(Option.none())
    }))

  it.effect("a team or a name that would leave the directory has nothing", () =>
    Effect.gen(function*() {
      for (const [team, owner, repo] of [["..", A, "acme"], [".", A, "acme"], [`${A}/acme`, "app", "x"], [A, "..", A], [A, "acme", "../app"]]) {
        expect(yield* source.has(team as TeamUid, owner!, repo!)).toBe(false)
        expect(yield* source.findFiles(team as TeamUid, owner!, repo!, "SKILL.md")).toEqual(Option.none())
      }
    }))

  it("finds repositories left as <owner>/<repo>, which no team sees", () => {
    expect(unscopedRepositories(reposDir)).toEqual([])
    writeRepository(reposDir, ".", "legacy/tools", { "README.md": "x\n" })
    expect(unscopedRepositories(reposDir)).toEqual(["legacy/tools"])
    expect(unscopedRepositories(join(reposDir, "missing"))).toEqual([])
  })
})
