import { ValidationError } from "@effect/cli"
import { HelpDoc } from "@effect/cli"
import { Errors } from "@agent-runs/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import * as Failure from "../src/Failure.js"

describe("Failure", () => {
  it("maps each failure to its exit code", () => {
    expect(Failure.exitCodeOf(new Errors.AuthenticationRequired({ message: "no" }))).toBe(4)
    expect(Failure.exitCodeOf(new Errors.NotAuthorized({ message: "no" }))).toBe(4)
    expect(Failure.exitCodeOf(Errors.ResourceNotFound.of("run", "r1"))).toBe(1)
    expect(Failure.exitCodeOf(new Errors.Conflict({ message: "busy" }))).toBe(1)
    expect(Failure.exitCodeOf(new Failure.UsageError({ message: "empty" }))).toBe(2)
    expect(Failure.exitCodeOf(ValidationError.missingValue(HelpDoc.p("--token")))).toBe(2)
    expect(Failure.exitCodeOf(new Failure.Reported({ exitCode: 6 }))).toBe(6)
    expect(Failure.exitCodeOf(new Error("boom"))).toBe(1)
  })

  it("prints one line, or nothing for what was printed already", () => {
    expect(Failure.messageOf(Errors.ResourceNotFound.of("run", "r1"))).toEqual(Option.some("run r1 not found"))
    expect(Failure.messageOf(new Error("first\n  second"))).toEqual(Option.some("first second"))
    expect(Failure.messageOf(new Failure.Reported({ exitCode: 5 }))).toEqual(Option.none())
    expect(Failure.messageOf(ValidationError.missingValue(HelpDoc.p("--token")))).toEqual(Option.none())
  })

  it("the teardown exits with the failure's code", () => {
    const codes: Array<number> = []
    Failure.teardown(Exit.void, (code) => codes.push(code))
    Failure.teardown(Exit.fail(new Failure.Reported({ exitCode: 5 })), (code) => codes.push(code))
    Failure.teardown(Exit.fail(new Errors.AuthenticationRequired({ message: "no" })), (code) => codes.push(code))
    Failure.teardown(Exit.die("bug"), (code) => codes.push(code))
    Failure.teardown(Exit.interrupt(0 as never), (code) => codes.push(code))
    expect(codes).toEqual([0, 5, 4, 1, 0])
  })

  it.effect("a command may make a stop by SIGINT/SIGTERM exit non-zero", () =>
    Effect.gen(function*() {
      yield* Failure.exitOnInterrupt(Failure.EXIT_INTERRUPTED)
      let code: number | undefined
      Failure.teardown(Exit.interrupt(0 as never), (c) => (code = c))
      yield* Failure.exitOnInterrupt(Failure.EXIT_OK)
      expect(code).toBe(130)
    }))
})
