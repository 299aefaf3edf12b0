/** The options every command that talks to a server shares: where it is, the token, the team. */
import { Options } from "@effect/cli"
import { Config } from "effect"

/** `--server URL` (or `$AGENT_RUNS_URL`). */
export const server = Options.text("server").pipe(
  Options.withFallbackConfig(Config.string("AGENT_RUNS_URL")),
  Options.withDescription("the server's base URL, e.g. http://127.0.0.1:8080 (default: $AGENT_RUNS_URL)")
)

/** `--token TOKEN` (or `$AGENT_RUNS_TOKEN`); `who` says whose token the command needs. */
export const token = (who: string) =>
  Options.redacted("token").pipe(
    Options.withFallbackConfig(Config.redacted("AGENT_RUNS_TOKEN")),
    Options.withDescription(`${who} (default: $AGENT_RUNS_TOKEN)`)
  )

/** `--team UID` (or `$AGENT_RUNS_TEAM`), optional; `purpose` completes "the uid of the team to …". */
export const team = (purpose: string) =>
  Options.text("team").pipe(
    Options.withFallbackConfig(Config.string("AGENT_RUNS_TEAM")),
    Options.optional,
    Options.withDescription(`the uid of the team to ${purpose} (default: $AGENT_RUNS_TEAM, else the token's first team)`)
  )
