/**
 * The options every command that talks to a server shares: where it is, the token, the team. Each
 * falls back to its environment variable, then to the saved profile (Profiles.ts, `agent-runs login`).
 */
import { Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import type { Layer, Redacted } from "effect"
import { Option } from "effect"
import * as Profiles from "../Profiles.js"

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

/** The Effect client (`@agent-runs/client`) on `fetch` for a connection. */
export const clientLayer = (connection: ConnectionOptions): Layer.Layer<AgentRunsClient.AgentRunsClient> =>
  AgentRunsClient.layerFetch({
    url: connection.server,
    token: connection.token,
    ...Option.match(connection.team, { onNone: () => ({}), onSome: (teamUid) => ({ teamUid }) })
  })
