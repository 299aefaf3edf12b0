/**
 * `RawStorage` of the memory stores: everything the shared state holds, as bytes. Every value
 * reachable from the state (map keys and values, set members, array items, object fields) is one
 * byte sequence: a string as its UTF-8, sealed secrets as their bytes, numbers and booleans as
 * their text. A needle is found when one of them contains its UTF-8 bytes.
 */
import type { Context } from "effect"
import { Effect } from "effect"
import type { RawStorage } from "../Stores.js"
import type { MemoryState } from "./MemoryState.js"

/** Bytes as a string of one char per byte, so that `includes` searches bytes. */
const byteString = (bytes: Uint8Array): string => {
  let out = ""
  for (let i = 0; i < bytes.length; i += 8192) out += String.fromCharCode(...bytes.subarray(i, i + 8192))
  return out
}

const utf8 = (text: string): string => byteString(new TextEncoder().encode(text))

/** Every byte sequence reachable from `root`. */
const byteSequences = (root: unknown): Array<string> => {
  const out: Array<string> = []
  const seen = new Set<object>()
  const walk = (value: unknown): void => {
    switch (typeof value) {
      case "string":
        out.push(utf8(value))
        return
      case "number":
      case "bigint":
      case "boolean":
        out.push(String(value))
        return
      case "object": {
        if (value === null || seen.has(value)) return
        seen.add(value)
        if (value instanceof Uint8Array) out.push(byteString(value))
        else if (value instanceof Map) {
          for (const [k, v] of value) {
            walk(k)
            walk(v)
          }
        } else if (value instanceof Set || Array.isArray(value)) for (const v of value) walk(v)
        else for (const v of Object.values(value)) walk(v)
        return
      }
      default:
        return
    }
  }
  walk(root)
  return out
}

/** RawStorage over the shared state. */
export const makeMemoryRawStorage = (state: MemoryState): Context.Tag.Service<RawStorage> => ({
  contains: (needle) =>
    Effect.sync(() => {
      const wanted = utf8(needle)
      return byteSequences(state).some((bytes) => bytes.includes(wanted))
    })
})
