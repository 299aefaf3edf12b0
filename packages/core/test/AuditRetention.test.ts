/** The audit log's retention sweep, on the TestClock over the in-memory log. */
import { describe, expect, it } from "@effect/vitest"
import { DateTime, Effect, TestClock } from "effect"
import { AuditEntry } from "../src/domain/Audit.js"
import type { AuditEntryId, TeamUid } from "../src/domain/Ids.js"
import { formatUuidV7 } from "../src/domain/Ids.js"
import { AUDIT_PRUNE_BATCH, prunePass } from "../src/engine/AuditRetention.js"
import { AuditLog } from "../src/ports/AuditLog.js"
import { memoryStorage } from "../testing/index.js"

const DAY = 24 * 60 * 60 * 1000
const NOW = Date.UTC(2026, 10, 28)
const TEAM = "tEaMtEaMtEaMtEaMtEaM01" as TeamUid

const entryAt = (at: number, n: number) =>
  new AuditEntry({
    id: formatUuidV7(at, new Uint8Array(10).fill(n % 256)) as AuditEntryId,
    at: DateTime.unsafeMake(at),
    team_uid: TEAM,
    actor: { principal_uid: null, display_name: null, token_id: null, run_id: null, instance_admin: false },
    action: "run.create",
    resource: { type: "run", id: null },
    outcome: "succeeded",
    error_code: null,
    origin: { address: null, user_agent: null }
  })

describe("audit retention", () => {
  it.effect("removes entries older than the retention, a batch at a time (at once again while a batch was full)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const log = yield* AuditLog
      // A batch and one more entries past 30 days, and 3 within them.
      for (let i = 0; i <= AUDIT_PRUNE_BATCH; i++) yield* log.record(entryAt(NOW - 40 * DAY + i, i))
      for (let i = 0; i < 3; i++) yield* log.record(entryAt(NOW - 29 * DAY + i, i))
      const pass = prunePass(30, 60_000)
      expect(yield* pass).toBe(0)
      expect(yield* pass).toBe(60_000)
      const left = yield* log.list({ team_uid: TEAM, limit: 10, order: "oldest_first" })
      expect(left.map((e) => DateTime.toEpochMillis(e.at))).toEqual([0, 1, 2].map((i) => NOW - 29 * DAY + i))
      expect(yield* pass).toBe(60_000)
    }).pipe(Effect.provide(memoryStorage)))
})
