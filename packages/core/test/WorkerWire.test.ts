/** What a self-hosted worker may send is bounded before it reaches the server's records. */
import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { RecordEventsRequest, ReportRequest } from "../src/domain/Worker.js"

const EXECUTION = "01a20000-0000-7000-8000-000000000001"
const usage = { input_tokens: 1, output_tokens: 1, inference_cost: 0, compute_cost: 0 }
const decodes = <A, I>(schema: Schema.Schema<A, I>, value: unknown) => Either.isRight(Schema.decodeUnknownEither(schema)(value))

describe("the worker wire's limits", () => {
  it("events: 1 to 10 per request, messages of at most 16 KiB, executor events only", () => {
    const start = { _tag: "Start" }
    expect(decodes(RecordEventsRequest, { execution_id: EXECUTION, events: [start] })).toBe(true)
    expect(decodes(RecordEventsRequest, { execution_id: EXECUTION, events: [] })).toBe(false)
    expect(decodes(RecordEventsRequest, { execution_id: EXECUTION, events: Array(11).fill(start) })).toBe(false)
    const fail = (message: string) => ({ _tag: "Fail", error_code: "agent_failed", message })
    expect(decodes(RecordEventsRequest, { execution_id: EXECUTION, events: [fail("x".repeat(16_384))] })).toBe(true)
    expect(decodes(RecordEventsRequest, { execution_id: EXECUTION, events: [fail("x".repeat(16_385))] })).toBe(false)
    // Not an executor's event: a cancel, a lease expiry, a claim.
    for (const _tag of ["Cancel", "LeaseExpired", "Claim", "CapacityFreed"]) {
      expect(decodes(RecordEventsRequest, { execution_id: EXECUTION, events: [{ _tag }] })).toBe(false)
    }
  })

  it("reports: session id, link and status bounded; usage never negative", () => {
    const report = (fields: object) => ({ execution_id: EXECUTION, report: { request_usage: usage, ...fields } })
    expect(decodes(ReportRequest, report({ session_id: "s".repeat(1_000), status: "x".repeat(16_384) }))).toBe(true)
    expect(decodes(ReportRequest, report({ session_id: "s".repeat(1_001) }))).toBe(false)
    expect(decodes(ReportRequest, report({ session_link: "l".repeat(4_001) }))).toBe(false)
    expect(decodes(ReportRequest, report({ status: "x".repeat(16_385) }))).toBe(false)
    expect(decodes(ReportRequest, { execution_id: EXECUTION, report: { request_usage: { ...usage, output_tokens: -1 } } })).toBe(false)
  })
})
