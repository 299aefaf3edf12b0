/**
 * An executor whose agents run in-process, for tests of the execution engine on the TestClock (no
 * processes, no wall-clock sleeps). Each agent reads its start message, then follows the run's
 * prompt (a debug agent: its follow-ups), one line a step:
 * - `say TEXT`: prints a `message` event; `print TEXT`: prints TEXT as a raw line;
 * - `big N`: prints a line of N characters (not JSON);
 * - `sleep MS`: waits MS on the clock (a follow-up meanwhile is answered `got: MESSAGE`; a cancel
 *   message ends the agent, exit 0);
 * - `exit N`: exits with N (after the last line: 0);
 * - `deaf`: from then on takes nothing on its stdin: a message sent to it never gets there (a
 *   pipe it filled).
 * A continuation (its start message has history) follows its follow-ups instead of the prompt.
 * Other lines are said. `sandboxes` counts the sandboxes not yet released. A sandbox whose setup
 * commands include `exit 1` fails its setup (kept, for the caller to release or retain); one of the
 * Docker image `broken` is an executor failure.
 */
import { Deferred, Effect, Fiber, Layer, Queue, Ref, Stream } from "effect"
import type { StartMessage } from "../src/domain/Harness.js"
import { Executor, ExecutorError, SetupFailed } from "../src/ports/Executor.js"
import type { AgentProcess, Sandbox } from "../src/ports/Executor.js"
import type { ExecutionId, RunId } from "../src/domain/Ids.js"

const encoder = new TextEncoder()

/** The agent of one execution, started by the dispatcher's first message. */
const agentProcess = Effect.gen(function*() {
  const out = yield* Queue.unbounded<Uint8Array | null>()
  const inbox = yield* Queue.unbounded<unknown>()
  const exit = yield* Deferred.make<number>()
  let deaf = false
  const print = (line: string) => Queue.offer(out, encoder.encode(`${line}\n`))
  const program = Effect.gen(function*() {
    const start = (yield* Queue.take(inbox)) as StartMessage
    // A debug agent follows the follow-ups that started it; so does a continuation (it has
    // history), which without follow-ups says that it continued.
    const script = start.mode === "debug"
      ? start.followups.join("\n")
      : start.history.length > 0
      ? start.followups.length > 0 ? start.followups.join("\n") : `say continued after ${start.history.length} messages`
      : start.prompt
    for (const line of script.split("\n")) {
      const [word = "", ...rest] = line.split(" ")
      const arg = rest.join(" ")
      if (word === "say") yield* print(JSON.stringify({ type: "message", role: "assistant", text: arg }))
      else if (word === "print") yield* print(arg)
      else if (word === "exit") return Number(arg)
      else if (word === "deaf") deaf = true
      else if (word === "big") yield* print("x".repeat(Number(arg)))
      else if (word === "sleep") {
        // A cancel message while asleep ends the agent; a follow-up is answered.
        const cancelled = yield* Queue.take(inbox).pipe(
          Effect.tap((m) => {
            const message = m as { type?: string; message?: string }
            return message.type === "followup" ? print(JSON.stringify({ type: "message", role: "assistant", text: `got: ${message.message}` })) : Effect.void
          }),
          Effect.repeat({ until: (m) => (m as { type?: string }).type === "cancel" }),
          Effect.as(true),
          Effect.timeoutTo({ duration: `${Number(arg)} millis`, onSuccess: () => true, onTimeout: () => false })
        )
        if (cancelled) return 0
      } else yield* print(JSON.stringify({ type: "message", role: "assistant", text: line }))
    }
    return 0
  })
  const fiber = yield* program.pipe(
    Effect.flatMap((code) => Deferred.succeed(exit, code)),
    Effect.ensuring(Queue.offer(out, null)),
    Effect.fork
  )
  const process: AgentProcess = {
    stdout: Stream.fromQueue(out).pipe(Stream.takeWhile((c): c is Uint8Array => c !== null)),
    send: (message) => Effect.suspend(() => deaf ? Effect.never : Effect.asVoid(Queue.offer(inbox, message))),
    terminate: () =>
      Fiber.interrupt(fiber).pipe(Effect.zipRight(Deferred.succeed(exit, 143)), Effect.zipRight(Queue.offer(out, null)), Effect.asVoid),
    exitCode: Deferred.await(exit)
  }
  return process
})

/**
 * The scripted executor, how many of its sandboxes are still held, and `foreign`, which adds a
 * sandbox as another server would have made it (every sandbox is `shared`: the reaper sees them).
 */
export const scriptedExecutor = Effect.gen(function*() {
  const held = yield* Ref.make(0)
  const live = new Map<string, Sandbox>()
  const sandboxOf = (run_id: RunId, execution_id: ExecutionId) =>
    Effect.gen(function*() {
      yield* Ref.update(held, (n) => n + 1)
      let released = false
      const sandbox: Sandbox = {
        id: `sandbox-${execution_id}`,
        run_id,
        execution_id,
        attachments: [],
        start: () => agentProcess,
        release: Effect.suspend(() => {
          if (released) return Effect.void
          released = true
          live.delete(sandbox.id)
          return Ref.update(held, (n) => n - 1)
        })
      }
      live.set(sandbox.id, sandbox)
      return sandbox
    })
  const layer = Layer.succeed(Executor, {
    prepare: (spec) =>
      Effect.gen(function*() {
        if (spec.docker_image === "broken") return yield* new ExecutorError({ message: "the engine is broken" })
        const sandbox = yield* sandboxOf(spec.run_id, spec.execution_id)
        if (spec.setup_commands.includes("exit 1")) {
          return yield* new SetupFailed({ message: "setup command `exit 1` exited with code 1", sandbox })
        }
        return sandbox
      }),
    // Every sandbox not released is there for a second life of the service, and for the reaper.
    leftovers: Effect.sync(() => [...live.values()]),
    shared: Effect.sync(() => [...live.values()])
  })
  return { layer, sandboxes: Ref.get(held), foreign: (run_id: RunId, execution_id: ExecutionId) => Effect.asVoid(sandboxOf(run_id, execution_id)) } as const
})
