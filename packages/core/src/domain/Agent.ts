/**
 * Agents (skills; docs/skills.md): the skill spec format `owner/repo:skill-name` or
 * `owner/repo:path/to/SKILL.md`, and the listing returned by `GET /agent`.
 */
import { Schema } from "effect"
import type { FastCheck } from "effect"
import { Timestamp } from "./Common.js"
import { EnvironmentUid } from "./Ids.js"

const repoPartPattern = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/

/** A repository owner or name: letters, digits, `_`, `.`, `-`, starting with a letter or digit. */
export const RepoSegment = Schema.String.pipe(
  Schema.filter(
    (s) => (repoPartPattern.test(s) && s.length <= 100) || "must be letters, digits, '_', '.' or '-' (at most 100)",
    { description: "a repository owner or name", jsonSchema: { pattern: repoPartPattern.source } }
  )
).annotations({
  identifier: "RepoSegment",
  arbitrary: () => (fc) => fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,15}$/)
})
const skillNamePattern = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/

/** The parts of a skill spec: a bare skill name, or the path of a `SKILL.md` file in the repository. */
export type SkillSpecParts =
  | { readonly owner: string; readonly repo: string; readonly kind: "name"; readonly name: string }
  | { readonly owner: string; readonly repo: string; readonly kind: "path"; readonly path: string }

const isSkillPath = (path: string): boolean => {
  const segments = path.split("/")
  return (
    segments[segments.length - 1] === "SKILL.md" &&
    segments.every((seg) => seg.length > 0 && seg !== "." && seg !== ".." && !/[\s\\:]/.test(seg))
  )
}

/** Splits a skill spec into its parts; `undefined` when it is not of either accepted shape. */
export const parseSkillSpec = (spec: string): SkillSpecParts | undefined => {
  const colon = spec.indexOf(":")
  if (colon < 0) return undefined
  const repoRef = spec.slice(0, colon).split("/")
  const rest = spec.slice(colon + 1)
  if (repoRef.length !== 2) return undefined
  const [owner, repo] = repoRef as [string, string]
  if (!repoPartPattern.test(owner) || !repoPartPattern.test(repo)) return undefined
  if (!rest.includes("/") && rest !== "SKILL.md") {
    return skillNamePattern.test(rest) ? { owner, repo, kind: "name", name: rest } : undefined
  }
  return isSkillPath(rest) ? { owner, repo, kind: "path", path: rest } : undefined
}

const skillSpecArbitrary = () => (fc: typeof FastCheck) => {
  const part = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,11}$/)
  const name = part.map((n) => `:${n}`)
  const path = fc.array(part, { maxLength: 3 }).map((dirs) => `:${[...dirs, "SKILL.md"].join("/")}`)
  return fc.tuple(part, part, fc.oneof(name, path)).map(([o, r, s]) => `${o}/${r}${s}` as SkillSpec)
}

/** A skill spec: `owner/repo:skill-name` or `owner/repo:path/to/SKILL.md`. */
export const SkillSpec = Schema.String.pipe(
  Schema.filter(
    (s) =>
      parseSkillSpec(s) !== undefined ||
      "must be owner/repo:skill-name or owner/repo:path/to/SKILL.md",
    { description: "a skill spec: owner/repo:skill-name or owner/repo:path/to/SKILL.md" }
  ),
  Schema.brand("SkillSpec")
).annotations({ identifier: "SkillSpec", arbitrary: skillSpecArbitrary })
export type SkillSpec = typeof SkillSpec.Type

/** An environment in which a skill variant is available. */
export const AgentEnvironmentRef = Schema.Struct({
  uid: EnvironmentUid,
  name: Schema.String
}).annotations({ identifier: "AgentEnvironmentRef" })
export type AgentEnvironmentRef = typeof AgentEnvironmentRef.Type

/** Where a skill variant was found; `worker_host` only for skills reported by a self-hosted worker. */
export const AgentSkillSource = Schema.Struct({
  owner: Schema.String,
  name: Schema.String,
  skill_path: Schema.String,
  worker_host: Schema.optional(Schema.String)
}).annotations({ identifier: "AgentSkillSource" })
export type AgentSkillSource = typeof AgentSkillSource.Type

/**
 * One `SKILL.md` of one repository. `last_run_timestamp` is `null` when the skill never ran;
 * `error` is present only on a malformed skill (listed with `include_malformed_skills=true`).
 */
export const AgentVariant = Schema.Struct({
  id: SkillSpec,
  base_prompt: Schema.String,
  description: Schema.String,
  environments: Schema.Array(AgentEnvironmentRef),
  source: AgentSkillSource,
  last_run_timestamp: Schema.NullOr(Timestamp),
  error: Schema.optional(Schema.String)
}).annotations({ identifier: "AgentVariant" })
export type AgentVariant = typeof AgentVariant.Type

/** An agent: the skill variants sharing one front-matter `name`. */
export const AgentListing = Schema.Struct({
  name: Schema.String,
  variants: Schema.Array(AgentVariant)
}).annotations({ identifier: "AgentListing" })
export type AgentListing = typeof AgentListing.Type

/** `GET /agent`. */
export class ListAgentsResponse extends Schema.Class<ListAgentsResponse>("ListAgentsResponse")({
  agents: Schema.Array(AgentListing)
}) {}
