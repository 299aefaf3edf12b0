/**
 * Skills (agents) and `GET /agent` (docs/skills.md): `SKILL.md` files with YAML front
 * matter (`name`, `description`) in the repositories of the environments the caller can see,
 * listed grouped by name with one variant per file, and resolved for runs (`skill_spec`).
 *
 * Decisions (docs/skills.md):
 * - A `SKILL.md` is read on the repository's default branch (the `RepoSource` port). Its front
 *   matter is the text between a first line `---` and the next line `---` (or `...`). It must be
 *   a YAML mapping with `name` (letters, digits, `_`, `.`, `-`, starting with a letter or digit,
 *   at most 100: so a skill spec can name it) and a non-blank `description` string. Anything else
 *   makes the skill malformed, and its `error` says why (the first problem found). A file over
 *   `MAX_SKILL_FILE_BYTES` is malformed too.
 * - A variant's `base_prompt` is the file's body after the front matter, trimmed; its `id` is
 *   `owner/repo:path/to/SKILL.md`. A malformed skill is grouped under its front-matter `name`
 *   when that one is usable, else under the name of the folder holding the file (the repository
 *   name for a root `SKILL.md`).
 * - `environments` of a variant are the caller's visible environments naming its repository.
 *   `last_run_timestamp` is the creation time of the newest run the caller can see whose
 *   resolved `skill_spec` is the variant's id (null when none).
 * - Sorting: `name` (code-point order) or `last_run` (most recently run first, never-run last,
 *   ties by name); variants by id. Any other `sort_by` is a 400 naming it, as is a `repo` that is
 *   not `owner/repo`. A `repo` no visible environment names lists nothing.
 * - The list reads each repository at most once per `CACHE_TTL` (a cache per server replica,
 *   keyed by repository); `refresh=true` empties the cache first. Resolving a skill for a run
 *   always reads the repository again.
 * - A run's `skill_spec` resolves only in the repositories of the environments the caller can
 *   see (the same set `GET /agent` lists): anything else is an unknown skill, a 400 (nothing
 *   leaks about repositories the caller cannot see). A name form (`owner/repo:name`) naming no
 *   valid skill, or several, is a 400; a path form naming a malformed skill is a 400 carrying
 *   its error.
 * - A repository that cannot be read is left out of the list (logged); resolving in it is a 503.
 * - Repositories belong to teams (Repositories.ts): the list and the resolution read the caller's
 *   team's repository of each name (an environment shared from another team names a repository;
 *   the caller's team must have it), and an execution reads the run's team's.
 */
import { Clock, DateTime, Effect, Either, Option, Ref, Schema } from "effect"
import type { Viewer } from "../domain/Access.js"
import { AgentListing, AgentVariant, ListAgentsResponse, parseSkillSpec, RepoSegment } from "../domain/Agent.js"
import type { AgentEnvironmentRef } from "../domain/Agent.js"
import { InvalidRequest, ResourceUnavailable } from "../domain/Errors.js"
import type { TeamUid } from "../domain/Ids.js"
import { storageUnavailable } from "../internal/Services.js"
import { EnvironmentStore } from "../ports/EnvironmentStore.js"
import type { StoredEnvironment } from "../ports/EnvironmentStore.js"
import { RepoSource } from "../ports/RepoSource.js"
import type { RepoFiles } from "../ports/RepoSource.js"
import { RunStore } from "../ports/RunStore.js"
import { resolvedOf, SKILL_FILE, skillsOf } from "../domain/SkillFiles.js"

/** How long the list reuses what it read of a repository. */
export const CACHE_TTL_MS = 60_000
/** How the agent list may be sorted. */
export const AGENT_SORTS = ["name", "last_run"] as const

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** The repositories of environments, each with the environments naming it, in first-seen order. */
export const repositoriesOf = (envs: ReadonlyArray<StoredEnvironment>) => {
  const repos = new Map<string, { owner: string; repo: string; environments: Array<AgentEnvironmentRef> }>()
  for (const env of envs) {
    for (const { owner, repo } of env.item.config.github_repos) {
      const key = `${owner}/${repo}`
      const entry = repos.get(key) ?? { owner, repo, environments: [] }
      if (!entry.environments.some((e) => e.uid === env.item.uid)) {
        entry.environments.push({ uid: env.item.uid, name: env.item.config.name })
      }
      repos.set(key, entry)
    }
  }
  return repos
}

const isRepoSegment = Schema.is(RepoSegment)

/** Parses the `repo` parameter of `GET /agent`: `owner/repo`, else a 400 naming `repo`. */
export const parseRepoParam = (raw: string): Either.Either<{ owner: string; repo: string }, InvalidRequest> => {
  const parts = raw.split("/")
  return parts.length === 2 && parts.every(isRepoSegment)
    ? Either.right({ owner: parts[0]!, repo: parts[1]! })
    : Either.left(InvalidRequest.forField("repo", `must be owner/repo; got ${JSON.stringify(raw.slice(0, 200))}`))
}

/** The query of `GET /agent`, as strings from the query string. */
export interface ListAgentsParams {
  readonly repo?: string | undefined
  readonly refresh?: string | boolean | undefined
  readonly sort_by?: string | undefined
  readonly include_malformed_skills?: string | boolean | undefined
}

const booleanParam = (field: string, raw: string | boolean | undefined): Either.Either<boolean, InvalidRequest> =>
  raw === undefined || raw === false || raw === "false"
    ? Either.right(false)
    : raw === true || raw === "true"
    ? Either.right(true)
    : Either.left(InvalidRequest.forField(field, "must be true or false"))

/** Groups variants by name and sorts (pure). */
export const groupAgents = (
  variants: ReadonlyArray<{ readonly name: string; readonly variant: AgentVariant }>,
  sort: (typeof AGENT_SORTS)[number]
): Array<AgentListing> => {
  const byName = new Map<string, Array<AgentVariant>>()
  for (const { name, variant } of variants) byName.set(name, [...(byName.get(name) ?? []), variant])
  const lastRun = (vs: ReadonlyArray<AgentVariant>) =>
    Math.max(-Infinity, ...vs.flatMap((v) => (v.last_run_timestamp === null ? [] : [DateTime.toEpochMillis(v.last_run_timestamp)])))
  return [...byName.entries()]
    .map(([name, vs]) => AgentListing.make({ name, variants: [...vs].sort((a, b) => compare(a.id, b.id)) }))
    .sort((a, b) => {
      if (sort === "last_run") {
        const d = lastRun(b.variants) - lastRun(a.variants)
        if (d !== 0 && !Number.isNaN(d)) return d
      }
      return compare(a.name, b.name)
    })
}

const unknownSkill = (field: string, spec: string, why: string) =>
  InvalidRequest.forField(field, `unknown skill ${JSON.stringify(spec)}: ${why}`)

/** The skills service: `GET /agent` and the resolution of a run's `skill_spec`. */
export class Skills extends Effect.Service<Skills>()("@agent-runs/core/Skills", {
  effect: Effect.gen(function*() {
    const environments = yield* EnvironmentStore
    const runs = yield* RunStore
    const source = yield* RepoSource
    const cache = yield* Ref.make(new Map<string, { readonly at: number; readonly files: Option.Option<RepoFiles> }>())

    /** The SKILL.md files of a team's repository: from the cache when fresh enough (and `cached`). */
    const read = (team: TeamUid, owner: string, repo: string, cached: boolean) =>
      Effect.gen(function*() {
        const key = `${team}/${owner}/${repo}`
        const now = yield* Clock.currentTimeMillis
        const hit = (yield* Ref.get(cache)).get(key)
        if (cached && hit !== undefined && now - hit.at < CACHE_TTL_MS) return hit.files
        const files = yield* source.findFiles(team, owner, repo, SKILL_FILE)
        yield* Ref.update(cache, (m) => new Map(m).set(key, { at: now, files }))
        return files
      })

    const lastRun = (viewer: Viewer, id: string) =>
      Effect.map(
        runs.list({
          limit: 1,
          sort_by: "created_at",
          sort_order: "desc",
          filters: { states: [], metadata: [], q: [], skill_spec: id }
        }, viewer),
        (page) => page.rows[0]?.item.created_at ?? null
      )

    const list = Effect.fn("Skills.list")(
      function*(viewer: Viewer, params: ListAgentsParams) {
        const only = params.repo === undefined ? undefined : yield* parseRepoParam(params.repo)
        const sort = params.sort_by ?? "name"
        if (!(AGENT_SORTS as ReadonlyArray<string>).includes(sort)) {
          return yield* InvalidRequest.forField("sort_by", `must be one of ${AGENT_SORTS.join(", ")}`)
        }
        const refresh = yield* booleanParam("refresh", params.refresh)
        const malformed = yield* booleanParam("include_malformed_skills", params.include_malformed_skills)
        if (refresh) yield* Ref.set(cache, new Map())
        const repos = repositoriesOf(yield* environments.list(viewer))
        const variants: Array<{ name: string; variant: AgentVariant }> = []
        for (const { environments: envs, owner, repo } of repos.values()) {
          if (only !== undefined && (only.owner !== owner || only.repo !== repo)) continue
          const files = yield* read(viewer.team_uid, owner, repo, true).pipe(
            Effect.catchTag("RepoSourceError", (e) =>
              Effect.as(Effect.logWarning(`skills: repository ${e.repository} could not be read: ${e.message}`), Option.none()))
          )
          if (Option.isNone(files)) continue
          for (const skill of skillsOf(owner, repo, files.value.files)) {
            if (Either.isLeft(skill.parsed) && !malformed) continue
            variants.push({
              name: skill.name,
              variant: AgentVariant.make({
                id: skill.id,
                base_prompt: Either.isRight(skill.parsed) ? skill.parsed.right.body : "",
                description: Either.isRight(skill.parsed) ? skill.parsed.right.description : "",
                environments: envs,
                source: { owner, name: repo, skill_path: skill.path },
                last_run_timestamp: yield* lastRun(viewer, skill.id),
                ...(Either.isLeft(skill.parsed) ? { error: skill.parsed.left.error } : {})
              })
            })
          }
        }
        return new ListAgentsResponse({ agents: groupAgents(variants, sort as (typeof AGENT_SORTS)[number]) })
      },
      storageUnavailable
    )

    /**
     * Resolves a skill spec for a run of `viewer` (`field` names the request field in errors):
     * only in repositories of environments the viewer can see, read afresh.
     */
    const resolve = Effect.fn("Skills.resolve")(
      function*(viewer: Viewer, spec: string, field: string) {
        const parts = parseSkillSpec(spec)
        if (parts === undefined) {
          return yield* InvalidRequest.forField(field, "must be owner/repo:skill-name or owner/repo:path/to/SKILL.md")
        }
        const repos = repositoriesOf(yield* environments.list(viewer))
        if (!repos.has(`${parts.owner}/${parts.repo}`)) {
          return yield* unknownSkill(field, spec, `no environment you can use has the repository ${parts.owner}/${parts.repo}`)
        }
        const files = yield* read(viewer.team_uid, parts.owner, parts.repo, false).pipe(
          Effect.mapError((e) => new ResourceUnavailable({ message: `repository ${e.repository} could not be read; try again` }))
        )
        const skills = Option.isNone(files) ? [] : skillsOf(parts.owner, parts.repo, files.value.files)
        const matches = parts.kind === "path"
          ? skills.filter((s) => s.path === parts.path)
          : skills.filter((s) => Either.isRight(s.parsed) && s.name === parts.name)
        if (matches.length === 0) {
          return yield* unknownSkill(
            field,
            spec,
            parts.kind === "path" ? `no ${parts.path} in ${parts.owner}/${parts.repo}` : `no skill named ${parts.name} in ${parts.owner}/${parts.repo}`
          )
        }
        if (matches.length > 1) {
          return yield* InvalidRequest.forField(
            field,
            `${matches.length} skills are named ${JSON.stringify(matches[0]!.name)} in ${parts.owner}/${parts.repo} ` +
              `(${matches.map((m) => m.path).join(", ")}); name one by its path`
          )
        }
        const skill = matches[0]!
        const resolved = resolvedOf(skill)
        if (resolved === undefined) {
          const error = Either.isLeft(skill.parsed) ? skill.parsed.left.error : "unreadable"
          return yield* InvalidRequest.forField(field, `skill ${skill.id} is malformed: ${error}`)
        }
        return resolved
      },
      storageUnavailable
    )

    return { list, resolve } as const
  })
}) {}
