import { describe, expect, it } from "@effect/vitest"
import { Console, Effect } from "effect"
import { spawnSync } from "node:child_process"
import { Console as NodeConsole } from "node:console"
import { fileURLToPath } from "node:url"
import { Batched, BatchedConsoleLive } from "../src/serve/BufferedOutput.js"

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

describe("BufferedOutput", () => {
  it("writes the lines of one turn of the event loop in one write, in order", async () => {
    const writes: Array<string> = []
    const console = new NodeConsole({ stdout: new Batched({ write: (chunk) => writes.push(chunk.toString()), fd: 1 }) })
    for (let i = 0; i < 50; i++) console.log(`line ${i}`)
    console.group()
    console.log("indented")
    expect(writes).toEqual([])
    await nextTurn()
    expect(writes).toHaveLength(1)
    expect(writes[0]).toBe(`${Array.from({ length: 50 }, (_, i) => `line ${i}\n`).join("")}  indented\n`)
    console.log("later")
    await nextTurn()
    expect(writes).toEqual([writes[0], "  later\n"])
  })

  it("writes what is buffered when its console is done with, and then no longer waits for the exit", async () => {
    const before = process.listenerCount("exit")
    const writes: Array<string> = []
    const batched = new Batched({ write: (chunk) => writes.push(chunk.toString()), fd: 1 })
    expect(process.listenerCount("exit")).toBe(before + 1)
    batched.write("buffered\n")
    batched.detach()
    expect(writes).toEqual(["buffered\n"])
    expect(process.listenerCount("exit")).toBe(before)
    // The layer's two streams are detached when its scope closes.
    await Effect.runPromise(Effect.provide(Effect.sync(() => expect(process.listenerCount("exit")).toBe(before + 2)), BatchedConsoleLive))
    expect(process.listenerCount("exit")).toBe(before)
  })

  it("gives Effect's loggers the batched console", () =>
    Effect.gen(function*() {
      const unsafe = yield* Console.consoleWith((c) => Effect.succeed(c.unsafe))
      expect(unsafe).not.toBe(globalThis.console)
    }).pipe(Effect.provide(BatchedConsoleLive), Effect.runPromise))

  it("writes what is buffered when the process exits at once", () => {
    const root = fileURLToPath(new URL("../../..", import.meta.url))
    const child = spawnSync(
      process.execPath,
      [`${root}/node_modules/vite-node/vite-node.mjs`, fileURLToPath(new URL("fixtures/exit-flush.ts", import.meta.url))],
      { cwd: root, encoding: "utf8" }
    )
    expect(child.stdout).toBe("first\nlast\n")
    expect(child.stderr).toBe("to stderr\n")
  })
})
