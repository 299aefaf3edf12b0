/**
 * Key rotation against a storage adapter (docs/operations.md#rotating-the-secret-key): values
 * sealed under key A are read under the ring (B, [A]); resealing stops halfway (a crash: the
 * stores are dropped mid-rotation) and every value still opens, under either order of the two
 * keys; a new process finishes; then B alone opens everything and A alone nothing.
 *
 * `open(key, others)` gives the adapter's stores over one database (the same for every call of a
 * test), sealing with `key` and opening with `others` too.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import type { Layer } from "effect"
import type { TeamUid } from "../src/domain/Ids.js"
import { SecretName } from "../src/domain/Secret.js"
import { SealedValues } from "../src/ports/SealedValues.js"
import { SecretStore } from "../src/ports/SecretStore.js"
import { WebhookStore } from "../src/ports/WebhookStore.js"
import { makeWebhook } from "./CatalogConformance.js"
import { uid } from "./RunStoreConformance.js"

type Key = Redacted.Redacted<Uint8Array>
type Stores = SecretStore | WebhookStore | SealedValues

const key = (): Key => Redacted.make(globalThis.crypto.getRandomValues(new Uint8Array(32)))

export const keyRotationSuite = <E>(open: (key: Key, others: ReadonlyArray<Key>) => Layer.Layer<Stores, E>) => {
  it.effect("rotates the secret key: nothing is unreadable at any moment, a crash halfway resumes, the old key retires", () =>
    Effect.gen(function*() {
      const [a, b] = [key(), key()]
      const team = uid<TeamUid>()
      const names = Array.from({ length: 5 }, (_, i) => SecretName.make(`KEY_${i}`))
      const webhook = makeWebhook({ team, secret: "whsec-rotated-webhook-secret" })
      const under = <A, E2>(k: Key, others: ReadonlyArray<Key>, effect: Effect.Effect<A, E2, Stores>) =>
        Effect.scoped(Effect.provide(effect, open(k, others)))

      yield* under(a, [], Effect.gen(function*() {
        const secrets = yield* SecretStore
        for (const name of names) yield* secrets.put(team, name, Redacted.make(`value of ${name}`), 1)
        yield* (yield* WebhookStore).create(webhook)
      }))

      /** Every value, as read under the ring. */
      const readAll = (k: Key, others: ReadonlyArray<Key>) =>
        under(k, others, Effect.gen(function*() {
          const secrets = yield* SecretStore
          const values = yield* Effect.forEach(names, (name) => Effect.map(secrets.get(team, name), Option.map(Redacted.value)))
          const hook = yield* (yield* WebhookStore).get(webhook.item.uid)
          return [...values, Option.flatMap(hook, (h) => Option.fromNullable(h.secret)).pipe(Option.map(Redacted.value))]
        }))
      const expected = [...names.map((name) => Option.some(`value of ${name}`)), Option.some("whsec-rotated-webhook-secret")]

      expect(yield* readAll(b, [a])).toEqual(expected)
      // Halfway, then the process is gone.
      const first = yield* under(b, [a], Effect.flatMap(SealedValues, (s) => s.reseal(2)))
      expect(first).toMatchObject({ resealed: 2, unreadable: 0, cycleEnded: false })
      expect(yield* readAll(b, [a])).toEqual(expected)
      expect(yield* readAll(a, [b])).toEqual(expected)
      // A new process finishes it.
      const passes = yield* under(b, [a], Effect.gen(function*() {
        const sealed = yield* SealedValues
        const done = []
        for (let pass = yield* sealed.reseal(2); ; pass = yield* sealed.reseal(2)) {
          done.push(pass)
          if (pass.cycleEnded && pass.cycleResealed === 0) return done
        }
      }))
      // The four left, in calls of two at most; then a cycle that finds nothing to do.
      expect(passes.reduce((n, p) => n + p.resealed, 0)).toBe(4)
      expect(passes.every((p) => p.resealed <= 2)).toBe(true)
      expect(yield* under(b, [a], Effect.flatMap(SealedValues, (s) => s.reseal(2))))
        .toEqual({ resealed: 0, cycleEnded: true, cycleResealed: 0, unreadable: 0 })
      // A retired: B alone opens everything; A alone nothing.
      expect(yield* readAll(b, [])).toEqual(expected)
      const withOld = yield* Effect.either(readAll(a, []))
      expect(withOld._tag === "Left" || JSON.stringify(withOld.right) !== JSON.stringify(expected)).toBe(true)
    }), 60_000)
}
