/**
 * Helpers for the unit tests of agent CLI decoders (ports/AgentHarness.ts): lines decoded with
 * every event checked against the harness event schema (the reducer trusts what passes
 * `eventLines`, and a decoder's test must notice an event that would not), and hostile inputs.
 */
import { expect } from "@effect/vitest"
import { ParseResult, Schema } from "effect"
import { HarnessEvent } from "../src/domain/Harness.js"
import type { HarnessDecoder } from "../src/ports/AgentHarness.js"

const decodeEvent = Schema.decodeUnknownSync(HarnessEvent)

/** Throws, saying why, when the event is not a valid harness event. */
export const validEvent = (event: HarnessEvent): void => {
  try {
    decodeEvent(event)
  } catch (error) {
    const why = ParseResult.isParseError(error)
      ? ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ")
      : String(error)
    throw new Error(`the decoder returned an invalid "${String(event.type)}" event: ${why}`)
  }
}

/** The events the lines give, in order, each one checked against the schema. */
export const decodeLines = (lines: ReadonlyArray<string>, decode: HarnessDecoder): Array<HarnessEvent> => {
  const events: Array<HarnessEvent> = []
  for (const line of lines) {
    for (const event of decode(line)) {
      validEvent(event)
      events.push(event)
    }
  }
  return events
}

export const json = (value: unknown): string => JSON.stringify(value)

/** The one `result` event among the events. */
export const resultOf = (events: ReadonlyArray<HarnessEvent>) => {
  const results = events.filter((e): e is Extract<HarnessEvent, { type: "result" }> => e.type === "result")
  expect(results).toHaveLength(1)
  return results[0]!
}

/** `{"a":{"a":…1…}}`, `depth` objects deep (JSON text: such a value cannot be stringified). */
export const deepObject = (depth: number): string => '{"a":'.repeat(depth) + "1" + "}".repeat(depth)
export const deepArray = (depth: number): string => "[".repeat(depth) + "]".repeat(depth)
export const DEPTH = 5_000
/** Nesting depths of a field of a known event: 5,000, and far more (a line of 500 KB). */
export const DEPTHS = [5_000, 100_000] as const
