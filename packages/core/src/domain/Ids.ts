/**
 * Identifiers. Runs, conversations and executions have UUIDv7 ids (time-ordered); every other
 * resource has a 22-character base62 id. The literal `empty-environment` is a list-filter sentinel
 * and is never accepted as an id.
 */
import { Clock, Context, Effect, Encoding, Layer, Schema } from "effect"
import type { FastCheck } from "effect"

const uuidV7Pattern = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const uid22Pattern = /^[A-Za-z0-9]{22}$/

/** The filter sentinel meaning "runs with no environment"; never an id. */
export const EMPTY_ENVIRONMENT = "empty-environment"

const uuidV7Arbitrary = () => (fc: typeof FastCheck) =>
  fc.tuple(fc.integer({ min: 0, max: 2 ** 48 - 1 }), fc.uint8Array({ minLength: 10, maxLength: 10 }))
    .map(([millis, random]) => formatUuidV7(millis, random))

const uid22Arbitrary = () => (fc: typeof FastCheck) =>
  fc.stringMatching(uid22Pattern)

const UuidV7 = (what: string) =>
  Schema.String.pipe(
    Schema.filter((s) => uuidV7Pattern.test(s) || `${what} must be a lowercase UUIDv7`, {
      description: `${what}: a UUIDv7 (time-ordered), lowercase`,
      jsonSchema: { format: "uuid", pattern: uuidV7Pattern.source },
      arbitrary: uuidV7Arbitrary
    })
  )

const Uid22 = (what: string) =>
  Schema.String.pipe(
    Schema.filter(
      (s) => {
        if (s === EMPTY_ENVIRONMENT) return `${what} cannot be "${EMPTY_ENVIRONMENT}"`
        return uid22Pattern.test(s) || `${what} must be exactly 22 characters of [A-Za-z0-9]`
      },
      {
        description: `${what}: exactly 22 characters of [A-Za-z0-9]`,
        jsonSchema: { pattern: uid22Pattern.source },
        arbitrary: uid22Arbitrary
      }
    )
  )

export const RunId = UuidV7("run id").pipe(Schema.brand("RunId"))
export type RunId = typeof RunId.Type
export const ConversationId = UuidV7("conversation id").pipe(Schema.brand("ConversationId"))
export type ConversationId = typeof ConversationId.Type
export const ExecutionId = UuidV7("execution id").pipe(Schema.brand("ExecutionId"))
export type ExecutionId = typeof ExecutionId.Type
export const AuditEntryId = UuidV7("audit entry id").pipe(Schema.brand("AuditEntryId"))
export type AuditEntryId = typeof AuditEntryId.Type

export const ScheduleId = Uid22("schedule id").pipe(Schema.brand("ScheduleId"))
export type ScheduleId = typeof ScheduleId.Type
export const EnvironmentUid = Uid22("environment uid").pipe(Schema.brand("EnvironmentUid"))
export type EnvironmentUid = typeof EnvironmentUid.Type
export const WebhookUid = Uid22("webhook uid").pipe(Schema.brand("WebhookUid"))
export type WebhookUid = typeof WebhookUid.Type
export const DeliveryId = Uid22("delivery id").pipe(Schema.brand("DeliveryId"))
export type DeliveryId = typeof DeliveryId.Type
export const OutboundWebhookUid = Uid22("outbound webhook uid").pipe(Schema.brand("OutboundWebhookUid"))
export type OutboundWebhookUid = typeof OutboundWebhookUid.Type
export const OutboundDeliveryId = Uid22("outbound delivery id").pipe(Schema.brand("OutboundDeliveryId"))
export type OutboundDeliveryId = typeof OutboundDeliveryId.Type
export const AutomationId = Uid22("automation id").pipe(Schema.brand("AutomationId"))
export type AutomationId = typeof AutomationId.Type
export const TeamUid = Uid22("team uid").pipe(Schema.brand("TeamUid"))
export type TeamUid = typeof TeamUid.Type
export const PrincipalUid = Uid22("principal uid").pipe(Schema.brand("PrincipalUid"))
export type PrincipalUid = typeof PrincipalUid.Type
export const TokenId = Uid22("token id").pipe(Schema.brand("TokenId"))
export type TokenId = typeof TokenId.Type

export const isUuidV7 = (s: string): boolean => uuidV7Pattern.test(s)
export const isUid22 = (s: string): boolean => uid22Pattern.test(s)

const hex = (bytes: Uint8Array, from: number, to: number) => Encoding.encodeHex(bytes.subarray(from, to))

/**
 * Formats a UUIDv7 from a millisecond timestamp and 10 random bytes (RFC 9562 §5.7):
 * 48 bits of time, version 7, 12 random bits, the variant, 62 random bits.
 */
export const formatUuidV7 = (millis: number, random: Uint8Array): string => {
  const b = new Uint8Array(16)
  let t = Math.max(0, Math.floor(millis))
  for (let i = 5; i >= 0; i--) {
    b[i] = t % 256
    t = Math.floor(t / 256)
  }
  for (let i = 0; i < 10; i++) b[6 + i] = random[i] ?? 0
  b[6] = 0x70 | (b[6]! & 0x0f)
  b[8] = 0x80 | (b[8]! & 0x3f)
  return `${hex(b, 0, 4)}-${hex(b, 4, 6)}-${hex(b, 6, 8)}-${hex(b, 8, 10)}-${hex(b, 10, 16)}`
}

/** The millisecond timestamp carried by a UUIDv7. */
export const uuidV7Millis = (id: string): number => parseInt(id.slice(0, 8) + id.slice(9, 13), 16)

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/**
 * Formats 22 base62 characters from random bytes, using only bytes below 248 (= 4 × 62) so that
 * every character is equally likely. Returns undefined when the bytes run out first.
 */
export const formatUid22 = (random: Uint8Array): string | undefined => {
  let out = ""
  for (const byte of random) {
    if (byte >= 248) continue
    out += BASE62[byte % 62]
    if (out.length === 22) return out
  }
  return undefined
}

/** Port: id generation (random source and clock), so tests can make ids deterministic. */
export class Ids extends Context.Tag("@agent-runs/core/Ids")<
  Ids,
  {
    readonly runId: Effect.Effect<RunId>
    readonly executionId: Effect.Effect<ExecutionId>
    readonly auditEntryId: Effect.Effect<AuditEntryId>
    /** A fresh 22-character base62 id, branded by the caller's schema. */
    readonly uid22: Effect.Effect<string>
  }
>() {}

/** Random bytes are drawn from the platform's source this many at a time. */
const POOL_BYTES = 4_096
let pool = new Uint8Array(0)
let used = 0

/**
 * Fresh bytes from the platform's cryptographic random source (Web Crypto, a JS global), drawn a
 * block at a time (one call serves many ids; no byte is handed out twice).
 */
const randomBytes = (n: number): Uint8Array => {
  if (n > POOL_BYTES) return globalThis.crypto.getRandomValues(new Uint8Array(n))
  if (used + n > pool.length) {
    pool = globalThis.crypto.getRandomValues(new Uint8Array(POOL_BYTES))
    used = 0
  }
  used += n
  return pool.slice(used - n, used)
}

/**
 * UUIDv7s that increase within the process (RFC 9562 §6.2, method 1): the 12 bits after the version
 * are a counter, started at a random value below 2048 each millisecond and incremented for each id
 * of the same millisecond (past 4095, which needs 2048 ids in one millisecond, the next
 * millisecond is borrowed and the count goes on there). So ids made one after the
 * other sort in the order they were made, even within one millisecond (a run list's tie-breaker).
 */
const monotonicUuidV7 = () => {
  let lastMillis = -1
  let counter = 0
  return (now: number): string => {
    const random = randomBytes(10)
    // A later millisecond, or a clock that jumped back more than a second (a test's clock): afresh.
    // Within a second behind (a borrowed millisecond, a small step back) the count goes on.
    if (now > lastMillis || lastMillis - now > 1_000) {
      lastMillis = now
      counter = ((random[0]! & 0x07) << 8) | random[1]!
    } else if (counter < 0xfff) {
      counter += 1
    } else {
      lastMillis += 1
      counter = 0
    }
    random[0] = counter >> 8
    random[1] = counter & 0xff
    return formatUuidV7(lastMillis, random)
  }
}

const nextUuidV7 = monotonicUuidV7()
const uuidV7 = Effect.map(Clock.currentTimeMillis, nextUuidV7)

/** Ids from the cryptographic random source and the Clock (TestClock in tests). */
export const IdsLive = Layer.succeed(Ids, {
  runId: Effect.map(uuidV7, (s) => s as RunId),
  executionId: Effect.map(uuidV7, (s) => s as ExecutionId),
  auditEntryId: Effect.map(uuidV7, (s) => s as AuditEntryId),
  uid22: Effect.sync(() => {
    for (;;) {
      const id = formatUid22(randomBytes(32))
      if (id !== undefined) return id
    }
  })
})
