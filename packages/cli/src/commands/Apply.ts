/**
 * `agent-runs apply DIR --server URL --token TOKEN [--team UID] [--dry-run]`: applies the
 * definitions directory DIR (docs/definitions.md) to a team through the HTTP API. Prints one line
 * per file (created, connected, updated with the keys that changed, or unchanged) and a summary; on errors
 * prints them (each naming the file and the key) on stderr, applies nothing, and fails, so the
 * process exits non-zero. `--server`, `--token` and `--team` default to `AGENT_RUNS_URL`,
 * `AGENT_RUNS_TOKEN` and `AGENT_RUNS_TEAM`.
 */
import { Args, Command, Options } from "@effect/cli"
import { Definitions, DefinitionsApplier } from "@agent-runs/core"
import { Console, Effect } from "effect"
import * as DefinitionsDirectory from "../DefinitionsDirectory.js"
import * as Failure from "../Failure.js"
import { httpTarget } from "../HttpTarget.js"
import * as Connection from "./Connection.js"

const dir = Args.directory({ name: "DIR" }).pipe(
  Args.withDescription("the definitions directory: github.yaml, webhooks/<name>.yaml, automations/<name>.yaml and outbound-webhooks/<name>.yaml")
)

const server = Connection.server
const token = Connection.token("an API token of a team admin")
const team = Connection.team("apply to")

const dryRun = Options.boolean("dry-run").pipe(
  Options.withDescription("check everything and print what would change, changing nothing")
)

/** The closing line: how many of each. */
const summary = (outcomes: ReadonlyArray<Definitions.Outcome>, isDryRun: boolean): string => {
  const count = (action: Definitions.Outcome["action"]) => outcomes.filter((o) => o.action === action).length
  const [created, updated] = isDryRun ? ["to create", "to update"] : ["created", "updated"]
  return `${count("created")} ${created}, ${count("updated")} ${updated}, ${count("unchanged")} unchanged`
}

export const applyCommand = Command.make(
  "apply",
  { dir, server, token, team, dryRun },
  (options) =>
    Effect.gen(function*() {
      const files: ReadonlyArray<Definitions.DefinitionFile> = yield* DefinitionsDirectory.read(options.dir)
      const target = yield* httpTarget({ server: options.server, token: options.token, team: options.team })
      const [run, describe] = options.dryRun
        ? [DefinitionsApplier.dryRun, Definitions.describePlanned] as const
        : [DefinitionsApplier.apply, Definitions.describeOutcome] as const
      const outcomes = yield* run(target, files)
      for (const outcome of outcomes) yield* Console.log(describe(outcome))
      yield* Console.log(summary(outcomes, options.dryRun) + (options.dryRun ? " (dry run: nothing changed)" : ""))
    }).pipe(
      // The errors (one per file and key) are printed as they are, line by line.
      Effect.tapError((error) => Console.error(error.message)),
      // Exit 4 when the server refused the token (also when it refused a write midway).
      Effect.mapError((error) =>
        new Failure.Reported({
          exitCode: Failure.exitCodeOf(error._tag === "DefinitionsApplyFailed" ? error.cause : error)
        })
      )
    )
).pipe(
  Command.withDescription(
    "Apply a definitions directory to a team: connect it to GitHub, create and update webhooks, automations and outbound webhooks " +
      "so that they match the files (nothing is deleted). Applying the same files again changes nothing."
  )
)
