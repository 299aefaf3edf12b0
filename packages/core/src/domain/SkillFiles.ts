/**
 * Skill files (docs/skills.md): a `SKILL.md` with YAML front matter (`name`, `description`) parsed
 * (pure and total: what is wrong is said), the skills of a repository's files, and a skill read
 * by its id for an execution. The `Skills` service lists and resolves them for callers.
 */
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import { parseDocument } from "yaml"
import { HarnessConfig, type HarnessSources } from "./HarnessSelection.js"
import { parseSkillSpec } from "./Agent.js"
import type { SkillSpec } from "./Agent.js"
import type { TeamUid } from "./Ids.js"
import type { RepoFile, RepoSourceService } from "../ports/RepoSource.js"

/** The file name of a skill. */
export const SKILL_FILE = "SKILL.md"
/** A larger `SKILL.md` is malformed (its content is not read). */
export const MAX_SKILL_FILE_BYTES = 256 * 1024

const skillNamePattern = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/

/** What a well-formed `SKILL.md` says. */
export interface SkillDocument {
  readonly name: string
  readonly description: string
  /** The text after the front matter, trimmed. */
  readonly body: string
  /**
   * The harness the skill runs with, from the front matter's `harness`: a type (`harness: claude`)
   * or `{type, model_id?, reasoning_level?}`. A skill names no auth secret: only team admins may.
   */
  readonly harness?: HarnessConfig
}

/** A malformed `SKILL.md`: why, and its front-matter name when that one was usable. */
export interface SkillProblem {
  readonly error: string
  readonly name: string | undefined
}

const nameProblem = (name: unknown): string | undefined =>
  typeof name !== "string"
    ? name === undefined || name === null ? "front matter has no name" : "front matter name must be a string"
    : name.length > 100 || !skillNamePattern.test(name)
    ? "front matter name must be letters, digits, '_', '.' or '-', starting with a letter or digit (at most 100)"
    : undefined

/**
 * Parses a `SKILL.md`: its YAML front matter (`name`, `description`) and body. Pure and total:
 * `Left` says what is wrong (and carries the name when that part was fine).
 */
export const parseSkillFile = (text: string): Either.Either<SkillDocument, SkillProblem> => {
  const fail = (error: string, name?: string) => Either.left({ error, name })
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/)
  if (lines[0]?.trimEnd() !== "---") return fail("no YAML front matter: the file must start with a line '---'")
  const end = lines.findIndex((line, i) => i > 0 && (line.trimEnd() === "---" || line.trimEnd() === "..."))
  if (end < 0) return fail("the YAML front matter is not closed by a line '---'")
  const doc = parseDocument(lines.slice(1, end).join("\n"), { prettyErrors: false })
  if (doc.errors.length > 0) {
    return fail(`the front matter is not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}`)
  }
  const value: unknown = doc.toJS()
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return fail("the front matter must be a YAML mapping with name and description")
  }
  const { description, name } = value as Record<string, unknown>
  const badName = nameProblem(name)
  if (badName !== undefined) return fail(badName)
  const goodName = name as string
  if (description === undefined || description === null) return fail("front matter has no description", goodName)
  if (typeof description !== "string") return fail("front matter description must be a string", goodName)
  if (description.trim() === "") return fail("front matter description must not be blank", goodName)
  const body = lines.slice(end + 1).join("\n").trim()
  const rawHarness = (value as Record<string, unknown>).harness
  if (rawHarness === undefined || rawHarness === null) return Either.right({ name: goodName, description, body })
  const harness = decodeHarness(typeof rawHarness === "string" ? { type: rawHarness } : rawHarness)
  if (Either.isLeft(harness)) {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(harness.left)[0]
    const where = issue === undefined || issue.path.length === 0 ? "harness" : `harness.${issue.path.join(".")}`
    return fail(`front matter ${where} ${issue?.message ?? "is not valid"}`, goodName)
  }
  return Either.right({ name: goodName, description, body, harness: harness.right })
}

const decodeHarness = Schema.decodeUnknownEither(HarnessConfig, { onExcessProperty: "error" })

/** One `SKILL.md` of one repository, parsed. */
export interface FoundSkill {
  /** `owner/repo:path/to/SKILL.md` */
  readonly id: SkillSpec
  readonly owner: string
  readonly repo: string
  readonly path: string
  /** The name it is listed under. */
  readonly name: string
  readonly parsed: Either.Either<SkillDocument, SkillProblem>
  /** The whole file (undefined when too large to read). */
  readonly content: string | undefined
}

/** A skill resolved for a run. */
export interface ResolvedSkill {
  readonly id: SkillSpec
  readonly owner: string
  readonly repo: string
  readonly path: string
  readonly name: string
  readonly description: string
  readonly body: string
  readonly content: string
  /** The harness settings the skill gives a run (its front matter's `harness`). */
  readonly harness: HarnessSources | undefined
}

/** A well-formed skill as a run uses it; undefined when it is malformed. */
export const resolvedOf = (skill: FoundSkill): ResolvedSkill | undefined =>
  Either.isLeft(skill.parsed) || skill.content === undefined
    ? undefined
    : {
      id: skill.id,
      owner: skill.owner,
      repo: skill.repo,
      path: skill.path,
      name: skill.parsed.right.name,
      description: skill.parsed.right.description,
      body: skill.parsed.right.body,
      content: skill.content,
      harness: skill.parsed.right.harness === undefined ? undefined : { harness: skill.parsed.right.harness }
    }

const folderName = (repo: string, path: string) => {
  const parts = path.split("/")
  return parts.length >= 2 ? parts[parts.length - 2]! : repo
}

/** Parses the files a repository answered into skills (pure). */
export const skillsOf = (owner: string, repo: string, files: ReadonlyArray<RepoFile>): Array<FoundSkill> =>
  files
    .filter((f) => f.path === SKILL_FILE || f.path.endsWith(`/${SKILL_FILE}`))
    .map((file) => {
      const parsed: Either.Either<SkillDocument, SkillProblem> = file.content === undefined || file.size > MAX_SKILL_FILE_BYTES
        ? Either.left({ error: `the file is larger than ${MAX_SKILL_FILE_BYTES} bytes`, name: undefined })
        : parseSkillFile(file.content)
      const name = Either.match(parsed, { onLeft: (p) => p.name ?? folderName(repo, file.path), onRight: (d) => d.name })
      return {
        id: `${owner}/${repo}:${file.path}` as SkillSpec,
        owner,
        repo,
        path: file.path,
        name,
        parsed,
        content: file.content
      }
    })
    .sort((a, b) => compare(a.id, b.id))

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * Reads a skill at execution, by its resolved id, in the run's team's repositories, without
 * access checks (they were made when the run was created). None when it is gone or no longer well
 * formed.
 */
export const readSkill = (source: RepoSourceService, team: TeamUid, id: string) =>
  Effect.gen(function*() {
    const parts = parseSkillSpec(id)
    if (parts === undefined || parts.kind !== "path") return Option.none<ResolvedSkill>()
    const files = yield* source.findFiles(team, parts.owner, parts.repo, SKILL_FILE)
    if (Option.isNone(files)) return Option.none<ResolvedSkill>()
    const skill = skillsOf(parts.owner, parts.repo, files.value.files).find((s) => s.path === parts.path)
    return Option.fromNullable(skill === undefined ? undefined : resolvedOf(skill))
  })
