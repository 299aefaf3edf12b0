import { VERSION } from "@agent-runs/core/domain/Release"
import { describe, expect, it } from "vitest"
import { previous } from "../src/Releases.js"
import { type Column, type Description, incompatibilities, type UniqueIndex } from "../src/SchemaCompatibility.js"

const column = (table: string, name: string, more: Partial<Column> = {}): Column => ({
  table,
  name,
  type: "TEXT",
  nullable: true,
  hasDefault: false,
  ...more
})

const schema = (columns: ReadonlyArray<Column>, uniques: ReadonlyArray<UniqueIndex> = [], triggers: Description["triggers"] = []): Description => ({
  columns,
  uniques,
  triggers
})

const before = [column("runs", "run_id", { nullable: false }), column("runs", "state"), column("teams", "uid", { nullable: false })]

describe("SchemaCompatibility.incompatibilities", () => {
  it("accepts what only expands: new tables, columns that take NULL or have a default, NOT NULL loosened", () => {
    const after = [
      ...before.filter((c) => c.name !== "run_id"),
      column("runs", "run_id", { nullable: true }),
      column("runs", "retention"),
      column("runs", "attempt", { nullable: false, hasDefault: true }),
      column("blob_removals", "key", { nullable: false })
    ]
    expect(incompatibilities(schema(before), schema(after))).toEqual([])
  })

  it("names each change of columns the previous release's code would trip over", () => {
    const after = [
      column("runs", "run_id", { nullable: false, type: "BLOB" }),
      column("runs", "status"),
      column("runs", "team_uid", { nullable: false })
    ]
    expect(incompatibilities(schema(before), schema(after))).toEqual([
      "table teams was dropped",
      "column runs.run_id changed type from TEXT to BLOB",
      "column runs.state was dropped or renamed",
      "column runs.team_uid was added NOT NULL without a default: the previous release's INSERTs leave it out"
    ])
  })

  it("refuses a column that took NULL and no longer does, or lost the default old INSERTs relied on", () => {
    const withDefault = [column("runs", "attempt", { nullable: false, hasDefault: true }), column("runs", "state")]
    const after = [column("runs", "attempt", { nullable: false }), column("runs", "state", { nullable: false, hasDefault: true })]
    expect(incompatibilities(schema(withDefault), schema(after))).toEqual([
      "column runs.attempt lost its default",
      "column runs.state no longer takes NULL"
    ])
  })

  it("refuses a dropped unique index or trigger, and a new unique index over old columns only", () => {
    const key = { table: "runs", name: "runs_pkey", columns: "run_id" }
    const withNew = [...before, column("runs", "name")]
    const after = schema(withNew, [
      { table: "runs", name: "runs_state", columns: "state" },
      { table: "runs", name: "runs_name", columns: "run_id,name" },
      { table: "blobs", name: "blobs_key", columns: "key" }
    ])
    expect(incompatibilities(schema(before, [key], [{ table: "runs", name: "runs_outbox" }]), after)).toEqual([
      "unique index runs_pkey on runs(run_id) was dropped: the previous release's ON CONFLICT may name it",
      "unique index runs_state on runs(state) is new over columns the previous release writes: its INSERTs may conflict",
      "trigger runs_outbox on runs was dropped"
    ])
  })
})

describe("Releases", () => {
  it("the previous release is the minor release before this one", () => {
    const [major, minor] = VERSION.split(".").map(Number)
    expect(previous.version).toBe(`${major}.${minor! - 1}.0`)
  })
})
