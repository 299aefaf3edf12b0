import { describe, expect, it } from "vitest"
import * as ReadCache from "../src/ReadCache.js"

const settings = { ttlMs: 1_000, maxEntries: 3 }

describe("ReadCache", () => {
  it("answers an entry until its TTL passes, and drops it when the clock goes back", () => {
    const cache = ReadCache.make<string>(settings)
    cache.put("h1", "t1", "alice", cache.generation(), 10_000)
    expect(cache.get("h1", 10_999)).toBe("alice")
    expect(cache.get("h1", 11_000)).toBeUndefined()
    cache.put("h1", "t1", "alice", cache.generation(), 10_000)
    expect(cache.get("h1", 9_999)).toBeUndefined()
    expect(cache.get("h1", 10_000)).toBeUndefined()
  })

  it("refuses what a lookup read under a generation a change ended", () => {
    const cache = ReadCache.make<string>(settings)
    const before = cache.generation()
    cache.invalidate()
    cache.put("h1", "t1", "stale", before, 10_000)
    expect(cache.get("h1", 10_000)).toBeUndefined()
    expect(cache.size()).toBe(0)
  })

  it("stores nothing while a change is held (its transaction may not have committed), then stores again", () => {
    const cache = ReadCache.make<string>(settings)
    cache.put("h1", "t1", "alice", cache.generation(), 10_000)
    cache.hold(10_100)
    expect(cache.get("h1", 10_100)).toBeUndefined()
    // Read after the change's write returned, before its transaction committed: what was true before.
    cache.put("h1", "t1", "before the commit", cache.generation(), 10_500)
    expect(cache.get("h1", 10_500)).toBeUndefined()
    cache.put("h1", "t1", "after", cache.generation(), 11_100)
    expect(cache.get("h1", 11_100)).toBe("after")
  })

  it("keeps at most maxEntries, dropping the oldest; none with maxEntries 0", () => {
    const cache = ReadCache.make<string>(settings)
    for (const i of [1, 2, 3, 4]) cache.put(`h${i}`, `t${i}`, `v${i}`, cache.generation(), 10_000)
    expect(cache.size()).toBe(3)
    expect(cache.get("h1", 10_000)).toBeUndefined()
    expect(cache.get("h4", 10_000)).toBe("v4")
    const none = ReadCache.make<string>({ ttlMs: 1_000, maxEntries: 0 })
    none.put("h1", "t1", "v1", none.generation(), 10_000)
    expect(none.size()).toBe(0)
  })

  it("updates an entry by its token id, keeping its age; an id it does not hold changes nothing", () => {
    const cache = ReadCache.make<string>(settings)
    cache.put("h1", "t1", "old", cache.generation(), 10_000)
    cache.update("t1", (v) => `${v}+touched`)
    cache.update("t9", () => "never")
    expect(cache.get("h1", 10_500)).toBe("old+touched")
    expect(cache.get("h1", 11_000)).toBeUndefined()
    expect(cache.size()).toBe(0)
  })
})
