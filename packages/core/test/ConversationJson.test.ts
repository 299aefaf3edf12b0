/**
 * The conversation's JSON written piece by piece (ConversationJson.ts) is the text the schema's
 * encoding gives: what the conversation endpoints sent before they streamed, and what the
 * published SDK reads.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, DateTime, Either, Schema } from "effect"
import * as fc from "fast-check"
import { ConversationResponse, type ConversationStep } from "../src/domain/Conversation.js"
import {
  CHUNK_CHARS,
  CONVERSATION_JSON_END,
  conversationJsonHead,
  RENDERED_PIECE_CHARS,
  RENDERED_STEPS_SHAPE,
  renderedJson,
  stepsJson
} from "../src/domain/ConversationJson.js"
import * as TrustedCodec from "../src/domain/TrustedCodec.js"

const encode = Schema.encodeSync(ConversationResponse)
const trusted = TrustedCodec.encoder(ConversationResponse)

/** The text of a response whose steps come in groups (one per run), as the service writes it. */
const written = (response: ConversationResponse, groups: ReadonlyArray<ReadonlyArray<ConversationStep>>) => {
  let first = true
  const pieces = [conversationJsonHead(response.conversation_id, response.run_ids)]
  for (const steps of groups) {
    pieces.push(...stepsJson(steps, first))
    first &&= steps.length === 0
  }
  pieces.push(CONVERSATION_JSON_END)
  return pieces
}

/** `steps` cut into consecutive groups at the given (sorted, clamped) places. */
const groupsOf = (steps: ReadonlyArray<ConversationStep>, cuts: ReadonlyArray<number>) => {
  const at = [0, ...cuts.map((c) => Math.min(c, steps.length)).sort((a, b) => a - b), steps.length]
  return at.slice(1).map((end, i) => steps.slice(at[i], end))
}

const T = DateTime.unsafeMake(Date.UTC(2026, 10, 29, 8, 30, 0, 5))

describe("ConversationJson", () => {
  it.prop(
    "is JSON.stringify of the schema's encoding (and of the trusted codec's), however its steps are grouped",
    [Arbitrary.make(ConversationResponse), fc.array(fc.nat({ max: 4 }), { maxLength: 3 })],
    ([response, cuts]) => {
      const text = written(response, groupsOf(response.steps, cuts)).join("")
      expect(text).toBe(JSON.stringify(encode(response)))
      const viaTrusted = trusted(response)
      expect(viaTrusted._tag).toBe("Right")
      if (viaTrusted._tag === "Right") expect(text).toBe(JSON.stringify(viaTrusted.right))
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "writes timestamps as the schema does, one after another within a second, across seconds, before 1970 and past year 9999",
    [
      fc.constantFrom(0, -62_198_755_200_000, Date.UTC(2026, 10, 29, 23, 59, 59, 990), 8.64e15 - 5_000, -8.64e15),
      fc.array(fc.integer({ min: -1_500, max: 1_500 }), { minLength: 1, maxLength: 30 })
    ],
    ([base, offsets]) => {
      const millis = offsets.map((o) => Math.min(8.64e15, Math.max(-8.64e15, base + o)))
      const response = new ConversationResponse({
        conversation_id: "019a6b2e-7c4d-7f00-8a00-000000000001" as ConversationResponse["conversation_id"],
        run_ids: [],
        steps: [{
          id: "s",
          started_at: DateTime.unsafeMake(millis[0]!),
          completed_at: DateTime.unsafeMake(millis[millis.length - 1]!),
          messages: millis.map((m) => ({ role: "user" as const, timestamp: DateTime.unsafeMake(m), content: [] })),
          steps: []
        }]
      })
      const text = written(response, [response.steps]).join("")
      // The run's endpoint encoded with the trusted codec, which writes any date; the schema's
      // full encoding refuses years outside 0000–9999 (not RFC 3339), and agrees otherwise.
      expect(Either.map(trusted(response), (body) => JSON.stringify(body))).toEqual(Either.right(text))
      const full = Schema.encodeEither(ConversationResponse)(response)
      if (Either.isRight(full)) expect(text).toBe(JSON.stringify(full.right))
    }
  )

  it("writes every string as JSON.stringify does: quotes, backslashes, control characters, surrogates alone or paired", () => {
    const texts = ["", "plain", "é ü 中", "say \"hi\"", "a\\b", "tab\tnew\nline\r", "\u0000\u0001\u001f", "\u007f", "\u2028\u2029",
      "emoji 😀", "lone \ud800 high", "lone \udfff low", "\udfff\ud800", "</script>"]
    const response = new ConversationResponse({
      conversation_id: "019a6b2e-7c4d-7f00-8a00-000000000001" as ConversationResponse["conversation_id"],
      run_ids: [],
      steps: [{
        id: texts.join("|"),
        description: texts.join(""),
        summary: "\ud83d",
        messages: texts.map((text) => ({
          role: "assistant" as const,
          content: [
            { type: "text" as const, text },
            { type: "event" as const, name: text, data: { [text]: text } },
            { type: "action" as const, id: text, category: "command" as const, name: text, input: [text] }
          ]
        })),
        steps: []
      }]
    })
    expect(written(response, [response.steps]).join("")).toBe(JSON.stringify(encode(response)))
  })

  it("writes a large step in pieces of about CHUNK_CHARS, each holding whole messages, the text unchanged", () => {
    const messages = Array.from({ length: 5_000 }, (_, i) => ({
      role: i % 2 === 0 ? "assistant" as const : "tool" as const,
      timestamp: T,
      content: [{ type: "text" as const, text: `line ${i} ${"x".repeat(80)}` }]
    }))
    const step: ConversationStep = {
      id: "execution-1",
      started_at: T,
      completed_at: T,
      summary: "done",
      messages,
      steps: [{ id: "inner", description: "nested \"quoted\" \u2028", started_at: T, messages: messages.slice(0, 3), steps: [] }]
    }
    const response = new ConversationResponse({
      conversation_id: "019a6b2e-7c4d-7f00-8a00-000000000001" as ConversationResponse["conversation_id"],
      run_ids: ["019a6b2e-7c4d-7f00-8a00-000000000002" as ConversationResponse["run_ids"][number]],
      steps: [step, step]
    })
    expect(written(response, [[step], [], [step]]).join("")).toBe(JSON.stringify(encode(response)))
    const pieces = [...stepsJson([step], true)]
    expect(pieces.length).toBeGreaterThan(5)
    for (const piece of pieces.slice(0, -1)) {
      expect(piece.length).toBeGreaterThanOrEqual(CHUNK_CHARS)
      expect(piece.length).toBeLessThan(CHUNK_CHARS + 200)
    }
  })

  it("serves kept text in pieces of RENDERED_PIECE_CHARS that never split a surrogate pair", () => {
    const emoji = "\u{1F600}"
    for (const offset of [0, 1]) {
      // A pair straddling the first piece's end (offset 0), or ending right at it (offset 1).
      const json = `${"x".repeat(RENDERED_PIECE_CHARS - 1 - offset)}${emoji}${"y".repeat(RENDERED_PIECE_CHARS)}${emoji}`
      const pieces = [...renderedJson(json, true)]
      expect(pieces.join("")).toBe(json)
      expect(pieces.length).toBe(3)
      for (const piece of pieces) expect(Buffer.from(piece, "utf8").toString("utf8")).toBe(piece)
    }
    expect([...renderedJson("", false)]).toEqual([])
    expect([...renderedJson("{}", false)]).toEqual([",", "{}"])
  })

  it("writes this exact text and fingerprint: a change to either needs RENDERED_STEPS_SHAPE's version raised", () => {
    // Storage serves an ended execution's text kept under RENDERED_STEPS_SHAPE. If the writer's or
    // the fold's text changes while the fingerprint does not, stale texts would be served: raise the
    // version in RENDERED_STEPS_SHAPE, then update both literals here.
    const at = DateTime.unsafeMake(Date.UTC(2026, 10, 29, 9, 0, 0, 250))
    const step: ConversationStep = {
      id: "s",
      description: "d \"q\"",
      summary: "done",
      started_at: at,
      completed_at: DateTime.unsafeMake(Date.UTC(2026, 10, 29, 9, 0, 1, 5)),
      messages: [{
        role: "assistant",
        timestamp: at,
        content: [
          { type: "text", text: "hi\n" },
          { type: "action", id: "a", category: "command", name: "run", input: { x: [1] } },
          { type: "action_result", action_id: "a", category: "command", name: "run", state: "completed", output: "ok" },
          { type: "event", name: "output", data: { text: "line" } }
        ]
      }],
      steps: [{ id: "s.1", started_at: at, messages: [], steps: [] }]
    }
    expect([...stepsJson([step], true)].join("")).toBe(
      String.raw`{"id":"s","description":"d \"q\"","summary":"done","started_at":"2026-11-29T09:00:00.250Z",` +
        String.raw`"completed_at":"2026-11-29T09:00:01.005Z","messages":[{"role":"assistant","timestamp":"2026-11-29T09:00:00.250Z",` +
        String.raw`"content":[{"type":"text","text":"hi\n"},{"type":"action","id":"a","category":"command","name":"run","input":{"x":[1]}},` +
        String.raw`{"type":"action_result","action_id":"a","category":"command","name":"run","state":"completed","output":"ok"},` +
        String.raw`{"type":"event","name":"output","data":{"text":"line"}}]}],"steps":[{"id":"s.1","started_at":"2026-11-29T09:00:00.250Z",` +
        String.raw`"messages":[],"steps":[]}]}`
    )
    expect(RENDERED_STEPS_SHAPE).toBe("b02abb6c522a7b32")
  })
})
