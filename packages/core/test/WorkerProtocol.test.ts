import { Option } from "effect"
import { describe, expect, it } from "vitest"
import * as WorkerProtocol from "../src/domain/WorkerProtocol.js"

const { agree, only, rangeSaid, spoken } = WorkerProtocol

describe("WorkerProtocol", () => {
  it("sides one minor release apart agree on the older one's newest protocol", () => {
    expect(agree(spoken, only(spoken.oldest))).toEqual(Option.some(spoken.oldest))
    expect(agree(spoken, { oldest: spoken.newest, newest: spoken.newest + 1 })).toEqual(Option.some(spoken.newest))
    expect(agree(spoken, spoken)).toEqual(Option.some(spoken.newest))
  })

  it("sides further apart agree on none", () => {
    expect(agree(spoken, only(spoken.oldest - 1))).toEqual(Option.none())
    expect(agree(spoken, { oldest: spoken.newest + 1, newest: spoken.newest + 2 })).toEqual(Option.none())
  })

  it("a server that says nothing is of release 0.1, which speaks protocol 3 alone", () => {
    expect(rangeSaid({})).toEqual(only(3))
    expect(rangeSaid({ protocol: 5, oldest_protocol: 4 })).toEqual({ oldest: 4, newest: 5 })
    expect(agree(spoken, rangeSaid({}))).toEqual(Option.some(3))
  })

  it("only protocol 4 on takes a stopping worker's hand-over", () => {
    expect(WorkerProtocol.handsOver(3)).toBe(false)
    expect(WorkerProtocol.handsOver(4)).toBe(true)
  })
})
