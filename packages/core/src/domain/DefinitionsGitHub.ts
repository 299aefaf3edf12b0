/**
 * Definitions as code (Definitions.ts): `github.yaml`, the team's GitHub connection (GitHub.ts):
 * the file read into a definition, and the step that makes the team's connection match it.
 */
import { Schema } from "effect"
import type { JsonValue } from "./Common.js"
import { AppAuth, BaseUrl, ConnectGitHubRequest, GITHUB_COM, GitHubAuth, secretOf } from "./GitHub.js"
import type { GitHubConnection } from "./GitHub.js"
import { SecretName } from "./Secret.js"
import { GITHUB_AUTH_KEYS, GITHUB_KEYS } from "./DefinitionFiles.js"
import type { GitHubDefinition, Report } from "./DefinitionFiles.js"
import { kindOf } from "./DefinitionsYaml.js"
import { camel, decodeValue, isObject, oneOf, readMapping, required } from "./DefinitionsValues.js"

// ---------------------------------------------------------------------------------------------
// Reading github.yaml
// ---------------------------------------------------------------------------------------------

const AUTH_TYPES = ["token", "app"] as const
type AuthType = (typeof AUTH_TYPES)[number]

const AUTH_HINT = "token (with tokenSecret) or app (with appId, installationId and privateKeySecret)"

const authTypeOf = (value: JsonValue, report: Report): AuthType | undefined => {
  if (!isObject(value)) {
    report("auth", `must be a mapping with type ${AUTH_HINT}; got ${kindOf(value)}`)
    return undefined
  }
  const type = value["type"]
  if (type !== undefined && type !== null) return oneOf(AUTH_TYPES, type, "auth.type", report)
  report("auth.type", `is required: ${AUTH_HINT}`)
  return undefined
}

const parseAuth = (value: JsonValue | undefined, report: Report): GitHubAuth | undefined => {
  if (value === undefined) {
    report("auth", `is required: type ${AUTH_HINT}`)
    return undefined
  }
  const type = authTypeOf(value, report)
  const keys = type === undefined ? undefined : readMapping(value, "auth", GITHUB_AUTH_KEYS[type], report)
  if (keys === undefined) return undefined
  if (type === "token") {
    const tokenSecret = required(SecretName, keys["tokenSecret"], "auth.tokenSecret", report)
    return tokenSecret === undefined ? undefined : { type, token_secret: tokenSecret }
  }
  const appId = required(AppAuth.fields.app_id, keys["appId"], "auth.appId", report)
  const installationId = required(AppAuth.fields.installation_id, keys["installationId"], "auth.installationId", report)
  const privateKeySecret = required(SecretName, keys["privateKeySecret"], "auth.privateKeySecret", report)
  if (appId === undefined || installationId === undefined || privateKeySecret === undefined) return undefined
  return { type: "app", app_id: appId, installation_id: installationId, private_key_secret: privateKeySecret }
}

/** Reads `github.yaml`: `baseUrl` (default https://github.com) and `auth`, naming team secrets only. */
export const parseGitHub = (path: string, root: JsonValue, report: Report): GitHubDefinition | undefined => {
  const keys = readMapping(root, "", GITHUB_KEYS, report)
  if (keys === undefined) return undefined
  const baseUrl = keys["baseUrl"] === undefined ? GITHUB_COM : decodeValue(BaseUrl, keys["baseUrl"], "baseUrl", report)
  const auth = parseAuth(keys["auth"], report)
  return baseUrl === undefined || auth === undefined ? undefined : { path, baseUrl, auth }
}

// ---------------------------------------------------------------------------------------------
// Planning the connection
// ---------------------------------------------------------------------------------------------

/** The step of a plan for `github.yaml`: connect (or change the connection), or keep it. */
export type GitHubStep =
  | {
    readonly _tag: "ConnectGitHub"
    readonly definition: GitHubDefinition
    /** The connection it replaces; null when the team has none. */
    readonly current: GitHubConnection | null
    readonly request: ConnectGitHubRequest
    /** The file keys that change (none for a new connection). */
    readonly changed: ReadonlyArray<string>
  }
  | { readonly _tag: "KeepGitHub"; readonly definition: GitHubDefinition; readonly current: GitHubConnection }

/** The team secret a GitHub definition names, as `[file key, name]` (`auth.tokenSecret`, `GH_TOKEN`). */
export const gitHubSecretOf = (d: GitHubDefinition): readonly [string, SecretName] => {
  const [field, name] = secretOf(d.auth)
  return [camel(field), name]
}

/** The connection in a few words: `https://github.com, token secret GH_TOKEN`. */
export const describeConnection = (d: GitHubDefinition): string =>
  d.auth.type === "token"
    ? `${d.baseUrl}, token secret ${d.auth.token_secret}`
    : `${d.baseUrl}, app ${d.auth.app_id} installation ${d.auth.installation_id}, private key secret ${d.auth.private_key_secret}`

const sameAuth = Schema.equivalence(GitHubAuth)

/**
 * The step that makes the team's connection (`current`, null for none) match the definition, or
 * undefined when the secret it names has a problem (`secretProblem`, reported under its key).
 */
export const planGitHub = (
  d: GitHubDefinition,
  current: GitHubConnection | null,
  secretProblem: (name: SecretName) => string | undefined,
  report: Report
): GitHubStep | undefined => {
  const [key, name] = gitHubSecretOf(d)
  const problem = secretProblem(name)
  if (problem !== undefined) {
    report(key, problem)
    return undefined
  }
  const changed = current === null ? [] : [
    ...(current.base_url === d.baseUrl ? [] : ["baseUrl"]),
    ...(sameAuth(current.auth, d.auth) ? [] : ["auth"])
  ]
  if (current !== null && changed.length === 0) return { _tag: "KeepGitHub", definition: d, current }
  return {
    _tag: "ConnectGitHub",
    definition: d,
    current,
    changed,
    request: new ConnectGitHubRequest({ base_url: d.baseUrl, auth: d.auth })
  }
}
