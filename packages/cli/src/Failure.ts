/**
 * How `agent-runs` ends: the exit code of every failure and the one line it prints, in one place
 * (main.ts applies them to whatever the command failed with).
 *
 * | Code | When |
 * |---|---|
 * | 0 | done (`runs watch`: the run SUCCEEDED); `serve` and `worker` stopped by SIGINT/SIGTERM |
 * | 1 | the API refused the request or could not be reached; any other failure |
 * | 2 | a usage error: a missing or invalid option or argument (`@effect/cli` has printed it) |
 * | 4 | the token was refused: 401 authentication_required, 403 not_authorized / feature_not_available |
 * | 5 | `runs watch`: the run FAILED or ended in ERROR |
 * | 6 | `runs watch`: the run was CANCELLED |
 * | 7 | `runs watch`: the run is BLOCKED |
 * | 130 | `runs watch`, `runs logs -f`: stopped by SIGINT/SIGTERM before the run ended |
 *
 * A failure prints one line on stderr, `agent-runs: <message>` (an API error's message is the
 * problem body's `error`), unless it was printed already (usage errors, `Reported`).
 */
import { ValidationError } from "@effect/cli"
import { HttpClientError } from "@effect/platform"
import { Cause, Console, Data, Effect, Exit, Option, ParseResult } from "effect"

export const EXIT_OK = 0
export const EXIT_ERROR = 1
export const EXIT_USAGE = 2
export const EXIT_AUTH = 4
export const EXIT_RUN_FAILED = 5
export const EXIT_RUN_CANCELLED = 6
export const EXIT_RUN_BLOCKED = 7

/** A usage error found by a command itself (e.g. an empty prompt on stdin): exit 2. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/** A failure the command has printed already; the process exits with `exitCode`. */
export class Reported extends Data.TaggedError("Reported")<{ readonly exitCode: number }> {}

const AUTH_CODES: ReadonlySet<string> = new Set(["authentication_required", "not_authorized", "feature_not_available"])

/** The innermost message of an error's `cause` chain (fetch's "fetch failed" → "connect ECONNREFUSED …"). */
const rootCause = (cause: unknown): string | undefined => {
  let message: string | undefined
  for (let current = cause, depth = 0; current instanceof Error && depth < 10; current = current.cause, depth++) {
    if (current.message !== "") message = current.message
  }
  return message
}

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, " ").trim()

/** What a failure prints (without the `agent-runs: ` prefix), or none when it was printed already. */
export const messageOf = (error: unknown): Option.Option<string> => {
  if (ValidationError.isValidationError(error) || error instanceof Reported) return Option.none()
  if (HttpClientError.isHttpClientError(error)) {
    const url = error.request.url
    if (error._tag === "RequestError") {
      const reason = error.description ?? rootCause(error.cause) ?? error.reason
      return Option.some(oneLine(`could not reach ${url}: ${reason}`))
    }
    return Option.some(oneLine(`unexpected answer from ${url}: ${error.message}`))
  }
  if (ParseResult.isParseError(error)) {
    const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
    const first = issues[0]
    return Option.some(
      first === undefined
        ? oneLine(error.message)
        : oneLine(`${first.path.length > 0 ? `${first.path.join(".")}: ` : ""}${first.message}`)
    )
  }
  const message = (error as { readonly message?: unknown } | null)?.message
  return Option.some(oneLine(typeof message === "string" && message !== "" ? message : String(error)))
}

/** The exit code of a failure. */
export const exitCodeOf = (error: unknown): number => {
  if (error instanceof Reported) return error.exitCode
  if (error instanceof UsageError || ValidationError.isValidationError(error)) return EXIT_USAGE
  const code = (error as { readonly errorCode?: unknown } | null)?.errorCode
  if (typeof code === "string" && AUTH_CODES.has(code)) return EXIT_AUTH
  if (HttpClientError.isHttpClientError(error) && error._tag === "ResponseError") {
    if (error.response.status === 401 || error.response.status === 403) return EXIT_AUTH
  }
  return EXIT_ERROR
}

/** Prints the one line of a failure (or of a defect) on stderr. */
export const report = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  effect.pipe(
    Effect.tapErrorCause((cause) =>
      Option.match(Cause.failureOption(cause), {
        onSome: (error) =>
          Option.match(messageOf(error), { onNone: () => Effect.void, onSome: (line) => Console.error(`agent-runs: ${line}`) }),
        onNone: () =>
          Option.match(Cause.dieOption(cause), {
            onNone: () => Effect.void,
            onSome: (defect) => Console.error(`agent-runs: unexpected failure: ${oneLine(String(defect))}`)
          })
      })
    )
  )

/** The exit code of a program stopped by SIGINT/SIGTERM with nothing else failing. */
export const EXIT_INTERRUPTED = 130

/** What a stop by SIGINT/SIGTERM exits with: 0 (serve, worker: a normal end) unless a command said otherwise. */
let interruptExitCode = EXIT_OK

/**
 * Makes a stop by SIGINT/SIGTERM exit with `code`: for a command whose success means something
 * (`runs watch` exits 0 only when the run SUCCEEDED), an interrupted one must not look successful.
 */
export const exitOnInterrupt = (code: number): Effect.Effect<void> =>
  Effect.sync(() => {
    interruptExitCode = code
  })

/** `NodeRuntime.runMain`'s teardown: the exit code of how the program ended. */
export const teardown = <E, A>(exit: Exit.Exit<E, A>, onExit: (code: number) => void): void => {
  if (Exit.isSuccess(exit)) return onExit(EXIT_OK)
  if (Cause.isInterruptedOnly(exit.cause)) return onExit(interruptExitCode)
  onExit(Option.match(Cause.failureOption(exit.cause), { onNone: () => EXIT_ERROR, onSome: exitCodeOf }))
}
