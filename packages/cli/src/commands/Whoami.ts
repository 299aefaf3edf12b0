/**
 * `agent-runs whoami [--json]`: who the token in use is (`GET /agent/me`): the principal, whether
 * it is an instance administrator, the token (name, id, when it expires, the team and role it is
 * limited to) and the teams it may act in with its role in each, the default one marked.
 *
 * Decisions:
 * - The expiry warning (TokenExpiry.ts) comes from the server's answer, not from a profile's saved
 *   `expires_at`: the server knows the token, a profile may be stale. So this command resolves the
 *   client without the profile's warning (`apiClientLayer`) and prints at most one warning line.
 * - `--json` prints the API's answer as it is, for scripts.
 */
import { Command, Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import { Identity } from "@agent-runs/core"
import { Console, Effect, Schema } from "effect"
import * as Format from "../Format.js"
import * as Connection from "./Connection.js"

const json = Options.boolean("json").pipe(Options.withDescription("print JSON (the API's answer) instead of text"))

/** The team a token is limited to, by name when the caller is in it. */
const teamName = (me: Identity.MeResponse, uid: string): string => {
  const team = me.teams.find((t) => t.uid === uid)
  return team === undefined ? uid : `${team.name} (${uid})`
}

/** The token's lines: none for an agent's run token. */
const tokenLines = (me: Identity.MeResponse): Array<[string, string]> => {
  const token = me.token
  if (token === null) return [["token", "a run token (an agent's)"]]
  return [
    ["token", token.name === null ? token.token_id : `${token.name} (${token.token_id})`],
    ["expires", token.expires_at === null ? "never" : Format.date(token.expires_at)],
    ["limited to team", token.team_uid === null ? "no" : teamName(me, token.team_uid)],
    ["max role", token.max_role ?? "none"]
  ]
}

/** `GET /agent/me` as text: `key: value` lines, then the teams as a table. */
export const describe = (me: Identity.MeResponse): string => {
  const lines: Array<[string, string]> = [
    ["principal", `${me.principal.display_name} (${me.principal.type} ${me.principal.uid})`],
    ["instance administrator", me.instance_admin ? "yes" : "no"],
    ...tokenLines(me)
  ]
  const width = Math.max(...lines.map(([key]) => key.length)) + 1
  const teams = me.teams.length === 0 ? "in no team" : Format.table(
    ["TEAM UID", "NAME", "ROLE", "DEFAULT"],
    me.teams.map((t) => [t.uid, t.name, t.role, t.uid === me.default_team_uid ? "yes" : ""])
  )
  const more = me.teams_truncated ? `\n(the first ${me.teams.length} teams)` : ""
  return [...lines.map(([key, value]) => `${`${key}:`.padEnd(width)} ${value}`), "", teams + more].join("\n")
}

export const whoamiCommand = Command.make("whoami", { ...Connection.options, json }, (options) =>
  Effect.gen(function*() {
    const client = yield* AgentRunsClient.AgentRunsClient
    const me = yield* client.identity.me({ headers: {} })
    yield* Console.log(options.json ? JSON.stringify(Schema.encodeSync(Identity.MeResponse)(me)) : describe(me))
    const expiresAt = me.token?.expires_at ?? null
    if (expiresAt !== null) yield* Connection.warnOfExpiry(Connection.tokenSource(options), expiresAt)
  }).pipe(Effect.provide(Connection.apiClientLayer(options)))).pipe(
    Command.withDescription(
      "Who the token is: the principal, its teams and roles, and the token's expiry and limits (GET /agent/me); " +
        "warns when the token expires within 7 days."
    )
  )
