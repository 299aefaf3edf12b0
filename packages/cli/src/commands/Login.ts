/**
 * `agent-runs login --server URL --token TOKEN [--team UID] [--profile NAME]`: checks the token
 * against the server (it lists one run), then saves the connection as a profile (Profiles.ts:
 * `$XDG_CONFIG_HOME/agent-runs/profiles.json`, mode 0600) that the connection options of every
 * command fall back to. The token is never printed.
 */
import { Command, Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import { Config, Console, Effect, Option, Redacted } from "effect"
import * as Profiles from "../Profiles.js"
import * as Connection from "./Connection.js"

const server = Options.text("server").pipe(
  Options.withFallbackConfig(Config.string("AGENT_RUNS_URL")),
  Options.withDescription("the server's base URL, e.g. http://127.0.0.1:8080 (default: $AGENT_RUNS_URL)")
)
const token = Options.redacted("token").pipe(
  Options.withFallbackConfig(Config.redacted("AGENT_RUNS_TOKEN")),
  Options.withDescription("the API token (default: $AGENT_RUNS_TOKEN)")
)
const team = Options.text("team").pipe(
  Options.optional,
  Options.withDescription("the uid of the team to act in (default: the token's first team)")
)
const profile = Options.text("profile").pipe(
  Options.withFallbackConfig(Config.string("AGENT_RUNS_PROFILE")),
  Options.withDefault(Profiles.DEFAULT_PROFILE),
  Options.withDescription(`the profile's name (default: $AGENT_RUNS_PROFILE, else "${Profiles.DEFAULT_PROFILE}")`)
)

export const loginCommand = Command.make("login", { server, token, team, profile }, (options) =>
  Effect.gen(function*() {
    const client = yield* AgentRunsClient.AgentRunsClient
    yield* client.listRunsPage({ limit: 1 })
    const file = Profiles.path()
    const url = AgentRunsClient.baseUrlOf(options.server)
    yield* Profiles.save(options.profile, {
      server: url,
      token: Redacted.value(options.token),
      ...Option.match(options.team, { onNone: () => ({}), onSome: (uid) => ({ team: uid }) })
    }, file)
    yield* Console.log(`logged in to ${url}: saved as profile "${options.profile}" in ${file}`)
  }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(
    Command.withDescription(
      "Check a token against a server and save them as a profile, which the other commands use when no --server, " +
        "--token or --team (nor AGENT_RUNS_URL, AGENT_RUNS_TOKEN, AGENT_RUNS_TEAM) is given; AGENT_RUNS_PROFILE picks it."
    )
  )
