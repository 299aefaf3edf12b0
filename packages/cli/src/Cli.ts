/**
 * The `agent-runs` command: one subcommand per task (`serve`, `apply`, `worker`, `image`, and the
 * API's everyday commands `login`, `whoami`, `runs`, `schedules`, `webhooks`, `outbound-webhooks`, `audit`, `tokens`, `budgets`, `spend`). Add a subcommand by writing it in `commands/` and listing it in `subcommands`.
 */
import { Command } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { Effect, type Exit } from "effect"
import { applyCommand } from "./commands/Apply.js"
import { auditCommand } from "./commands/Audit.js"
import { budgetsCommand, spendCommand } from "./commands/Budgets.js"
import { githubCommand } from "./commands/GitHub.js"
import { imageCommand } from "./commands/Image.js"
import { loginCommand } from "./commands/Login.js"
import { runsCommand } from "./commands/Runs.js"
import { schedulesCommand } from "./commands/Schedules.js"
import { serveCommand } from "./commands/Serve.js"
import { backupCommand, restoreCommand } from "./commands/Backup.js"
import { tokensCommand } from "./commands/Tokens.js"
import { webhooksCommand } from "./commands/Webhooks.js"
import { outboundWebhooksCommand } from "./commands/OutboundWebhooks.js"
import { whoamiCommand } from "./commands/Whoami.js"
import { workerCommand } from "./commands/Worker.js"
import * as Failure from "./Failure.js"
import * as Release from "@agent-runs/core/domain/Release"

/** The version `agent-runs --version` prints: the release's. */
export { VERSION } from "@agent-runs/core/domain/Release"

/** Every subcommand of `agent-runs`. */
export const subcommands = [
  serveCommand,
  backupCommand,
  restoreCommand,
  applyCommand,
  workerCommand,
  imageCommand,
  loginCommand,
  whoamiCommand,
  runsCommand,
  schedulesCommand,
  webhooksCommand,
  outboundWebhooksCommand,
  githubCommand,
  auditCommand,
  tokensCommand,
  budgetsCommand,
  spendCommand
] as const

/** `agent-runs` with its subcommands. */
export const command = Command.make("agent-runs").pipe(
  Command.withDescription("Agent Runs from the command line."),
  Command.withSubcommands(subcommands)
)

/** Runs the command line on `process.argv`-style arguments. */
export const run = Command.run(command, { name: "agent-runs", version: Release.VERSION })

/**
 * The command line as `agent-runs` runs it (main.ts), on `process.argv`-style arguments: a failure
 * prints its one line on stderr (Failure.ts). Tests run it in process too, with a console of their own.
 */
export const main = (argv: ReadonlyArray<string>) => run(argv).pipe(Failure.report, Effect.provide(NodeContext.layer))

/** The code the process exits with when `main` ended so. */
export const exitCode = (exit: Exit.Exit<unknown, unknown>): number => {
  let code = Failure.EXIT_ERROR
  Failure.teardown(exit, (c) => (code = c))
  return code
}
