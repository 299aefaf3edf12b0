/** Refs a clone may start from: branch, tag and commit names git accepts, never an option or a path trick; `repo_refs` keyed by repository. */
import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { GitHubRepo } from "../src/domain/Environment.js"
import { MAX_REPOSITORIES, RepoRefs, refProblem } from "../src/domain/GitRef.js"

describe("GitRef", () => {
  it("accepts branches, tags and commits", () => {
    for (const ref of ["main", "release/1.2", "v1.0.0", "feature_x", "0123abc", "a".repeat(255)]) expect(refProblem(ref), ref).toBeUndefined()
  })

  it("refuses what git would read as an option, a range or a path trick", () => {
    for (const ref of ["", "-c", "--upload-pack=x", "/etc", "a..b", "a//b", "main/", "main.", "x.lock", "a b", "a:b", "a~1", "HEAD^", "a\nb", "a".repeat(256)]) {
      expect(refProblem(ref), JSON.stringify(ref)).toBeDefined()
    }
    const decoded = Schema.decodeUnknownEither(GitHubRepo)({ owner: "acme", repo: "app", ref: "--exec=x" })
    expect(Either.isLeft(decoded)).toBe(true)
  })

  it("repo_refs: keys are repositories, values refs, at most as many as an environment's repositories", () => {
    const decode = Schema.decodeUnknownEither(RepoRefs)
    expect(decode({ "acme/app": "main" })).toEqual(Either.right({ "acme/app": "main" }))
    expect(Either.isLeft(decode({ "acme": "main" }))).toBe(true)
    expect(Either.isLeft(decode({ "acme/app": "-x" }))).toBe(true)
    const many = Object.fromEntries(Array.from({ length: MAX_REPOSITORIES + 1 }, (_, i) => [`acme/r${i}`, "main"]))
    expect(Either.isLeft(decode(many))).toBe(true)
  })
})
