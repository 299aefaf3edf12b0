/**
 * MCP servers of a run (`mcp_servers`; docs/skills.md): checked when the run is created,
 * resolved when it executes. The shapes themselves (`{command, args?, env?}`, `{url, headers?}`,
 * `{server_id}`) are decoded by `Run.McpServerConfig` with the request (a 400 naming the field).
 *
 * Decisions (docs/skills.md):
 * - Team secrets are referenced as `${{ secrets.NAME }}` inside `args` items, `env` values and
 *   `headers` values. The stored run keeps the references; the agent's start message carries the
 *   values, read from the team's secrets when the execution starts. No secret value is ever
 *   written into a run.
 * - A team-registered MCP server is a team secret named `MCP_SERVER_<server_id>` whose value is
 *   the JSON of a `{command, args?, env?}` or `{url, headers?}` configuration, which may itself
 *   reference team secrets. Only team admins manage secrets, so only they register servers; every
 *   member of the team may use them. There is no other registry.
 * - Forbidden (403 `not_authorized`, naming the field): a `server_id` not registered in the
 *   caller's team (unknown and foreign alike, so nothing leaks), and a secret reference in a
 *   configuration given inline by a caller who is not a team admin (members use secrets only
 *   through registered servers). Invalid (400, naming the field): an empty server name, a
 *   reference to a secret that does not exist (admins), a registered configuration that is not
 *   valid JSON of an accepted shape or names a missing secret.
 * - At execution, a secret or registered server deleted since the run was created fails the run's
 *   setup (`environment_setup_failed`, the message naming the server and the secret).
 */
import { Data, Effect, Either, Option, ParseResult, Redacted, Schema } from "effect"
import type { Viewer } from "./Access.js"
import { InvalidRequest, NotAuthorized } from "./Errors.js"
import type { TeamUid } from "./Ids.js"
import type { SecretStore } from "../ports/SecretStore.js"
import { McpHttpServer, McpStdioServer } from "./Run.js"
import type { McpServerConfig } from "./Run.js"
import type { SecretName } from "./Secret.js"

/** `${{ secrets.NAME }}`, spaces inside the braces optional. */
const SECRET_REFERENCE = /\$\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_]{0,127})\s*\}\}/g

/** The prefix of the team secrets that register MCP servers. */
export const REGISTERED_SERVER_PREFIX = "MCP_SERVER_"

const serverIdPattern = /^[A-Za-z0-9_]{1,117}$/

/** The team secret that registers the server `serverId`; undefined when no secret can be named so. */
export const registeredServerSecret = (serverId: string): SecretName | undefined =>
  serverIdPattern.test(serverId) ? (`${REGISTERED_SERVER_PREFIX}${serverId}` as SecretName) : undefined

/** A configuration an agent can start: stdio or HTTP. */
export type McpDirectServer = typeof McpStdioServer.Type | typeof McpHttpServer.Type

/** The secrets a text references, in order. */
export const secretNamesIn = (text: string): Array<SecretName> =>
  [...text.matchAll(SECRET_REFERENCE)].map((m) => m[1] as SecretName)

/** Every secret reference of a direct configuration, with the field (relative to the server) holding it. */
export const secretReferences = (server: McpDirectServer): Array<{ readonly field: string; readonly name: SecretName }> => {
  const out: Array<{ field: string; name: SecretName }> = []
  const scan = (field: string, text: string) => {
    for (const name of secretNamesIn(text)) out.push({ field, name })
  }
  if ("command" in server && server.command !== undefined) {
    for (const [i, arg] of (server.args ?? []).entries()) scan(`args[${i}]`, arg)
    for (const [k, v] of Object.entries(server.env ?? {})) scan(`env.${k}`, v)
  } else if ("url" in server && server.url !== undefined) {
    for (const [k, v] of Object.entries(server.headers ?? {})) scan(`headers.${k}`, v)
  }
  return out
}

/** Replaces each secret reference of a text by `lookup(name)` (pure). */
export const substituteSecrets = (text: string, lookup: (name: SecretName) => string): string =>
  text.replace(SECRET_REFERENCE, (_, name: string) => lookup(name as SecretName))

const mapValues = (record: Readonly<Record<string, string>>, f: (s: string) => string) =>
  Object.fromEntries(Object.entries(record).map(([k, v]) => [k, f(v)]))

/** The configuration with every secret reference replaced (pure). */
export const withSecrets = (server: McpDirectServer, lookup: (name: SecretName) => string): McpDirectServer => {
  const sub = (s: string) => substituteSecrets(s, lookup)
  if ("command" in server && server.command !== undefined) {
    const stdio = server as typeof McpStdioServer.Type
    return {
      command: stdio.command,
      ...(stdio.args === undefined ? {} : { args: stdio.args.map(sub) }),
      ...(stdio.env === undefined ? {} : { env: mapValues(stdio.env, sub) })
    }
  }
  const http = server as typeof McpHttpServer.Type
  return { url: http.url, ...(http.headers === undefined ? {} : { headers: mapValues(http.headers, sub) }) }
}

const decodeRegistered = Schema.decodeUnknownEither(
  Schema.parseJson(Schema.Union(McpStdioServer, McpHttpServer).annotations({
    message: () => "must be the JSON of {command, args?, env?} or {url, headers?}"
  }))
)

/** Parses the value of a registering secret: a direct configuration, or why not. */
export const parseRegistered = (value: string): Either.Either<McpDirectServer, string> =>
  Either.mapLeft(decodeRegistered(value), (e) => {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(e)[0]
    return issue === undefined ? "not valid" : `${issue.path.length > 0 ? `${issue.path.join(".")}: ` : ""}${issue.message}`
  })

/**
 * Checks the MCP servers of a run request of `viewer` (a run is resolved at
 * create: its MCP servers and permissions): registered servers exist in the team, secret references are allowed and exist.
 */
export const checkMcpServers = (
  secrets: SecretStore["Type"],
  viewer: Viewer,
  servers: Readonly<Record<string, McpServerConfig>> | undefined
) =>
  Effect.gen(function*() {
    for (const [name, server] of Object.entries(servers ?? {})) {
      const field = `config.mcp_servers.${name}`
      if (name.trim() === "") return yield* InvalidRequest.forField("config.mcp_servers", "a server name must not be blank")
      if ("server_id" in server && server.server_id !== undefined) {
        const secretName = registeredServerSecret(server.server_id)
        const value = secretName === undefined ? Option.none() : yield* secrets.get(viewer.team_uid, secretName)
        if (Option.isNone(value)) {
          return yield* new NotAuthorized({
            message: `${field}.server_id: no MCP server ${JSON.stringify(server.server_id)} is registered in this team ` +
              `(a warp_id is read as a server_id; register a server as the team secret MCP_SERVER_<server_id>)`
          })
        }
        const parsed = parseRegistered(Redacted.value(value.value))
        if (Either.isLeft(parsed)) {
          return yield* InvalidRequest.forField(
            `${field}.server_id`,
            `the registered configuration of ${server.server_id} is not valid: ${parsed.left}`
          )
        }
        for (const ref of secretReferences(parsed.right)) {
          if (Option.isNone(yield* secrets.get(viewer.team_uid, ref.name))) {
            return yield* InvalidRequest.forField(
              `${field}.server_id`,
              `the registered configuration of ${server.server_id} references the secret ${ref.name}, which does not exist`
            )
          }
        }
        continue
      }
      for (const ref of secretReferences(server as McpDirectServer)) {
        if (viewer.role !== "admin") {
          return yield* new NotAuthorized({
            message: `${field}.${ref.field}: only team admins may reference team secrets in an MCP server given inline; ` +
              `use a registered server (server_id)`
          })
        }
        if (Option.isNone(yield* secrets.get(viewer.team_uid, ref.name))) {
          return yield* InvalidRequest.forField(`${field}.${ref.field}`, `no team secret ${ref.name}`)
        }
      }
    }
  })

/** The MCP servers of a run could not be resolved at execution. */
export class McpResolutionFailed extends Data.TaggedError("McpResolutionFailed")<{ readonly message: string }> {}

/**
 * The MCP servers as the agent receives them: registered servers replaced by their configuration,
 * secret references by the team's values (read now).
 */
export const resolveMcpServers = (
  secrets: SecretStore["Type"],
  team: TeamUid,
  servers: Readonly<Record<string, McpServerConfig>> | undefined
) =>
  Effect.gen(function*() {
    const resolved: Record<string, McpDirectServer> = {}
    for (const [name, server] of Object.entries(servers ?? {})) {
      let direct: McpDirectServer
      if ("server_id" in server && server.server_id !== undefined) {
        const secretName = registeredServerSecret(server.server_id)
        const value = secretName === undefined ? Option.none() : yield* secrets.get(team, secretName)
        if (Option.isNone(value)) {
          return yield* new McpResolutionFailed({
            message: `MCP server ${name}: the registered server ${server.server_id} no longer exists`
          })
        }
        const parsed = parseRegistered(Redacted.value(value.value))
        if (Either.isLeft(parsed)) {
          return yield* new McpResolutionFailed({
            message: `MCP server ${name}: the registered configuration of ${server.server_id} is not valid: ${parsed.left}`
          })
        }
        direct = parsed.right
      } else {
        direct = server as McpDirectServer
      }
      const values = new Map<string, string>()
      for (const ref of secretReferences(direct)) {
        if (values.has(ref.name)) continue
        const value = yield* secrets.get(team, ref.name)
        if (Option.isNone(value)) {
          return yield* new McpResolutionFailed({ message: `MCP server ${name}: the team secret ${ref.name} no longer exists` })
        }
        values.set(ref.name, Redacted.value(value.value))
      }
      resolved[name] = withSecrets(direct, (n) => values.get(n) ?? "")
    }
    return resolved
  })
