/**
 * `agent-runs tokens list|create|revoke`: a team admin's service-account tokens through the HTTP API
 * (`/agent/team/service-accounts/{uid}/tokens`, `/agent/team/tokens/{id}`; docs/reference/access.md,
 * "Team admins"), in the team of the connection.
 *
 * Decisions:
 * - `create` prints the token alone on stdout (`TOKEN=$(agent-runs tokens create …)`) and its id on
 *   stderr: it is shown this once. The server limits it to the team whatever is asked.
 * - `--expires-at` is an RFC 3339 time, checked before anything is sent (a usage error otherwise);
 *   the server refuses one that is not in the future (400 naming `expires_at`).
 */
import { Args, Command, Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import { Identity, Ids } from "@agent-runs/core"
import { Console, DateTime, Effect, Option, Schema } from "effect"
import * as Failure from "../Failure.js"
import * as Format from "../Format.js"
import * as Connection from "./Connection.js"
import * as IdArgs from "./Ids.js"

const json = Options.boolean("json").pipe(Options.withDescription("print JSON (the API's answer) instead of text"))
const accountArg = Args.text({ name: "SERVICE_ACCOUNT_UID" }).pipe(Args.withDescription("the uid of a service account of the team"))
const decodeAccount = IdArgs.decode(Ids.PrincipalUid, "service account uid")
const decodeTokenId = IdArgs.decode(Ids.TokenId, "token id")

const create = {
  name: Options.text("name").pipe(Options.optional, Options.withDescription("a name for people, e.g. ci")),
  expiresAt: Options.text("expires-at").pipe(
    Options.optional,
    Options.withDescription("when the token stops working, RFC 3339 (default: never)")
  ),
  maxRole: Options.choice("max-role", Identity.Role.literals).pipe(
    Options.optional,
    Options.withDescription("the most the token may do in the team (default: the account's role)")
  )
}

/** `--expires-at` as a time, or a usage error. */
const expiryOf = (text: Option.Option<string>) =>
  Option.match(text, {
    onNone: () => Effect.succeed(undefined),
    onSome: (value) =>
      Option.match(DateTime.make(value), {
        onNone: () => Effect.fail(new Failure.UsageError({ message: `invalid --expires-at "${value}": not an RFC 3339 time` })),
        onSome: (at) => Effect.succeed(DateTime.toUtc(at))
      })
  })

const tokenRow = (t: Identity.TokenInfo): Array<string> => [
  t.token_id,
  t.name ?? "-",
  Format.date(t.created_at),
  Format.date(t.expires_at),
  Format.date(t.last_used_at),
  t.max_role ?? "-",
  t.revoked_at === null ? "" : `revoked ${Format.date(t.revoked_at)}`
]

const list = Command.make("list", { ...Connection.options, account: accountArg, json }, (options) =>
  Effect.gen(function*() {
    const principal_uid = yield* decodeAccount(options.account)
    const client = yield* AgentRunsClient.AgentRunsClient
    const { tokens } = yield* client.team.listServiceAccountTokens({ headers: {}, path: { principal_uid } })
    if (options.json) {
      return yield* Effect.forEach(tokens, (t) => Console.log(JSON.stringify(Schema.encodeSync(Identity.TokenInfo)(t))), { discard: true })
    }
    yield* Console.log(
      tokens.length === 0 ? "no tokens" : Format.table(
        ["TOKEN ID", "NAME", "CREATED", "EXPIRES", "LAST USED", "MAX ROLE", "REVOKED"],
        tokens.map(tokenRow)
      )
    )
  }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(
    Command.withDescription("List a service account's tokens limited to the team, newest first (team admins).")
  )

const createCommand = Command.make("create", { ...Connection.options, account: accountArg, ...create, json }, (options) =>
  Effect.gen(function*() {
    const principal_uid = yield* decodeAccount(options.account)
    const expires_at = yield* expiryOf(options.expiresAt)
    const client = yield* AgentRunsClient.AgentRunsClient
    const payload = new Identity.CreateTokenRequest({
      ...Option.match(options.name, { onNone: () => ({}), onSome: (name) => ({ name }) }),
      ...(expires_at === undefined ? {} : { expires_at }),
      ...Option.match(options.maxRole, { onNone: () => ({}), onSome: (max_role) => ({ max_role }) })
    })
    const created = yield* client.team.createServiceAccountToken({ headers: {}, path: { principal_uid }, payload })
    if (options.json) return yield* Console.log(JSON.stringify(Schema.encodeSync(Identity.CreateTokenResponse)(created)))
    yield* Console.log(created.token)
    yield* Console.error(`created token ${created.token_id}, limited to the team; it is not shown again`)
  }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(
    Command.withDescription("Create a token for a service account of the team, always limited to the team; prints it once.")
  )

const revoke = Command.make(
  "revoke",
  { ...Connection.options, tokenId: Args.text({ name: "TOKEN_ID" }).pipe(Args.withDescription("the token's id")) },
  (options) =>
    Effect.gen(function*() {
      const token_id = yield* decodeTokenId(options.tokenId)
      const client = yield* AgentRunsClient.AgentRunsClient
      yield* client.team.revokeTeamToken({ headers: {}, path: { token_id } })
      yield* Console.log(`revoked ${token_id}`)
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("Revoke a token limited to the team, at once (team admins)."))

/** `agent-runs tokens …`. */
export const tokensCommand = Command.make("tokens").pipe(
  Command.withDescription("A team admin's service-account tokens: list, create (limited to the team), revoke."),
  Command.withSubcommands([list, createCommand, revoke])
)
