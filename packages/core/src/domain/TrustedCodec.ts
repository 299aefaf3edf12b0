/**
 * Decoding and encoding of values that are already known to be valid, without checking them again
 * (docs/performance.md). Two places in the service hold such values: the rows this service wrote
 * (every field was checked by its schema on the way in) and the response bodies its own code built
 * (model instances). Schema's decoders and encoders check every field, filter and brand each time;
 * on the run list that was a third of a request's CPU time (20 runs decoded from their rows, then
 * encoded again for the response).
 *
 * The codec walks the schema's AST once and applies only its transformations (timestamps to and
 * from strings, classes built from their fields, renamed and defaulted keys, keys outside the
 * schema dropped) and skips its refinements. It is never for input from outside: request bodies
 * and query strings keep the full decoders. If a value does not have the schema's shape (a union
 * member that matches none, a transformation that fails), the full codec runs instead and its
 * result or error is the answer; the property tests check that both give the same result on every
 * model this is used for.
 */
import { Either, Option, ParseResult, Schema, SchemaAST as AST } from "effect"

type Step = (value: unknown) => unknown
/** A value as a step reads it (its shape is the schema's: that is the codec's premise). */
type Loose = Record<PropertyKey, unknown>

/** Thrown by a step when the value is not of the shape the schema says: the full codec decides. */
class NotTrusted extends Error {}

const identity: Step = (value) => value

const unwrap = (result: unknown): unknown => {
  if (Either.isEither(result)) {
    if (Either.isRight(result)) return result.right
    throw new NotTrusted()
  }
  // A transformation that returns a real effect (none of this service's models): the full codec.
  throw new NotTrusted()
}

const isIdentityLeaf = (ast: AST.AST): boolean => {
  switch (ast._tag) {
    case "Declaration":
    case "Literal":
    case "UniqueSymbol":
    case "UndefinedKeyword":
    case "VoidKeyword":
    case "NeverKeyword":
    case "UnknownKeyword":
    case "AnyKeyword":
    case "StringKeyword":
    case "NumberKeyword":
    case "BooleanKeyword":
    case "BigIntKeyword":
    case "SymbolKeyword":
    case "ObjectKeyword":
    case "Enums":
    case "TemplateLiteral":
      return true
    default:
      return false
  }
}

const compile = (ast: AST.AST, decoding: boolean, memo: Map<AST.AST, Step>): Step => {
  const known = memo.get(ast)
  if (known !== undefined) return known
  let step: Step
  // A placeholder while compiling, for schemas that refer to themselves through a Suspend.
  const compiled: { step?: Step } = {}
  memo.set(ast, (value) => compiled.step!(value))
  if (isIdentityLeaf(ast)) {
    step = identity
  } else {
    switch (ast._tag) {
      case "Refinement":
        step = compile(ast.from, decoding, memo)
        break
      case "Suspend": {
        let inner: Step | undefined
        step = (value) => (inner ??= compile(ast.f(), decoding, memo))(value)
        break
      }
      case "Transformation":
        step = transformation(ast, decoding, memo)
        break
      case "TypeLiteral":
        step = typeLiteral(ast, decoding, memo)
        break
      case "TupleType":
        step = tuple(ast, decoding, memo)
        break
      case "Union":
        step = union(ast, decoding, memo)
        break
      default:
        step = () => {
          throw new NotTrusted()
        }
    }
  }
  compiled.step = step
  memo.set(ast, step)
  return step
}

const transformation = (ast: AST.Transformation, decoding: boolean, memo: Map<AST.AST, Step>): Step => {
  const from = compile(ast.from, decoding, memo)
  const to = compile(ast.to, decoding, memo)
  const t = ast.transformation
  switch (t._tag) {
    case "FinalTransformation":
      return decoding
        ? (value) => {
          const a = from(value)
          return to(unwrap(t.decode(a, {}, ast, value)))
        }
        : (value) => {
          const a = to(value)
          return from(unwrap(t.encode(a, {}, ast, value)))
        }
    case "ComposeTransformation":
      return decoding ? (value) => to(from(value)) : (value) => from(to(value))
    case "TypeLiteralTransformation": {
      const moves = t.propertySignatureTransformations.map((pst) =>
        decoding ? { from: pst.from, to: pst.to, f: pst.decode } : { from: pst.to, to: pst.from, f: pst.encode }
      )
      const moved = new Set(moves.map((move) => move.from))
      // A new object (deleting keys would slow every later access to it down).
      const rename = (input: Loose) => {
        const out: Record<string, unknown> = {}
        for (const key of Object.keys(input)) if (!moved.has(key)) out[key] = input[key]
        for (const move of moves) {
          const option = move.f(
            Object.prototype.hasOwnProperty.call(input, move.from) ? Option.some(input[move.from as string]) : Option.none()
          )
          if (Option.isSome(option)) out[move.to as string] = option.value
        }
        return out
      }
      return decoding ? (value) => to(rename(from(value) as Loose)) : (value) => from(rename(to(value) as Loose))
    }
  }
}

const typeLiteral = (ast: AST.TypeLiteral, decoding: boolean, memo: Map<AST.AST, Step>): Step => {
  const properties = ast.propertySignatures.map((ps) => ({
    name: ps.name,
    optional: ps.isOptional,
    step: compile(ps.type, decoding, memo)
  }))
  const names = new Set(properties.map((p) => p.name))
  const indexes = ast.indexSignatures.map((is) => {
    let key: AST.AST = is.parameter
    while (key._tag === "Refinement") key = key.from
    if (key._tag !== "StringKeyword") throw new Error(`TrustedCodec: an index signature on ${key._tag}`)
    return compile(is.type, decoding, memo)
  })
  return (input) => {
    if (typeof input !== "object" || input === null) throw new NotTrusted()
    const value = input as Loose
    const out: Loose = {}
    for (const p of properties) {
      if (!Object.prototype.hasOwnProperty.call(value, p.name)) {
        if (p.optional) continue
        throw new NotTrusted()
      }
      out[p.name] = p.step(value[p.name])
    }
    for (const step of indexes) {
      for (const key of Object.keys(value)) {
        if (!names.has(key)) out[key] = step(value[key])
      }
    }
    return out
  }
}

const tuple = (ast: AST.TupleType, decoding: boolean, memo: Map<AST.AST, Step>): Step => {
  const elements = ast.elements.map((e) => ({ optional: e.isOptional, step: compile(e.type, decoding, memo) }))
  const rest = ast.rest.map((r) => compile(r.type, decoding, memo))
  const [head, ...tail] = rest
  return (value) => {
    if (!Array.isArray(value)) throw new NotTrusted()
    const out: Array<unknown> = []
    let i = 0
    for (const e of elements) {
      if (i >= value.length) {
        if (e.optional) break
        throw new NotTrusted()
      }
      out.push(e.step(value[i++]))
    }
    if (head !== undefined) {
      const end = value.length - tail.length
      for (; i < end; i++) out.push(head(value[i]))
      for (const step of tail) out.push(step(value[i++]))
    }
    if (i < value.length) throw new NotTrusted()
    return out
  }
}

/**
 * A quick test that holds for every value the AST's full check accepts (a necessary condition):
 * the type of a value, a literal, the literal keys of an object. `undefined` when there is none
 * cheaper than the full check.
 */
const necessary = (ast: AST.AST): ((value: unknown) => boolean) | undefined => {
  switch (ast._tag) {
    case "Literal":
      return (value) => value === ast.literal
    case "UndefinedKeyword":
    case "VoidKeyword":
      return (value) => value === undefined
    case "StringKeyword":
    case "TemplateLiteral":
      return (value) => typeof value === "string"
    case "NumberKeyword":
      return (value) => typeof value === "number"
    case "BooleanKeyword":
      return (value) => typeof value === "boolean"
    case "TupleType":
      return Array.isArray
    case "Refinement":
      return necessary(ast.from)
    case "TypeLiteral": {
      const literals = ast.propertySignatures.flatMap((ps) =>
        !ps.isOptional && ps.type._tag === "Literal" ? [{ name: ps.name, literal: ps.type.literal }] : []
      )
      const required = ast.propertySignatures.filter((ps) => !ps.isOptional).map((ps) => ps.name)
      return (value) =>
        typeof value === "object" && value !== null && !Array.isArray(value) &&
        required.every((name) => Object.prototype.hasOwnProperty.call(value, name)) &&
        literals.every(({ literal, name }) => (value as Loose)[name] === literal)
    }
    default:
      return undefined
  }
}

const union = (ast: AST.Union, decoding: boolean, memo: Map<AST.AST, Step>): Step => {
  // The first member whose input side accepts the value, as the full codec tries them in order;
  // the full check of a member runs only when a cheaper necessary condition cannot tell.
  const members = ast.types.map((member) => {
    const side = decoding ? AST.encodedAST(member) : AST.typeAST(member)
    const full = ParseResult.is(Schema.make(side))
    const quick = necessary(side)
    // A literal, `undefined` or a keyword: the quick test is the whole check.
    const exact = side._tag === "Literal" || side._tag === "UndefinedKeyword" || side._tag === "VoidKeyword" ||
      side._tag === "StringKeyword" || side._tag === "NumberKeyword" || side._tag === "BooleanKeyword"
    return { quick, exact, full, step: compile(member, decoding, memo) }
  })
  return (value) => {
    let candidate: (typeof members)[number] | undefined
    let count = 0
    for (const member of members) {
      if (member.quick !== undefined && !member.quick(value)) continue
      if (member.exact && candidate === undefined) return member.step(value)
      candidate ??= member
      count++
    }
    // One member can be it: a value of the type (this codec's premise) is of that member.
    if (count === 1) return candidate!.step(value)
    for (const member of members) {
      if ((member.quick === undefined || member.quick(value)) && member.full(value)) return member.step(value)
    }
    throw new NotTrusted()
  }
}

type Codec = (input: unknown) => Either.Either<unknown, ParseResult.ParseError>

// One codec per schema and direction: callers may ask for one on every call.
const decoders = new WeakMap<AST.AST, Codec>()
const encoders = new WeakMap<AST.AST, Codec>()

const make = (ast: AST.AST, decoding: boolean, full: Codec): Codec => {
  const fast = compile(ast, decoding, new Map())
  return (input) => {
    try {
      return Either.right(fast(input))
    } catch (error) {
      if (error instanceof NotTrusted) return full(input)
      throw error
    }
  }
}

/**
 * A decoder for data this service wrote with `schema`: the transformations only, no checks
 * (falls back to the full decoder, and its error, when the value does not have the shape).
 */
export const decoder = <A, I>(schema: Schema.Schema<A, I, never>): (input: unknown) => Either.Either<A, ParseResult.ParseError> => {
  let codec = decoders.get(schema.ast)
  if (codec === undefined) {
    codec = make(schema.ast, true, Schema.decodeUnknownEither(schema))
    decoders.set(schema.ast, codec)
  }
  return codec as (input: unknown) => Either.Either<A, ParseResult.ParseError>
}

/**
 * An encoder for values this service's own code built as `schema`'s type: the transformations
 * only, no checks (falls back to the full encoder when the value does not have the shape).
 */
export const encoder = <A, I>(schema: Schema.Schema<A, I, never>): (value: A) => Either.Either<I, ParseResult.ParseError> => {
  let codec = encoders.get(schema.ast)
  if (codec === undefined) {
    codec = make(schema.ast, false, Schema.encodeUnknownEither(schema) as Codec)
    encoders.set(schema.ast, codec)
  }
  return codec as (value: A) => Either.Either<I, ParseResult.ParseError>
}
