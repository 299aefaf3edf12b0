/**
 * `agent-runs login --server URL (--token TOKEN | --sso [--no-browser]) [--team UID] [--profile NAME]`:
 * a token is checked against the server (`GET /agent/me`, which also says when it expires); with
 * `--sso` the user signs in with the server's OpenID Connect provider through the device flow
 * (DeviceSignIn.ts) and the session the server gives is the token. Either way the connection is
 * saved as a profile (Profiles.ts: `$XDG_CONFIG_HOME/agent-runs/profiles.json`, mode 0600) with
 * the token's `expires_at`, which the connection options of every command fall back to (and warn
 * of when it is near). The token is never printed.
 */
import { Command, Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import { Config, Console, DateTime, Effect, Option, Redacted } from "effect"
import { deviceSignIn } from "../DeviceSignIn.js"
import { UsageError } from "../Failure.js"
import * as Profiles from "../Profiles.js"
import * as Connection from "./Connection.js"

const server = Options.text("server").pipe(
  Options.withFallbackConfig(Config.string("AGENT_RUNS_URL")),
  Options.withDescription("the server's base URL, e.g. http://127.0.0.1:8080 (default: $AGENT_RUNS_URL)")
)
const token = Options.redacted("token").pipe(
  Options.withFallbackConfig(Config.redacted("AGENT_RUNS_TOKEN")),
  Options.optional,
  Options.withDescription("the API token (default: $AGENT_RUNS_TOKEN); or --sso")
)
const sso = Options.boolean("sso").pipe(
  Options.withDescription("sign in with the server's single sign-on (OpenID Connect) instead of a token: the device flow")
)
const noBrowser = Options.boolean("no-browser").pipe(
  Options.withDescription("with --sso: only print where to enter the code, do not open the browser")
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

/** The token and when it expires: the one given (checked with the server), or a new single sign-on session. */
const credentials = (options: {
  readonly server: string
  readonly token: Option.Option<Redacted.Redacted<string>>
  readonly sso: boolean
  readonly noBrowser: boolean
  readonly team: Option.Option<string>
}) =>
  Effect.gen(function*() {
    if (options.sso) {
      if (Option.isSome(options.token)) return yield* new UsageError({ message: "give either --token or --sso, not both" })
      const session = yield* deviceSignIn(AgentRunsClient.baseUrlOf(options.server), { openBrowser: !options.noBrowser })
      yield* Console.error(`signed in as ${session.principal.display_name} (${session.principal.uid})`)
      return { token: session.token, expires_at: session.expires_at }
    }
    if (Option.isNone(options.token)) return yield* new UsageError({ message: "give --token TOKEN (or AGENT_RUNS_TOKEN), or --sso" })
    const me = yield* Effect.flatMap(AgentRunsClient.AgentRunsClient, (client) => client.identity.me({ headers: {} })).pipe(
      Effect.provide(Connection.apiClientLayer({ server: options.server, token: options.token.value, team: options.team }))
    )
    const expiresAt = me.token?.expires_at ?? null
    return { token: Redacted.value(options.token.value), expires_at: expiresAt === null ? undefined : DateTime.formatIso(expiresAt) }
  })

export const loginCommand = Command.make("login", { server, token, sso, noBrowser, team, profile }, (options) =>
  Effect.gen(function*() {
    const { expires_at, token: saved } = yield* credentials(options)
    const file = Profiles.path()
    const url = AgentRunsClient.baseUrlOf(options.server)
    yield* Profiles.save(options.profile, {
      server: url,
      token: saved,
      ...Option.match(options.team, { onNone: () => ({}), onSome: (uid) => ({ team: uid }) }),
      ...(expires_at === undefined ? {} : { expires_at })
    }, file)
    yield* Console.log(`logged in to ${url}: saved as profile "${options.profile}" in ${file}`)
  })).pipe(
    Command.withDescription(
      "Check a token against a server, or sign in with its single sign-on (--sso), and save them as a profile, which the " +
        "other commands use when no --server, --token or --team (nor AGENT_RUNS_URL, AGENT_RUNS_TOKEN, AGENT_RUNS_TEAM) is " +
        "given; AGENT_RUNS_PROFILE picks it."
    )
  )
