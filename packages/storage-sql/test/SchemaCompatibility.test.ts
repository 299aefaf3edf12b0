import { describe, expect, it } from "vitest"
import { type Column, incompatibilities } from "../src/SchemaCompatibility.js"

const column = (table: string, name: string, more: Partial<Column> = {}): Column => ({
  table,
  name,
  type: "TEXT",
  nullable: true,
  hasDefault: false,
  ...more
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
    expect(incompatibilities(before, after)).toEqual([])
  })

  it("names each change the previous release's code would trip over", () => {
    const after = [
      column("runs", "run_id", { nullable: false, type: "BLOB" }),
      column("runs", "status"),
      column("runs", "team_uid", { nullable: false })
    ]
    expect(incompatibilities(before, after)).toEqual([
      "table teams was dropped",
      "column runs.run_id changed type from TEXT to BLOB",
      "column runs.state was dropped or renamed",
      "column runs.team_uid was added NOT NULL without a default: the previous release's INSERTs leave it out"
    ])
  })

  it("refuses a column that took NULL and no longer does, or lost the default old INSERTs relied on", () => {
    const withDefault = [column("runs", "attempt", { nullable: false, hasDefault: true }), column("runs", "state")]
    const after = [column("runs", "attempt", { nullable: false }), column("runs", "state", { nullable: false, hasDefault: true })]
    expect(incompatibilities(withDefault, after)).toEqual([
      "column runs.attempt lost its default",
      "column runs.state no longer takes NULL"
    ])
  })
})
