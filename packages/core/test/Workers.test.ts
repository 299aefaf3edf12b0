import { describe, expect, it } from "@effect/vitest"
import { Arbitrary } from "effect"
import * as fc from "fast-check"
import type { ExecutionId, TeamUid } from "../src/domain/Ids.js"
import type { StoredRun } from "../src/ports/RunStore.js"
import { RunItem } from "../src/domain/Run.js"
import type { RunState } from "../src/domain/RunState.js"
import { holds } from "../src/domain/RunRecords.js"
import { isWorkersRun } from "../src/services/Workers.js"

const HOLDER = "01a208ee-b8be-7a20-a79a-f1c93d6c2eee" as ExecutionId
const OTHER = "01a208ee-b920-7839-9fb9-bc08cd6c7240" as ExecutionId
const TEAM = "AAAAAAAAAAAAAAAAAAAAAA" as TeamUid

const item = Arbitrary.make(RunItem)

/** A run held by HOLDER (CLAIMED or INPROGRESS) for worker "w1" of TEAM. */
const current = fc.tuple(item, fc.constantFrom<RunState>("CLAIMED", "INPROGRESS"), fc.integer({ min: 0, max: 1e12 }), fc.boolean())
  .map(([i, state, expires, conversation]): StoredRun => ({
    item: new RunItem({ ...i, state, agent_config: { ...i.agent_config, worker_host: "w1" } }),
    team_uid: TEAM,
    lease: { execution_id: HOLDER, expires_at: expires },
    at_capacity: false,
    sandbox_retained: false,
    has_conversation: conversation
  }))

describe("a worker's runs", () => {
  it("a worker's runs are those of its team addressed to its id; an execution holds a run under its lease only", () => {
    fc.assert(fc.property(current, (run) => {
      expect(isWorkersRun(run, { team_uid: TEAM, worker_id: "w1" })).toBe(true)
      expect(isWorkersRun(run, { team_uid: TEAM, worker_id: "w2" })).toBe(false)
      expect(isWorkersRun(run, { team_uid: "CCCCCCCCCCCCCCCCCCCCCC" as TeamUid, worker_id: "w1" })).toBe(false)
      expect(holds(run, HOLDER)).toBe(true)
      expect(holds(run, OTHER)).toBe(false)
    }))
  })
})
