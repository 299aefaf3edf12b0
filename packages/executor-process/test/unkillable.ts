/**
 * Test helpers for processes that will not die: one stuck in the kernel (state D, a hung file
 * system) outlives SIGKILL, and a real one needs a broken disk or FUSE. The executor learns of a
 * death only from the child's exit event and `/proc`, so losing the signals sent to the process
 * is the same to it.
 */
import { vi } from "@effect/vitest"
import { Effect, Logger, Option, Stream } from "effect"
import type { Executor } from "@agent-runs/core"

/** Loses every signal sent to the process `pid` or its group until `restore` (the signals of everything else go through). */
export const unkillable = (pid: number): { readonly restore: () => void } => {
  const kill = process.kill.bind(process)
  const spy = vi.spyOn(process, "kill").mockImplementation((target: number, signal?: string | number) =>
    Math.abs(target) === pid ? true : kill(target, signal))
  return { restore: () => spy.mockRestore() }
}

/** `effect`'s value and the messages of the warnings it logged (which are not printed). */
export const withWarnings = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<readonly [A, ReadonlyArray<string>], E, R> =>
  Effect.suspend(() => {
    const warnings: Array<string> = []
    const capture = Logger.make(({ logLevel, message }) => {
      if (logLevel._tag === "Warning") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
    })
    return Effect.map(Effect.provide(effect, Logger.replace(Logger.defaultLogger, capture)), (value) => [value, warnings] as const)
  })

/** Starts a node agent that prints its pid and then waits; gives the agent and the pid. */
export const startWaitingAgent = (sandbox: Executor.Sandbox) =>
  Effect.gen(function*() {
    const agent = yield* sandbox.start([process.execPath, "-e", "console.log(process.pid); setInterval(() => {}, 1000)"], {})
    const line = yield* agent.stdout.pipe(Stream.decodeText(), Stream.splitLines, Stream.runHead)
    return { agent, pid: Number(Option.getOrThrow(line)) }
  })
