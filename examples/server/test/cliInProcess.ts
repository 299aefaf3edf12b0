/** The `agent-runs` command line run in the test's own process, as main.ts runs it. */
import { Cli } from "@agent-runs/cli"
import { ConfigProvider, type Console, Effect } from "effect"

export interface CliRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The lines printed, as a text. */
const asText = (printed: ReadonlyArray<string>) => printed.map((line) => `${line}\n`).join("")

/**
 * Runs `agent-runs ARGS` in this process: the CLI's code as main.ts runs it (`Cli.main`), printing
 * into a console of its own (`log` as stdout, `error` as stderr), with no AGENT_RUNS_* variables.
 */
export const inProcess = async (args: ReadonlyArray<string>): Promise<CliRun> => {
  const stdout: Array<string> = []
  const stderr: Array<string> = []
  const exit = await Effect.runPromiseExit(
    Effect.flatMap(Effect.console, (base) => {
      const capturing: Console.Console = {
        ...base,
        log: (...parts) => Effect.sync(() => void stdout.push(parts.join(" "))),
        error: (...parts) => Effect.sync(() => void stderr.push(parts.join(" "))),
        unsafe: {
          ...base.unsafe,
          log: (...parts) => void stdout.push(parts.join(" ")),
          error: (...parts) => void stderr.push(parts.join(" "))
        }
      }
      return Cli.main(["node", "agent-runs", ...args]).pipe(Effect.withConsole(capturing))
    }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
  )
  return { code: Cli.exitCode(exit), stdout: asText(stdout), stderr: asText(stderr) }
}
