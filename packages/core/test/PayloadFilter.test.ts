import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import type { Condition, JsonObject, JsonValue, Operators, PathSegment, PayloadFilter } from "../src/domain/PayloadFilter.js"
import {
  evaluate,
  explain,
  MAX_FILTER_DEPTH,
  OPERATOR_KEYS,
  parse,
  parseOrInvalidRequest,
  renderPath,
  serialize
} from "../src/domain/PayloadFilter.js"

const runs = { numRuns: 200 }

/** fast-check's JSON values, typed as the filter's (its objects are typed with optional values). */
const jsonValue = (constraints?: fc.JsonSharedConstraints): fc.Arbitrary<JsonValue> =>
  fc.jsonValue(constraints) as fc.Arbitrary<JsonValue>

const parsed = (json: unknown): PayloadFilter => {
  const result = parse(json)
  if (Either.isLeft(result)) throw new Error(`expected a valid filter: ${result.left.message}`)
  return result.right
}

const failure = (json: unknown, root?: string) => {
  const result = parse(json, root === undefined ? {} : { root })
  if (Either.isRight(result)) throw new Error(`expected a parse error for ${JSON.stringify(json)}`)
  return result.left
}

const matches = (filter: unknown, payload: unknown): boolean => evaluate(parsed(filter), payload)

const isObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** Builds `{a: {b: value}}` from a path, as filters and payloads nest. */
const nest = (path: ReadonlyArray<string>, value: unknown): unknown =>
  path.reduceRight<unknown>((inner, key) => Object.fromEntries([[key, inner]]), value)

/** A copy of `base` with `value` placed at `path` (creating objects on the way). */
const setAt = (base: unknown, path: ReadonlyArray<string>, value: unknown): unknown => {
  const [head, ...rest] = path
  if (head === undefined) return value
  const object = isObject(base) ? base : {}
  return Object.fromEntries([...Object.entries(object).filter(([k]) => k !== head), [head, setAt(object[head], rest, value)]])
}

const isOperatorName = (s: string) => (OPERATOR_KEYS as ReadonlyArray<string>).includes(s)
const fieldName = fc.oneof(fc.constantFrom("action", "type", "a", "b", "x"), fc.string({ maxLength: 6 }))
const nestedName = fieldName.filter((s) => !isOperatorName(s))
/** A path to a field: any top-level name, nested names that are not operators. */
const fieldPath = fc
  .tuple(fieldName, fc.array(nestedName, { maxLength: 3 }))
  .map(([head, tail]) => [head, ...tail])
const allowedValues = fc.array(jsonValue({ maxDepth: 2 }), { maxLength: 4 })

/** A payload that is arbitrary, or has at `path` a value that is arbitrary, null, or one of `pool`. */
const payloadAround = (path: ReadonlyArray<string>, pool: ReadonlyArray<JsonValue>) =>
  fc.oneof(
    jsonValue(),
    fc.tuple(jsonValue(), jsonValue()).map(([base, v]) => setAt(base, path, v)),
    jsonValue().map((base) => setAt(base, path, null)),
    ...(pool.length === 0
      ? []
      : [
          fc.tuple(jsonValue(), fc.constantFrom(...pool)).map(([base, v]) => setAt(base, path, v)),
          fc.tuple(jsonValue(), fc.constantFrom(...pool), jsonValue()).map(([base, v, w]) => setAt(base, path, [w, v]))
        ])
  )

/** Generated filters (the AST), operators always with at least one key. */
const operatorsArb: fc.Arbitrary<Operators> = fc
  .record(
    { in: allowedValues, notIn: allowedValues, exists: fc.boolean() },
    { requiredKeys: [] }
  )
  .filter((o) => Object.keys(o).length > 0)
  .map((o) => ({ _tag: "Operators" as const, ...o }))

/** Fields in the order a JSON object keeps its keys (integer-like keys first), as parse yields them. */
const toFields = (entries: ReadonlyArray<readonly [string, Condition]>): PayloadFilter => {
  const byName = new Map(entries)
  const order = Object.keys(Object.fromEntries(entries))
  return { _tag: "Fields", fields: order.map((name) => ({ name, condition: byName.get(name)! })) }
}

const { fields: fieldsArb } = fc.letrec<{ fields: PayloadFilter; nested: PayloadFilter; condition: Condition }>((tie) => ({
  fields: fc.uniqueArray(fc.tuple(fieldName, tie("condition")), { selector: ([name]) => name, maxLength: 4 }).map(toFields),
  nested: fc
    .uniqueArray(fc.tuple(nestedName, tie("condition")), { selector: ([name]) => name, minLength: 1, maxLength: 3 })
    .map(toFields),
  condition: fc.oneof({ depthSize: "small", withCrossShrink: true }, operatorsArb, tie("nested"))
}))

/** Leaf paths of a payload: every non-object value reachable through objects (nested operator names skipped). */
const leaves = (payload: unknown): Array<[Array<string>, unknown]> => {
  const out: Array<[Array<string>, unknown]> = []
  const walk = (value: unknown, path: Array<string>) => {
    if (!isObject(value)) {
      if (path.length > 0) out.push([path, value])
      return
    }
    for (const key of Object.keys(value)) {
      if (path.length > 0 && isOperatorName(key)) continue
      walk(value[key], [...path, key])
    }
  }
  walk(payload, [])
  return out
}

/** The filter that lists, at each leaf path, exactly the payload's own value there. */
const filterOfLeaves = (list: ReadonlyArray<[ReadonlyArray<string>, unknown]>): JsonObject => {
  const root: Record<string, unknown> = {}
  for (const [path, value] of list) {
    let node = root
    path.forEach((key, i) => {
      if (i === path.length - 1) Object.defineProperty(node, key, { value: [value], enumerable: true, writable: true, configurable: true })
      else {
        if (!Object.hasOwn(node, key)) Object.defineProperty(node, key, { value: {}, enumerable: true, writable: true, configurable: true })
        node = node[key] as Record<string, unknown>
      }
    })
  }
  return root as JsonObject
}

const resolves = (input: unknown, path: ReadonlyArray<PathSegment>): boolean => {
  let node = input
  for (const segment of path) {
    if (typeof segment === "number") {
      if (!Array.isArray(node) || segment >= node.length) return false
      node = node[segment]
    } else {
      if (!isObject(node) || !Object.hasOwn(node, segment)) return false
      node = node[segment]
    }
  }
  return true
}

/** Filter-shaped JSON: objects with operator and field keys, values of every kind. */
const { value: filterishArb } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    jsonValue({ maxDepth: 2 }),
    fc.array(jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom("in", "not_in", "exists", "a", "b", "nin"), tie("value"), { maxKeys: 3 })
  )
}))

describe("PayloadFilter: properties", () => {
  it.prop(
    "{in: X} and the bare array X parse alike and match the same payloads",
    [fc.tuple(fieldPath, allowedValues).chain(([path, values]) => fc.tuple(fc.constant(path), fc.constant(values), payloadAround(path, values)))],
    ([[path, values, payload]]) => {
      const bare = parsed(nest(path, values))
      const operator = parsed(nest(path, { in: values }))
      expect(operator).toEqual(bare)
      expect(evaluate(operator, payload)).toBe(evaluate(bare, payload))
      expect(explain(operator, payload)).toEqual(explain(bare, payload))
    },
    { fastCheck: runs }
  )

  it.prop(
    "exists: true and exists: false are complements",
    [fieldPath.chain((path) => fc.tuple(fc.constant(path), payloadAround(path, [])))],
    ([[path, payload]]) => {
      const present = matches(nest(path, { exists: true }), payload)
      const absent = matches(nest(path, { exists: false }), payload)
      expect(present).toBe(!absent)
    },
    { fastCheck: runs }
  )

  it.prop(
    "a filter of a payload's own leaf values matches it, and fails when one leaf changes",
    [jsonValue()],
    ([payload]) => {
      const list = leaves(payload)
      const filter = parsed(filterOfLeaves(list))
      expect(explain(filter, payload)).toEqual({ matched: true, reasons: [] })
      const first = list[0]
      if (first !== undefined) {
        const [path, value] = first
        // [[v]] equals neither v nor any element of v.
        const changed = setAt(payload, path, [[value]])
        const outcome = explain(filter, changed)
        expect(outcome.matched).toBe(false)
        expect(outcome.reasons.some((r) => r.startsWith(`${renderPath("payload", path)}: `))).toBe(true)
      }
    },
    { fastCheck: runs }
  )

  it.prop(
    "not_in never matches a present value it lists, and always matches an absent field",
    [fc.tuple(fieldPath, fc.array(jsonValue({ maxDepth: 2 }), { minLength: 1, maxLength: 4 }), jsonValue(), fc.nat())],
    ([[path, values, base, pick]]) => {
      const filter = parsed(nest(path, { not_in: values }))
      const listed = values[pick % values.length]
      expect(evaluate(filter, setAt(base, path, listed))).toBe(false)
      expect(evaluate(filter, setAt(base, path, [listed]))).toBe(false)
      expect(evaluate(filter, setAt(base, path.slice(0, -1), {}))).toBe(true)
    },
    { fastCheck: runs }
  )

  it.prop(
    "parse reads back what serialize writes",
    [fieldsArb],
    ([filter]) => {
      const json = serialize(filter)
      const again = parse(json)
      expect(again).toEqual(Either.right(filter))
    },
    { fastCheck: runs }
  )

  it.prop(
    "evaluate agrees with explain, and a match has no reasons",
    [fieldsArb, jsonValue()],
    ([filter, payload]) => {
      const outcome = explain(filter, payload)
      expect(evaluate(filter, payload)).toBe(outcome.matched)
      expect(outcome.reasons.length === 0).toBe(outcome.matched)
    },
    { fastCheck: runs }
  )

  it.prop(
    "the parser never throws; a rejection names a path present in the input",
    [fc.oneof(jsonValue(), filterishArb, fc.dictionary(fc.string({ maxLength: 4 }), filterishArb, { maxKeys: 3 }))],
    ([input]) => {
      const result = parse(input, { root: "trigger.filter.payload" })
      if (Either.isLeft(result)) {
        const error = result.left
        expect(resolves(input, error.path)).toBe(true)
        expect(error.field).toBe(renderPath("trigger.filter.payload", error.path))
        expect(error.message.startsWith(`${error.field}: `)).toBe(true)
      } else {
        expect(parse(serialize(result.right))).toEqual(result)
      }
    },
    { fastCheck: runs }
  )
})

describe("PayloadFilter: parse errors name the path", () => {
  it.each([
    ["an array", [1], "payload", "must be a JSON object, got an array"],
    ["null", null, "payload", "got null"],
    ["a string", "opened", "payload", "got a string"],
    ["a scalar where values belong", { action: "opened" }, "payload.action", "must be an array of allowed values"],
    ["a boolean where values belong", { draft: false }, "payload.draft", "got a boolean"],
    ["a nested scalar", { pull_request: { draft: null } }, "payload.pull_request.draft", "got null"],
    ["an empty object below the top", { sender: {} }, "payload.sender", "empty object"],
    ["in that is not an array", { action: { in: "opened" } }, "payload.action.in", "in must be an array"],
    ["not_in that is not an array", { action: { not_in: { a: 1 } } }, "payload.action.not_in", "not_in must be an array"],
    ["exists that is not a boolean", { action: { exists: "true" } }, "payload.action.exists", "exists must be a boolean"],
    ["an unknown operator next to a known one", { action: { in: ["a"], nin: ["b"] } }, "payload.action.nin", "not an operator"],
    ["field names mixed with operators", { a: { exists: true, b: [1] } }, "payload.a.b", "cannot mix"],
    ["a non-JSON allowed value", { a: [1, undefined] }, "payload.a[1]", "not a JSON value"],
    ["a non-finite number", { a: { not_in: [Number.NaN] } }, "payload.a.not_in[0]", "finite"],
    ["a function inside an allowed object", { a: { in: [{ f: () => 1 }] } }, "payload.a.in[0].f", "function"],
    ["a class instance as a value", { a: [new Date(0)] }, "payload.a[0]", "an object"],
    ["a key that is not an identifier", { "a.b": "x" }, 'payload["a.b"]', "must be an array"]
  ])("rejects %s", (_, input, field, problem) => {
    const error = failure(input)
    expect(error._tag).toBe("PayloadFilterError")
    expect(error.field).toBe(field)
    expect(error.message).toContain(problem)
    expect(error.message.startsWith(`${field}: `)).toBe(true)
  })

  it("rejects a filter nested deeper than the limit, at the first level too deep", () => {
    const deep = nest(Array.from({ length: MAX_FILTER_DEPTH + 5 }, (_, i) => `f${i}`), [1])
    const error = failure(deep)
    expect(error.path).toHaveLength(MAX_FILTER_DEPTH)
    expect(error.message).toContain("deeper than")
    const deepValue = { a: [nest(Array.from({ length: MAX_FILTER_DEPTH }, () => "k"), 1)] }
    expect(failure(deepValue).message).toContain("deeper than")
    const justFits = nest(Array.from({ length: MAX_FILTER_DEPTH - 1 }, (_, i) => `f${i}`), [1])
    expect(Either.isRight(parse(justFits))).toBe(true)
  })

  it("names paths under the caller's root and converts to invalid_request", () => {
    const error = failure({ action: { exists: 1 } }, "trigger.filter.payload")
    expect(error.field).toBe("trigger.filter.payload.action.exists")
    const invalid = error.toInvalidRequest()
    expect(invalid._tag).toBe("InvalidRequest")
    expect(invalid.errorCode).toBe("invalid_request")
    expect(invalid.field).toBe("trigger.filter.payload.action.exists")
    expect(invalid.message).toBe(error.message)
    const viaEither = parseOrInvalidRequest({ action: 1 })
    expect(Either.isLeft(viaEither) && viaEither.left.field).toBe("payload.action")
    expect(Either.isRight(parseOrInvalidRequest({ action: ["opened"] }))).toBe(true)
  })

  it("renders odd keys and indexes readably", () => {
    expect(renderPath("payload", ["a", "b-c", "x y", 0, "_z"])).toBe('payload.a.b-c["x y"][0]._z')
    expect(renderPath("", ["a", "b"])).toBe("a.b")
  })
})

describe("PayloadFilter: syntax", () => {
  it("reads top-level operator names as field names, nested ones as operators", () => {
    expect(parsed({ in: ["x"] })).toEqual({
      _tag: "Fields",
      fields: [{ name: "in", condition: { _tag: "Operators", in: ["x"] } }]
    })
    expect(matches({ in: ["x"] }, { in: "x" })).toBe(true)
    expect(matches({ exists: { exists: true } }, { exists: 0 })).toBe(true)
    expect(matches({ exists: { exists: true } }, {})).toBe(false)
    expect(parsed({ a: { in: ["x"] } }).fields[0]?.condition).toEqual({ _tag: "Operators", in: ["x"] })
  })

  it("treats a lone misspelt operator as a nested field", () => {
    expect(matches({ action: { nin: ["closed"] } }, { action: { nin: "closed" } })).toBe(true)
    expect(matches({ action: { nin: ["closed"] } }, { action: "opened" })).toBe(false)
  })

  it("serializes `in` alone as a bare array, other operators as an object", () => {
    const filter = parsed({ a: { in: [1] }, b: { in: [2], not_in: [3], exists: true }, c: { d: { exists: false } } })
    expect(serialize(filter)).toEqual({ a: [1], b: { in: [2], not_in: [3], exists: true }, c: { d: { exists: false } } })
  })

  it("accepts an empty top-level filter and empty value lists", () => {
    expect(matches({}, "anything")).toBe(true)
    expect(matches({ a: [] }, { a: 1 })).toBe(false)
    expect(matches({ a: { in: [] } }, { a: [] })).toBe(false)
    expect(matches({ a: { not_in: [] } }, { a: 1 })).toBe(true)
  })
})

describe("PayloadFilter: matching", () => {
  it("matches when every key matches", () => {
    const filter = { action: ["opened", "reopened"], repository: { full_name: ["acme/api"] } }
    expect(matches(filter, { action: "opened", repository: { full_name: "acme/api", id: 7 } })).toBe(true)
    expect(matches(filter, { action: "closed", repository: { full_name: "acme/api" } })).toBe(false)
    expect(matches(filter, { action: "opened", repository: { full_name: "acme/web" } })).toBe(false)
  })

  it("never equates numbers and strings, and compares objects deeply in any key order", () => {
    expect(matches({ n: [1] }, { n: "1" })).toBe(false)
    expect(matches({ n: ["1"] }, { n: 1 })).toBe(false)
    expect(matches({ n: [1] }, { n: 1.0 })).toBe(true)
    expect(matches({ b: [true] }, { b: "true" })).toBe(false)
    expect(matches({ o: [{ a: 1, b: [2] }] }, { o: { b: [2], a: 1 } })).toBe(true)
    expect(matches({ o: [{ a: 1 }] }, { o: { a: 1, b: 2 } })).toBe(false)
    expect(matches({ o: [{ a: 1, b: 2 }] }, { o: { a: 1 } })).toBe(false)
    expect(matches({ o: [{ a: 1 }] }, { o: [{ a: 1 }, 2] })).toBe(true)
    expect(matches({ o: [[1, 2]] }, { o: [2, 1] })).toBe(false)
  })

  it("matches an array field as a whole or by any element", () => {
    expect(matches({ labels: ["bug"] }, { labels: ["ui", "bug"] })).toBe(true)
    expect(matches({ labels: [["ui", "bug"]] }, { labels: ["ui", "bug"] })).toBe(true)
    expect(matches({ labels: ["bug"] }, { labels: [["bug"]] })).toBe(false)
    expect(matches({ labels: ["bug"] }, { labels: [] })).toBe(false)
    expect(matches({ labels: { not_in: ["wontfix"] } }, { labels: ["bug", "wontfix"] })).toBe(false)
    expect(matches({ labels: { not_in: ["wontfix"] } }, { labels: ["bug"] })).toBe(true)
  })

  it("does not reach into arrays of objects", () => {
    expect(matches({ labels: { name: ["bug"] } }, { labels: [{ name: "bug" }] })).toBe(false)
    expect(matches({ labels: [{ name: "bug" }] }, { labels: [{ name: "bug" }, { name: "ui" }] })).toBe(true)
  })

  it("treats absent and null fields as the rules say", () => {
    expect(matches({ a: ["x"] }, {})).toBe(false)
    expect(matches({ a: { not_in: ["x"] } }, {})).toBe(true)
    expect(matches({ a: { not_in: [null] } }, { a: null })).toBe(false)
    expect(matches({ a: [null] }, { a: null })).toBe(true)
    expect(matches({ a: [null] }, {})).toBe(false)
    expect(matches({ a: { exists: false } }, { a: null })).toBe(true)
    expect(matches({ a: { exists: true } }, { a: null })).toBe(false)
    expect(matches({ a: { exists: true } }, { a: false })).toBe(true)
    expect(matches({ a: { exists: false, in: [null] } }, { a: null })).toBe(true)
    expect(matches({ a: { exists: false, in: [null] } }, {})).toBe(false)
  })

  it("treats fields under a missing, null, scalar or array parent as absent", () => {
    const filter = { pr: { draft: { exists: false } } }
    for (const payload of [{}, { pr: null }, { pr: "x" }, { pr: [{ draft: true }] }, null, [1]]) {
      expect(matches(filter, payload)).toBe(true)
      expect(matches({ pr: { draft: [true] } }, payload)).toBe(false)
    }
    expect(matches(filter, { pr: { draft: true } })).toBe(false)
  })

  it("combines in and not_in", () => {
    const filter = { n: { in: [1, 2, 3], not_in: [2] } }
    expect([1, 2, 3, 4].map((n) => matches(filter, { n }))).toEqual([true, false, true, false])
  })

  it("matches everything without a filter", () => {
    expect(evaluate(undefined, { anything: 1 })).toBe(true)
    expect(explain(undefined, "not even an object")).toEqual({ matched: true, reasons: [] })
  })

  it("does not follow inherited properties", () => {
    expect(matches({ constructor: { exists: false } }, {})).toBe(true)
    expect(matches({ toString: { exists: true } }, { a: 1 })).toBe(false)
  })
})

describe("PayloadFilter: explain", () => {
  it("names every failing path with what was found there", () => {
    const filter = parsed({
      action: ["opened"],
      sender: { type: { not_in: ["Bot"] }, login: { exists: true } },
      draft: { exists: false },
      label: ["bug"]
    })
    const outcome = explain(filter, { action: "closed", sender: { type: "Bot", login: null }, draft: true })
    expect(outcome.matched).toBe(false)
    expect(outcome.reasons).toEqual([
      'payload.action: is "closed", expected one of ["opened"]',
      'payload.sender.type: is "Bot", which not_in excludes (["Bot"])',
      "payload.sender.login: is null, expected a value (exists: true)",
      "payload.draft: is true, expected absent or null (exists: false)",
      'payload.label: is absent, expected one of ["bug"]'
    ])
  })

  it("reports an absent field that must exist, under the caller's root", () => {
    const outcome = explain(parsed({ a: { b: { exists: true } } }), {}, { root: "delivery" })
    expect(outcome.reasons).toEqual(["delivery.a.b: is absent, expected a value (exists: true)"])
  })

  it("shortens long values in reasons", () => {
    const outcome = explain(parsed({ body: ["short"] }), { body: "x".repeat(500) })
    const [reason] = outcome.reasons
    expect(reason?.length).toBeLessThan(200)
    expect(reason).toContain("…")
  })

  it("describes values JSON cannot show", () => {
    const outcome = explain(parsed({ n: [1] }), { n: 10n })
    expect(outcome.reasons).toEqual(["payload.n: is bigint, expected one of [1]"])
  })
})
