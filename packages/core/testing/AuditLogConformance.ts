/**
 * The AuditLog conformance suite: entries read back exactly, every filter and page against the
 * reference (`Audit.matchesAudit`, newest id first), the retention sweep, and (for adapters with
 * transactions: `auditLogTransactions`) an entry and the write it records committing together.
 */
import { expect, layer } from "@effect/vitest"
import { DateTime, Effect, Either, Option, Redacted } from "effect"
import type { Layer } from "effect"
import * as fc from "fast-check"
import { AuditEntry, type AuditOrder, type AuditOutcome, matchesAudit } from "../src/domain/Audit.js"
import { type AuditEntryId, IdsLive, Ids, type PrincipalUid, type TeamUid } from "../src/domain/Ids.js"
import type { SecretName } from "../src/domain/Secret.js"
import { AuditLog } from "../src/ports/AuditLog.js"
import { SecretStore } from "../src/ports/SecretStore.js"
import { uid } from "./RunStoreConformance.js"
import type { Stores } from "./Stores.js"

const T0 = Date.UTC(2026, 10, 1)

/** A fresh entry: its id made now (ids increase), with these facts. */
export const entryOf = (facts: {
  readonly team: TeamUid | null
  readonly principal: PrincipalUid | null
  readonly action: string
  readonly resourceType: string
  readonly resourceId: string | null
  readonly outcome: AuditOutcome
  readonly at: number
}) =>
  Effect.map(Effect.flatMap(Ids, (ids) => ids.auditEntryId), (id: AuditEntryId) =>
    new AuditEntry({
      id,
      at: DateTime.unsafeMake(facts.at),
      team_uid: facts.team,
      actor: { principal_uid: facts.principal, display_name: "Ada", token_id: null, run_id: null, instance_admin: false },
      action: facts.action,
      resource: { type: facts.resourceType, id: facts.resourceId },
      outcome: facts.outcome,
      error_code: facts.outcome === "succeeded" ? null : "not_authorized",
      origin: { address: "198.51.100.7", user_agent: "curl/8" }
    })).pipe(Effect.provide(IdsLive))

const wire = (e: AuditEntry) => JSON.stringify(e)

/** Registers the suite against one adapter's stores. */
export const auditLogConformance = <E>(storeLayer: Layer.Layer<Stores, E>): void => {
  layer(storeLayer, { excludeTestServices: true, timeout: "60 seconds" })("AuditLog", (it) => {
    it.effect.prop(
      "lists exactly the entries each filter selects, in either order, page by page",
      [
        fc.array(
          fc.record({
            team: fc.nat({ max: 2 }),
            principal: fc.nat({ max: 2 }),
            action: fc.constantFrom("run.create", "secret.put", "environment.update"),
            resourceId: fc.option(fc.constantFrom("a", "b"), { nil: null }),
            outcome: fc.constantFrom<AuditOutcome>("succeeded", "denied", "failed"),
            offset: fc.nat({ max: 10_000 })
          }),
          { maxLength: 12 }
        ),
        fc.record({
          team: fc.option(fc.nat({ max: 2 }), { nil: undefined }),
          principal: fc.option(fc.nat({ max: 2 }), { nil: undefined }),
          action: fc.option(fc.constantFrom("run.create", "secret.put"), { nil: undefined }),
          resourceId: fc.option(fc.constantFrom("a", "b"), { nil: undefined }),
          outcome: fc.option(fc.constantFrom<AuditOutcome>("succeeded", "denied"), { nil: undefined }),
          since: fc.option(fc.nat({ max: 10_000 }), { nil: undefined }),
          limit: fc.integer({ min: 1, max: 5 }),
          order: fc.constantFrom<AuditOrder>("newest_first", "oldest_first")
        })
      ],
      ([specs, q]) =>
        Effect.gen(function* () {
          const audit = yield* AuditLog
          const teams = [uid<TeamUid>(), uid<TeamUid>(), uid<TeamUid>()]
          const principals = [uid<PrincipalUid>(), uid<PrincipalUid>(), uid<PrincipalUid>()]
          const entries: Array<AuditEntry> = []
          for (const s of specs) {
            const entry = yield* entryOf({
              team: teams[s.team]!,
              principal: principals[s.principal]!,
              action: s.action,
              resourceType: s.action.split(".")[0]!,
              resourceId: s.resourceId,
              outcome: s.outcome,
              at: T0 + s.offset
            })
            yield* audit.record(entry)
            entries.push(entry)
          }
          // Always within this test's teams (other tests' entries live in the same log).
          const filters = {
            team_uid: teams[q.team ?? 0]!,
            ...(q.principal === undefined ? {} : { principal_uid: principals[q.principal]! }),
            ...(q.action === undefined ? {} : { action: q.action }),
            ...(q.resourceId === undefined ? {} : { resource_id: q.resourceId }),
            ...(q.outcome === undefined ? {} : { outcome: q.outcome }),
            ...(q.since === undefined ? {} : { since: T0 + q.since })
          }
          const newest = entries.filter((e) => matchesAudit(e, filters)).sort((a, b) => (a.id < b.id ? 1 : -1))
          const expected = q.order === "newest_first" ? newest : [...newest].reverse()
          const seen: Array<AuditEntry> = []
          let cursor: AuditEntryId | undefined
          for (let page = 0; page <= entries.length; page++) {
            const got = yield* audit.list({ ...filters, limit: q.limit, order: q.order, ...(cursor === undefined ? {} : { cursor }) })
            seen.push(...got)
            if (got.length < q.limit) break
            cursor = got[got.length - 1]!.id
          }
          expect(seen.map(wire)).toEqual(expected.map(wire))
        }),
      { fastCheck: { numRuns: 20 } }
    )

    it.effect("prune removes entries older than the cutoff, oldest first, at most the limit", () =>
      Effect.gen(function* () {
        const audit = yield* AuditLog
        const team = uid<TeamUid>()
        // Far in the past, so other tests' entries are newer than every cutoff here.
        const old = Date.UTC(2001, 0, 1)
        const made: Array<AuditEntry> = []
        for (const offset of [0, 1, 2, 10]) {
          const entry = yield* entryOf({ team, principal: null, action: "run.create", resourceType: "run", resourceId: null, outcome: "succeeded", at: old + offset })
          yield* audit.record(entry)
          made.push(entry)
        }
        expect(yield* audit.prune(old + 5, 2)).toBe(2)
        expect((yield* audit.list({ team_uid: team, limit: 10, order: "newest_first" })).map((e) => e.id)).toEqual([made[3]!.id, made[2]!.id])
        expect(yield* audit.prune(old + 5, 10)).toBe(1)
        expect((yield* audit.list({ team_uid: team, limit: 10, order: "newest_first" })).map((e) => e.id)).toEqual([made[3]!.id])
      }))
  })
}

/** Registers the transaction tests of `recording` (adapters with transactions: the SQL ones). */
export const auditLogTransactions = <E>(storeLayer: Layer.Layer<Stores, E>): void => {
  layer(storeLayer, { excludeTestServices: true, timeout: "60 seconds" })("AuditLog transactions", (it) => {
    it.effect("an entry and the write it records commit together: a failed write keeps no entry, a failed entry no write", () =>
      Effect.gen(function* () {
        const audit = yield* AuditLog
        const secrets = yield* SecretStore
        const team = uid<TeamUid>()
        const entry = (resourceId: string) => entryOf({ team, principal: null, action: "secret.put", resourceType: "secret", resourceId, outcome: "succeeded", at: T0 })
        const put = (name: string) => secrets.put(team, name as SecretName, Redacted.make("v"), T0)
        const ok = yield* entry("A")
        yield* audit.recording(put("A"), () => ok)
        expect(Option.isSome(yield* secrets.get(team, "A" as SecretName))).toBe(true)
        // The write fails after storing: neither stays.
        const failing = yield* entry("B")
        const failed = yield* Effect.either(audit.recording(Effect.zipRight(put("B"), Effect.fail("boom" as const)), () => failing))
        expect(failed).toEqual(Either.left("boom"))
        expect(Option.isNone(yield* secrets.get(team, "B" as SecretName))).toBe(true)
        // The entry cannot be stored (its id is taken): the write is undone.
        const taken = yield* Effect.either(audit.recording(put("C"), () => ok))
        expect(Either.isLeft(taken) && taken.left._tag).toBe("StorageError")
        expect(Option.isNone(yield* secrets.get(team, "C" as SecretName))).toBe(true)
        expect((yield* audit.list({ team_uid: team, limit: 10, order: "newest_first" })).map(wire)).toEqual([wire(ok)])
      }))
  })
}
