/**
 * Colour (ANSI escape codes, as `@effect/cli` renders help and errors) only where it is wanted:
 * on a terminal, unless `NO_COLOR` is set to anything (https://no-color.org). Piped into a file
 * or `less`, the text is plain.
 */
import { Console, Effect } from "effect"
import { stripVTControlCharacters } from "node:util"

/** Whether output to `stream` may be coloured, given the environment. */
export const wantsColour = (stream: { readonly isTTY?: boolean | undefined }, env: Readonly<Record<string, string | undefined>>): boolean =>
  stream.isTTY === true && (env["NO_COLOR"] ?? "") === ""

const plain = (parts: ReadonlyArray<unknown>) => parts.map((part) => (typeof part === "string" ? stripVTControlCharacters(part) : part))

/** Runs `effect` with a console that writes its text without escape codes. */
export const withoutColour = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Console.consoleWith((console) =>
    Effect.withConsole(effect, {
      ...console,
      log: (...parts) => console.log(...plain(parts)),
      error: (...parts) => console.error(...plain(parts)),
      unsafe: {
        ...console.unsafe,
        log: (...parts) => console.unsafe.log(...plain(parts)),
        error: (...parts) => console.unsafe.error(...plain(parts))
      }
    }))
