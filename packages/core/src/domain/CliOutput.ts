/**
 * Reading an agent CLI's output lines, for the harness adapters' decoders: the output is
 * untrusted, so every reader here is total (never throws) and every number it gives is a safe,
 * non-negative one.
 */

/** A JSON object of a CLI's output. */
export type JsonRecord = Record<string, unknown>

export const isRecord = (value: unknown): value is JsonRecord => typeof value === "object" && value !== null && !Array.isArray(value)

/** The value when it is a string. */
export const stringOf = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

/** A count or a cost: a finite non-negative number, at most `Number.MAX_SAFE_INTEGER`; else 0. */
export const countOf = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.min(value, Number.MAX_SAFE_INTEGER) : 0

/** One output line as a JSON object; undefined for anything else (text, arrays, bad JSON). */
export const parseRecord = (line: string): JsonRecord | undefined => {
  if (!line.trimStart().startsWith("{")) return undefined
  try {
    const value: unknown = JSON.parse(line)
    return isRecord(value) ? value : undefined
  } catch {
    return undefined
  }
}
