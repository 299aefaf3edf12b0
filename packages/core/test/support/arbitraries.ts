/**
 * Generators for the models' property tests. Ids.ts has no Arbitrary annotations (its filters are
 * plain predicates), so the string generator handed to Arbitrary also produces well-formed ids;
 * the id filters keep them.
 */
import { Arbitrary, FastCheck, type Schema } from "effect"
import { formatUuidV7 } from "../../src/domain/Ids.js"

const uuidV7Arb = FastCheck.tuple(
  FastCheck.integer({ min: 0, max: 2 ** 48 - 1 }),
  FastCheck.uint8Array({ minLength: 10, maxLength: 10 })
).map(([millis, random]) => formatUuidV7(millis, random))
const uid22Arb = FastCheck.stringMatching(/^[A-Za-z0-9]{22}$/)
const idAwareFc: typeof FastCheck = {
  ...FastCheck,
  string: (constraints?: FastCheck.StringConstraints) =>
    FastCheck.oneof(FastCheck.string(constraints), uuidV7Arb, uid22Arb)
}

/** Values of `schema`'s type, with well-formed ids where it asks for them. */
export const arbitrary = <A, I>(schema: Schema.Schema<A, I>) => Arbitrary.makeLazy(schema)(idAwareFc)
