/**
 * Trigram similarity exactly as PostgreSQL's `pg_trgm` computes `similarity(a, b)`, so that every
 * storage adapter ranks the run list's `q` the same way (PostgreSQL calls `pg_trgm` itself; the
 * others call this).
 *
 * - A text is cut into words: maximal runs of letters and digits (`\p{L}` and `\p{N}`; anything
 *   else, including `_`, combining marks and emoji, separates words), each lowercased.
 * - Each word is padded with two spaces before and one after; its trigrams are the substrings of
 *   three characters (code points) of the padded word. A text's trigrams are the set of its
 *   words' trigrams.
 * - `similarity = |common| / |union|` of the two sets, rounded to single precision like
 *   `pg_trgm`'s `float4`; 0 when either text has no trigram.
 */

const WORD = /[\p{L}\p{N}]+/gu

/** The set of trigrams of a text, as pg_trgm's `show_trgm` would list them (unordered). */
export const trigrams = (text: string): ReadonlySet<string> => {
  const out = new Set<string>()
  for (const match of text.toLowerCase().matchAll(WORD)) {
    const chars = [" ", " ", ...match[0], " "]
    for (let i = 0; i + 3 <= chars.length; i++) out.add(chars[i]! + chars[i + 1]! + chars[i + 2]!)
  }
  return out
}

/** The similarity of two trigram sets: common / union, in single precision (0 when one is empty). */
export const similarityOfSets = (a: ReadonlySet<string>, b: ReadonlySet<string>): number => {
  if (a.size === 0 || b.size === 0) return 0
  let common = 0
  for (const t of a) if (b.has(t)) common++
  return Math.fround(common / (a.size + b.size - common))
}

/** `pg_trgm`'s `similarity(a, b)`: a number from 0 to 1. */
export const similarity = (a: string, b: string): number => similarityOfSets(trigrams(a), trigrams(b))

/** `pg_trgm`'s default `similarity_threshold`: the `%` operator matches at or above it. */
export const SIMILARITY_THRESHOLD = 0.3
