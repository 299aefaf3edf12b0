/** Narrowing helpers for walking generated JSON (the OpenAPI document). */

/** A JSON object. */
export type Json = Record<string, unknown>

/** Whether a value is a JSON object (not an array, not null). */
export const isJson = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** The entries of a JSON object whose values are objects; none when `u` is not an object. */
export const objectEntries = (u: unknown): Array<[string, Json]> =>
  isJson(u) ? Object.entries(u).filter((entry): entry is [string, Json] => isJson(entry[1])) : []
