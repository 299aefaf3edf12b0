/**
 * Runs whose stored document is not of the current shape (core's RunJson.ts): written before the
 * shape was stored, or by a version whose `RunItem` differed. A list must send them exactly as it
 * sends runs of the current shape (decoded and encoded instead of spliced), their computed flags
 * computed from the run, not the stale ones the old document holds, before and after such a run
 * is written again.
 *
 * `stores()` builds a store and `age(runIds)`, which rewrites those runs' rows as an older
 * version left them: no shape, and a document holding `is_sandbox_running: true` and
 * `is_run_type_cancellable: false` (both wrong for the runs below), and `ageArtifacts(runIds)`,
 * which rewrites those runs' artifact rows likewise: no shape, and a document holding a key
 * `legacy` the current schema does not have (decoding drops it; splicing would send it), and
 * `ageRendered(runIds)`, which gives those runs' kept conversation renderings another shape and
 * other text (`{"id":"legacy"}`), which must never be served. Call
 * `runDocShapeSuite(name, stores)` inside a vitest file.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Option, Schema } from "effect"
import type { Scope } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import type { ExecutionId, PrincipalUid, RunId, TeamUid } from "../src/domain/Ids.js"
import { stepsJson } from "../src/domain/ConversationJson.js"
import { presentRun, runOwnership } from "../src/domain/RunRecords.js"
import { RunItem } from "../src/domain/Run.js"
import type { RunListQuery } from "../src/domain/RunQuery.js"
import { RunStore } from "../src/ports/RunStore.js"
import { creationEvents, makeRun, uid } from "./RunStoreConformance.js"

/** A store, and a way to make its runs look written by an older version. */
export interface AgedStore {
  readonly store: Context.Context<RunStore>
  readonly age: (runIds: ReadonlyArray<RunId>) => Effect.Effect<void, unknown>
  readonly ageArtifacts: (runIds: ReadonlyArray<RunId>) => Effect.Effect<void, unknown>
  /** Rewrites those runs' kept conversation renderings as another shape left them (other text, another shape). */
  readonly ageRendered: (runIds: ReadonlyArray<RunId>) => Effect.Effect<void, unknown>
}

const encodeItem = Schema.encodeSync(RunItem)

const everything = (limit: number): RunListQuery => ({
  limit,
  sort_by: "created_at",
  sort_order: "asc",
  filters: { states: [], metadata: [], q: [] }
})

export const runDocShapeSuite = (name: string, stores: () => Effect.Effect<AgedStore, unknown, Scope.Scope>) =>
  describe(`run documents of another shape (${name})`, () => {
    it.scoped("list as runs of the current shape do, flags computed, before and after they are written again", () =>
      Effect.gen(function* () {
        const { age, ageArtifacts, store: context } = yield* stores()
        const store = Context.get(context, RunStore)
        const team = uid<TeamUid>()
        const creator = uid<PrincipalUid>()
        const viewer: Viewer = { principal_uid: creator, team_uid: team, role: "admin", instance_admin: false }
        const runs = [
          makeRun({ team, creator, state: "QUEUED", metadata: { k: "v" }, artifacts: ["PULL_REQUEST"] }),
          makeRun({ team, creator, state: "SUCCEEDED", title: "done ✓", created_at: Date.now() + 1 }),
          makeRun({ team, creator, state: "PENDING", created_at: Date.now() + 2 })
        ]
        yield* store.create(runs.map((run) => ({ run, events: creationEvents(run) })))
        const expected = runs.map((run) => encodeItem(presentRun(run)))
        const listed = () =>
          Effect.gen(function* () {
            const page = (yield* store.listJson(everything(10), viewer)).rows.map((r) => JSON.parse(r.json))
            // Each run alone reads the same, with its owner.
            for (const run of runs) {
              const alone = Option.getOrThrow(yield* store.getJson(run.item.run_id))
              expect(JSON.parse(alone.json)).toEqual(page.find((r) => r.run_id === run.item.run_id))
              expect(alone.owned).toEqual(runOwnership(run))
            }
            return page
          })
        expect(yield* listed()).toEqual(expected)

        yield* age([runs[0]!.item.run_id, runs[1]!.item.run_id])
        expect(yield* listed()).toEqual(expected)
        // A page cut after an aged run continues after it.
        const page = yield* store.listJson(everything(1), viewer)
        const again = yield* store.list(everything(1), viewer)
        expect(page.page_info).toEqual(again.page_info)

        // Written again (a transition), the run is stored in the current shape and lists alike.
        yield* store.update(runs[0]!.item.run_id, { state: "QUEUED" }, runs[0]!, [])
        expect(yield* listed()).toEqual(expected)

        // A run of the current shape whose artifact is of another is decoded, not spliced.
        yield* ageArtifacts([runs[0]!.item.run_id])
        expect(yield* listed()).toEqual(expected)
      }))
  
    it.scoped("a conversation rendered under another shape is folded again, not served", () =>
      Effect.gen(function* () {
        const { ageRendered, store: context } = yield* stores()
        const store = Context.get(context, RunStore)
        const run = makeRun({ team: uid<TeamUid>(), creator: uid<PrincipalUid>(), state: "SUCCEEDED" })
        yield* store.create([{ run, events: creationEvents(run) }])
        const runId = run.item.run_id
        const execution = uid<ExecutionId>()
        yield* store.appendConversation(runId, execution, { seq: 1, ops: [{ op: "step", key: 1, parent: null, id: "s1", at: 1_700_000_000_000 }] })
        const [folded] = yield* store.executionConversations(runId)
        if (folded?._tag !== "Folded") return yield* Effect.dieMessage(`expected a folded execution, got ${folded?._tag}`)
        const json = [...stepsJson(folded.steps, true)].join("")
        yield* store.keepRendered(runId, { execution_id: execution, json, parts: 1 })
        expect(yield* store.executionConversations(runId)).toEqual([{ _tag: "Rendered", json }])
        yield* ageRendered([runId])
        expect(yield* store.executionConversations(runId)).toEqual([folded])
      }))
  })
