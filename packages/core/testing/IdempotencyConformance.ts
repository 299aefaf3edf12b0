/**
 * The IdempotencyStore conformance suite: a key is taken once (also by concurrent claims), its
 * answer replays to the same fingerprint only, a failed request frees it, only the claim that took
 * a key answers or frees it, it lives 24 hours and a request abandoned while running frees it after
 * `ABANDONED_AFTER_MS`, answers are sealed at rest, and the prune removes what expired, oldest first.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Layer } from "effect"
import { ABANDONED_AFTER_MS, KEY_TTL_MS, type KeyClaim } from "../src/domain/Idempotency.js"
import { IdempotencyStore } from "../src/ports/IdempotencyStore.js"
import { RawStorage, type Stores } from "./Stores.js"

const T0 = Date.UTC(2026, 10, 1)

let counter = 0
/** A claim on a fresh scope (so the cases of one store do not meet). */
const fresh = (overrides: Partial<KeyClaim> = {}): KeyClaim => ({
  scope: `principal-${++counter}-${Math.random().toString(36).slice(2)}`,
  key: "key-1",
  fingerprint: "f".repeat(64),
  claim_id: `claim-${counter}`,
  now: T0,
  ...overrides
})

/** Another request's claim on the same key. */
const another = (claim: KeyClaim, overrides: Partial<KeyClaim> = {}): KeyClaim => ({
  ...claim,
  claim_id: `${claim.claim_id}-again-${++counter}`,
  ...overrides
})

/** Registers the suite against one adapter's stores. */
export const idempotencyConformance = <E>(storeLayer: Layer.Layer<Stores | RawStorage, E>): void => {
  layer(storeLayer, { excludeTestServices: true, timeout: "60 seconds" })("IdempotencyStore", (it) => {
    it.effect("takes a key once; the answer replays to the same request only; another caller's key is its own", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const claim = fresh()
        expect(yield* store.claim(claim)).toEqual({ _tag: "Taken" })
        expect(yield* store.claim(another(claim, { now: T0 + 1 }))).toEqual({ _tag: "Running" })
        yield* store.answer(claim, { status: 201, body: `{"uid":"one"}` })
        expect(yield* store.claim(another(claim, { now: T0 + 2 }))).toEqual({
          _tag: "Answered",
          answer: { status: 201, body: `{"uid":"one"}` }
        })
        // An answered key keeps its first answer.
        yield* store.answer(claim, { status: 200, body: `{"uid":"two"}` })
        expect(yield* store.claim(another(claim, { now: T0 + 3 }))).toMatchObject({ answer: { body: `{"uid":"one"}` } })
        expect(yield* store.claim(another(claim, { fingerprint: "e".repeat(64), now: T0 + 4 }))).toEqual({ _tag: "Mismatch" })
        expect(yield* store.claim(another(claim, { scope: `${claim.scope}-other`, now: T0 + 5 }))).toEqual({ _tag: "Taken" })
        expect(yield* store.claim(another(claim, { key: "key-2", now: T0 + 6 }))).toEqual({ _tag: "Taken" })
      }))

    it.effect("a released key is free again; an answered key is not released", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const claim = fresh()
        expect(yield* store.claim(claim)).toEqual({ _tag: "Taken" })
        yield* store.release(claim)
        const second = another(claim, { fingerprint: "e".repeat(64) })
        expect(yield* store.claim(second)).toEqual({ _tag: "Taken" })
        yield* store.answer(second, { status: 200, body: "{}" })
        yield* store.release(second)
        expect((yield* store.claim(another(second)))._tag).toBe("Answered")
      }))

    it.effect("an answer lives 24 hours; a request still running after the abandon time frees its key", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const answered = fresh()
        yield* store.claim(answered)
        yield* store.answer(answered, { status: 200, body: "{}" })
        expect((yield* store.claim(another(answered, { now: T0 + KEY_TTL_MS - 1 })))._tag).toBe("Answered")
        expect(yield* store.claim(another(answered, { fingerprint: "e".repeat(64), now: T0 + KEY_TTL_MS + 1 }))).toEqual({ _tag: "Taken" })

        const running = fresh()
        yield* store.claim(running)
        expect(yield* store.claim(another(running, { now: T0 + ABANDONED_AFTER_MS - 1 }))).toEqual({ _tag: "Running" })
        const retry = another(running, { now: T0 + ABANDONED_AFTER_MS + 1 })
        expect(yield* store.claim(retry)).toEqual({ _tag: "Taken" })
        // The new claim starts its own time.
        expect(yield* store.claim(another(running, { now: T0 + ABANDONED_AFTER_MS + 2 }))).toEqual({ _tag: "Running" })
        // The abandoned claim, coming back late, neither answers nor frees the key the retry took.
        yield* store.answer(running, { status: 200, body: `{"late":true}` })
        yield* store.release(running)
        expect(yield* store.claim(another(running, { now: T0 + ABANDONED_AFTER_MS + 3 }))).toEqual({ _tag: "Running" })
        yield* store.answer(retry, { status: 200, body: `{"retry":true}` })
        expect(yield* store.claim(another(running, { now: T0 + ABANDONED_AFTER_MS + 4 }))).toMatchObject({
          answer: { body: `{"retry":true}` }
        })
      }))

    it.effect("of many concurrent claims of one key, exactly one takes it", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const claim = fresh()
        const holds = yield* Effect.forEach(Array.from({ length: 16 }), () => store.claim(another(claim)), { concurrency: "unbounded" })
        expect(holds.filter((hold) => hold._tag === "Taken")).toHaveLength(1)
        expect(holds.filter((hold) => hold._tag === "Running")).toHaveLength(15)
      }))

    it.effect("keeps answers sealed at rest", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const raw = yield* RawStorage
        const claim = fresh()
        const secret = `ar_${Math.random().toString(36).slice(2)}SECRETTOKEN`
        yield* store.claim(claim)
        yield* store.answer(claim, { status: 201, body: JSON.stringify({ token: secret }) })
        expect(yield* raw.contains(secret)).toBe(false)
        expect(yield* store.claim(another(claim))).toMatchObject({ answer: { body: JSON.stringify({ token: secret }) } })
      }))

    it.effect("prunes keys created before a time, oldest first, at most a batch", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const base = T0 - 10 * KEY_TTL_MS
        const claims = [0, 1, 2].map((i) => fresh({ now: base + i }))
        for (const claim of claims) yield* store.claim(claim)
        expect(yield* store.prune(base + 2, 1)).toBe(1)
        expect(yield* store.prune(base + 2, 10)).toBe(1)
        // The newest is still there (running, not yet abandoned at its own time).
        expect(yield* store.claim(another(claims[2]!, { now: base + 3 }))).toEqual({ _tag: "Running" })
        expect(yield* store.claim(another(claims[0]!, { now: base + 3 }))).toEqual({ _tag: "Taken" })
      }))
  })
}
