import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"
import * as fc from "fast-check"
import {
  EMPTY_ENVIRONMENT,
  EnvironmentUid,
  formatUid22,
  formatUuidV7,
  Ids,
  IdsLive,
  isUid22,
  isUuidV7,
  RunId,
  uuidV7Millis
} from "../src/domain/Ids.js"

describe("Ids", () => {
  it.prop(
    "a UUIDv7 carries its timestamp and is well formed",
    [fc.integer({ min: 0, max: 2 ** 48 - 1 }), fc.uint8Array({ minLength: 10, maxLength: 10 })],
    ([millis, random]) => {
      const id = formatUuidV7(millis, random)
      expect(isUuidV7(id)).toBe(true)
      expect(uuidV7Millis(id)).toBe(millis)
    },
    { fastCheck: { numRuns: 200 } }
  )

  it.prop(
    "UUIDv7 strings sort like their timestamps",
    [fc.integer({ min: 0, max: 2 ** 48 - 1 }), fc.integer({ min: 0, max: 2 ** 48 - 1 })],
    ([a, b]) => {
      const r = new Uint8Array(10)
      const [x, y] = [formatUuidV7(a, r), formatUuidV7(b, r)]
      expect(Math.sign(x < y ? -1 : x > y ? 1 : 0)).toBe(Math.sign(a - b))
    },
    { fastCheck: { numRuns: 200 } }
  )

  it.prop(
    "22-character base62 ids only use [A-Za-z0-9]",
    [fc.uint8Array({ minLength: 22, maxLength: 64 })],
    ([random]) => {
      const id = formatUid22(random)
      if (id !== undefined) expect(isUid22(id)).toBe(true)
      else expect(random.filter((b) => b < 248).length).toBeLessThan(22)
    },
    { fastCheck: { numRuns: 200 } }
  )

  it.effect("the live generator uses the clock and yields valid ids", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(1_700_000_000_000)
      const ids = yield* Ids
      const run = yield* ids.runId
      expect(Schema.is(RunId)(run)).toBe(true)
      expect(uuidV7Millis(run)).toBe(1_700_000_000_000)
      const uid = yield* ids.uid22
      expect(Schema.is(EnvironmentUid)(uid)).toBe(true)
      expect(yield* ids.uid22).not.toBe(uid)
    }).pipe(Effect.provide(IdsLive)))

  it.effect("ids made within one millisecond sort in the order they were made", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(1_700_000_000_123)
      const ids = yield* Ids
      const made: Array<string> = []
      // 10,000: more than one millisecond's counter holds, so milliseconds are borrowed.
      for (let i = 0; i < 10_000; i++) made.push(yield* ids.runId)
      expect([...made].sort()).toEqual(made)
      expect(new Set(made).size).toBe(made.length)
      expect(made.every((id) => isUuidV7(id))).toBe(true)
      expect(uuidV7Millis(made[0]!)).toBe(1_700_000_000_123)
      expect(uuidV7Millis(made[made.length - 1]!)).toBeLessThanOrEqual(1_700_000_000_123 + 5)
      // The clock moves on: ids follow it again.
      yield* TestClock.adjust(1_000)
      expect(uuidV7Millis(yield* ids.runId)).toBe(1_700_000_001_123)
    }).pipe(Effect.provide(IdsLive)))

  it("rejects empty-environment and malformed ids, naming the problem", () => {
    const decode = Schema.decodeUnknownEither(EnvironmentUid)
    const empty = decode(EMPTY_ENVIRONMENT)
    expect(empty._tag).toBe("Left")
    expect(String(empty._tag === "Left" && empty.left.message)).toContain("empty-environment")
    expect(decode("short")._tag).toBe("Left")
    expect(decode("a".repeat(22))._tag).toBe("Right")
    expect(Schema.decodeUnknownEither(RunId)("not-a-uuid")._tag).toBe("Left")
    expect(Schema.decodeUnknownEither(RunId)("0190b6a2-3c4d-4e5f-8a1b-2c3d4e5f6a7b")._tag).toBe("Left")
  })
})

describe("Id schemas", () => {
  it.prop("generate only valid ids (RunId)", [RunId], ([id]) => {
    expect(isUuidV7(id)).toBe(true)
  }, {
    fastCheck: { numRuns: 200 }
  })
  it.prop("generate only valid ids (EnvironmentUid)", [EnvironmentUid], ([id]) => {
    expect(isUid22(id)).toBe(true)
  }, {
    fastCheck: { numRuns: 200 }
  })
})
