/**
 * Which agent a run executes (docs/harnesses.md): `config.harness` `{type, model_id?,
 * reasoning_level?}` and `config.harness_auth_secrets`, on runs, schedules, automations and
 * environments, and in a skill's front matter.
 *
 * Decisions (docs/harnesses.md):
 * - `type` is `oz` (the service's own harness: the environment's harness command, else the
 *   configured default; the scripted agent out of the box), `claude`, `codex`, `gemini` or
 *   `opencode`. No harness means `oz`.
 * - Precedence, field by field: the run's configuration, then the skill's front matter, then the
 *   environment's configuration (a `model_id` or `reasoning_level` only from a source naming the
 *   same harness type). `model_id` inside the harness wins over the configuration's
 *   `model_id`; `reasoning_level` is `low`, `medium` or `high`.
 * - The agent gets one secret: the auth secret of its harness, a team secret named by
 *   `harness_auth_secrets.<type>_auth_secret_name`, else the harness's conventional name
 *   (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`, `OPENCODE_API_KEY`). Claude Code,
 *   Codex and the Gemini CLI need one (a run without it is a 400 at create; FAILED
 *   `integration_not_configured` when it is gone by the time the run starts); opencode runs
 *   without one (a local model server may need no key).
 * - Naming a secret other than the conventional one is for team admins (403 otherwise, as for
 *   secrets in inline MCP servers): a member could otherwise hand any team secret to an agent it
 *   steers. Members use the conventional names, or an environment or skill that names another.
 */
import { Effect, Option, Schema } from "effect"
import type { Viewer } from "./Access.js"
import { NonBlankString, optionalInput, unionMessage } from "./Common.js"
import { InvalidRequest, NotAuthorized } from "./Errors.js"
import { SecretName } from "./Secret.js"
import type { SecretStore } from "../ports/SecretStore.js"

/** Every harness type, `oz` first. */
export const HARNESS_TYPES = ["oz", "claude", "codex", "gemini", "opencode"] as const

/** A harness type. */
export const HarnessType = Schema.Literal(...HARNESS_TYPES).annotations({
  identifier: "HarnessType",
  message: unionMessage(`must be one of ${HARNESS_TYPES.join(", ")}`)
})
export type HarnessType = typeof HarnessType.Type

/** The harnesses that run an agent CLI (every type but `oz`). */
export type CliHarnessType = Exclude<HarnessType, "oz">

/** How hard the model thinks, where the CLI can be told. */
export const ReasoningLevel = Schema.Literal("low", "medium", "high").annotations({
  identifier: "ReasoningLevel",
  message: unionMessage("must be one of low, medium, high")
})
export type ReasoningLevel = typeof ReasoningLevel.Type

/** `config.harness`. */
export const HarnessConfig = Schema.Struct({
  type: HarnessType,
  model_id: optionalInput(NonBlankString.pipe(Schema.maxLength(200))),
  reasoning_level: optionalInput(ReasoningLevel)
}).annotations({ identifier: "HarnessConfig" })
export type HarnessConfig = typeof HarnessConfig.Type

/** `config.harness_auth_secrets`: the team secret each harness authenticates with. */
export const HarnessAuthSecrets = Schema.Struct({
  claude_auth_secret_name: optionalInput(SecretName),
  codex_auth_secret_name: optionalInput(SecretName),
  gemini_auth_secret_name: optionalInput(SecretName),
  opencode_auth_secret_name: optionalInput(SecretName)
}).annotations({ identifier: "HarnessAuthSecrets" })
export type HarnessAuthSecrets = typeof HarnessAuthSecrets.Type

/** The conventional auth secret of each CLI harness, used when none is named. */
export const CONVENTIONAL_AUTH_SECRET: Readonly<Record<CliHarnessType, SecretName>> = {
  claude: "ANTHROPIC_API_KEY" as SecretName,
  codex: "OPENAI_API_KEY" as SecretName,
  gemini: "GEMINI_API_KEY" as SecretName,
  opencode: "OPENCODE_API_KEY" as SecretName
}

/** Whether a harness cannot run without its auth secret. */
export const needsAuthSecret = (type: CliHarnessType): boolean => type !== "opencode"

/** The field of `harness_auth_secrets` for a harness type. */
export const authSecretField = (type: CliHarnessType) => `${type}_auth_secret_name` as const

/** The auth secret a harness uses: the one named, else the conventional one (and whether it was named). */
export const authSecretOf = (
  type: CliHarnessType,
  secrets: HarnessAuthSecrets | undefined
): { readonly name: SecretName; readonly named: boolean } => {
  const named = secrets?.[authSecretField(type)]
  return named === undefined ? { name: CONVENTIONAL_AUTH_SECRET[type], named: false } : { name: named, named: true }
}

/** Where a run's harness settings come from, highest precedence first. */
export interface HarnessSources {
  readonly harness?: HarnessConfig | undefined
  readonly harness_auth_secrets?: HarnessAuthSecrets | undefined
}

/** A run's harness settings, each omitted when no source sets it. */
export interface ResolvedHarness {
  readonly harness?: HarnessConfig
  readonly harness_auth_secrets?: HarnessAuthSecrets
}

/**
 * The harness and auth secrets of a run: field by field, the first source that sets it (the run's
 * configuration, then the skill, then the environment). Absent when no source sets any.
 */
export const resolveHarness = (sources: ReadonlyArray<HarnessSources | undefined>): ResolvedHarness => {
  const harnesses = sources.flatMap((s) => (s?.harness === undefined ? [] : [s.harness]))
  const chosen = harnesses[0]
  // A model or reasoning level of another harness type does not apply.
  const same = harnesses.filter((h) => h.type === chosen?.type)
  const model_id = same.find((h) => h.model_id !== undefined)?.model_id
  const reasoning_level = same.find((h) => h.reasoning_level !== undefined)?.reasoning_level
  const harness: HarnessConfig | undefined = chosen === undefined
    ? undefined
    : {
      type: chosen.type,
      ...(model_id === undefined ? {} : { model_id }),
      ...(reasoning_level === undefined ? {} : { reasoning_level })
    }
  const auth: Partial<Record<keyof HarnessAuthSecrets, SecretName>> = {}
  for (const key of Object.keys(HarnessAuthSecrets.fields) as Array<keyof HarnessAuthSecrets>) {
    const name = sources.find((s) => s?.harness_auth_secrets?.[key] !== undefined)?.harness_auth_secrets?.[key]
    if (name !== undefined) auth[key] = name
  }
  return {
    ...(harness === undefined ? {} : { harness }),
    ...(Object.keys(auth).length === 0 ? {} : { harness_auth_secrets: auth })
  }
}

const HARNESS_LABELS: Readonly<Record<CliHarnessType, string>> = {
  claude: "Claude Code (an Anthropic API key)",
  codex: "Codex (an OpenAI API key)",
  gemini: "Gemini CLI (a Gemini API key)",
  opencode: "opencode (its provider's API key)"
}

/**
 * Refuses (403) a secret named in `harness_auth_secrets` other than the harness's conventional
 * one, unless the caller is a team admin. `prefix` is the path of the configuration in the body.
 */
export const checkAuthSecretNames = (viewer: Viewer, requested: HarnessAuthSecrets | undefined, prefix: string) =>
  Effect.gen(function*() {
    if (viewer.role === "admin") return
    for (const type of HARNESS_TYPES) {
      if (type === "oz") continue
      const name = requested?.[authSecretField(type)]
      if (name !== undefined && name !== CONVENTIONAL_AUTH_SECRET[type]) {
        return yield* new NotAuthorized({
          message: `${prefix}.harness_auth_secrets.${authSecretField(type)}: only team admins may name a secret other than ` +
            `${CONVENTIONAL_AUTH_SECRET[type]} for ${type}; use that name, or an environment a team admin set up`
        })
      }
    }
  })

/**
 * The secret a run's agent CLI is given when only team admins may hand it to an agent (one other
 * than its harness's conventional name); none otherwise.
 */
export const adminOnlyAuthSecretOf = (config: HarnessSources): SecretName | undefined => {
  const type = config.harness?.type
  if (type === undefined || type === "oz") return undefined
  const secret = authSecretOf(type, config.harness_auth_secrets)
  return secret.named && secret.name !== CONVENTIONAL_AUTH_SECRET[type] ? secret.name : undefined
}

/**
 * Checks a run's harness settings at create: the secrets the request itself names may be named by
 * the caller (403 otherwise), and the auth secret the run will use exists in the team (400
 * otherwise, naming the field and what to do).
 */
export const checkHarnessAuth = (
  secrets: SecretStore["Type"],
  viewer: Viewer,
  requested: HarnessAuthSecrets | undefined,
  resolved: HarnessSources
) =>
  Effect.gen(function*() {
    yield* checkAuthSecretNames(viewer, requested, "config")
    const type = resolved.harness?.type
    if (type === undefined || type === "oz") return
    const secret = authSecretOf(type, resolved.harness_auth_secrets)
    if (!secret.named && !needsAuthSecret(type)) return
    if (Option.isSome(yield* secrets.get(viewer.team_uid, secret.name))) return
    return yield* InvalidRequest.forField(
      `config.harness_auth_secrets.${authSecretField(type)}`,
      `the team has no secret ${secret.name} for ${HARNESS_LABELS[type]}: store it with PUT /agent/secrets/${secret.name}` +
        (secret.named ? "" : " or name another team secret here")
    )
  })
