/**
 * The options every command that talks to a server shares: where it is, the token, the team. Each
 * falls back to its environment variable, then to the saved profile (Profiles.ts, `agent-runs login`).
 *
 * Resolving the connection (`clientLayer`) prints one warning line on stderr when the token in use
 * is a profile's whose `expires_at` is within 7 days or past (TokenExpiry.ts); nothing else is
 * printed, and the command goes on (an expired token is then refused by the server, exit 4).
 */
import { Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import { Clock, Console, DateTime, Effect, Layer, Option, Redacted } from "effect"
import * as Profiles from "../Profiles.js"
import * as TokenExpiry from "../TokenExpiry.js"

/** `--server URL` (or `$AGENT_RUNS_URL`, or the profile's). */
export const server = Options.text("server").pipe(
  Options.withFallbackConfig(Profiles.serverConfig),
  Options.withDescription(
    "the server's base URL, e.g. http://127.0.0.1:8080 (default: $AGENT_RUNS_URL, else the profile's; see login)"
  )
)

/** `--token TOKEN` (or `$AGENT_RUNS_TOKEN`, or the profile's); `who` says whose token the command needs. */
export const token = (who: string) =>
  Options.redacted("token").pipe(
    Options.withFallbackConfig(Profiles.tokenConfig),
    Options.withDescription(`${who} (default: $AGENT_RUNS_TOKEN, else the profile's; see login)`)
  )

/** `--team UID` (or `$AGENT_RUNS_TEAM`, or the profile's), optional; `purpose` completes "the uid of the team to …". */
export const team = (purpose: string) =>
  Options.text("team").pipe(
    Options.withFallbackConfig(Profiles.teamConfig),
    Options.optional,
    Options.withDescription(
      `the uid of the team to ${purpose} (default: $AGENT_RUNS_TEAM, else the profile's, else the token's first team)`
    )
  )

/** The three connection options, for the commands that call the API as a team member. */
export const options = {
  server,
  token: token("an API token"),
  team: team("act in")
}

/** Where the server is and who calls it, as the options parsed it. */
export interface ConnectionOptions {
  readonly server: string
  readonly token: Redacted.Redacted<string>
  readonly team: Option.Option<string>
}

const sourceOf = (used: ReturnType<typeof Profiles.inUse>): TokenExpiry.TokenSource =>
  used === undefined
    ? { whose: "this token", remedy: "ask for a new one" }
    : { whose: `the token of profile ${JSON.stringify(used.name)}`, remedy: "run agent-runs login again" }

/** Whose token the connection uses, as a warning names it: the current profile's, or "this token". */
export const tokenSource = (connection: ConnectionOptions): TokenExpiry.TokenSource =>
  sourceOf(Profiles.inUse(Redacted.value(connection.token)))

/** Prints the warning line when `expiresAt` is within 7 days or past (the time from `Clock`). */
export const warnOfExpiry = (source: TokenExpiry.TokenSource, expiresAt: DateTime.Utc): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const line = TokenExpiry.warning(source, expiresAt, DateTime.unsafeMake(now))
    return line === undefined ? Effect.void : Console.error(line)
  })

/** The warning of the profile in use, from its saved `expires_at` (none without one, or with one that is no date). */
export const warnOfProfileExpiry = (connection: ConnectionOptions): Effect.Effect<void> =>
  Effect.suspend(() => {
    const used = Profiles.inUse(Redacted.value(connection.token))
    const expiresAt = used?.profile.expires_at === undefined ? Option.none() : DateTime.make(used.profile.expires_at)
    return Option.match(expiresAt, { onNone: () => Effect.void, onSome: (at) => warnOfExpiry(sourceOf(used), at) })
  })

/** The Effect client (`@agent-runs/client`) on `fetch` for a connection, without any warning. */
export const apiClientLayer = (connection: ConnectionOptions): Layer.Layer<AgentRunsClient.AgentRunsClient> =>
  AgentRunsClient.layerFetch({
    url: connection.server,
    token: connection.token,
    ...Option.match(connection.team, { onNone: () => ({}), onSome: (teamUid) => ({ teamUid }) })
  })

/** The client for a connection, after the warning of the profile in use when its token expires soon. */
export const clientLayer = (connection: ConnectionOptions): Layer.Layer<AgentRunsClient.AgentRunsClient> =>
  Layer.merge(apiClientLayer(connection), Layer.effectDiscard(warnOfProfileExpiry(connection)))
