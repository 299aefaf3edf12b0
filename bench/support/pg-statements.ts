/**
 * Counts the statements this process sends to PostgreSQL, by wrapping `pg`'s
 * `Client.prototype.query`: every statement of every client goes through it, the pools' too
 * (`Pool.prototype.query` takes a client and calls its `query`, so it is not wrapped again, which
 * would count those twice), and so do `@effect/sql-pg`'s (its pool's clients, its cursors, its
 * `LISTEN` connection) and graphile-worker's. Each call is one statement sent, whether the server
 * parses it or runs a prepared one (one round trip unless pipelined, which `pg` does not do).
 *
 *   installStatementCounter()          // once, before the clients are used
 *   const counter = startCounting()    // from now on
 *   counter.snapshot()                 // the counts so far, by statement text
 *   counter.transactions()             // the transactions so far, by their statements
 */
import pg from "pg"

/** Statement text → how many times it was sent. */
export type Counts = ReadonlyMap<string, number>

let installed = false
let current: Map<string, number> | null = null
/** Transactions by their statements (short forms, in order) → how many; and each client's open one. */
let transactions: Map<string, number> | null = null
const open = new WeakMap<object, Array<string>>()

/** A statement in a few words, for a transaction's shape: its first 6 words, or up to its first `(`. */
const short = (text: string): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.split(" ").slice(0, 6).join(" ").split("(")[0]!.trim()
}

const track = (client: object, text: string) => {
  if (transactions === null) return
  const word = text.trim().slice(0, 8).toUpperCase()
  if (word.startsWith("BEGIN")) {
    open.set(client, [])
    return
  }
  const statements = open.get(client)
  if (statements === undefined) return
  if (word.startsWith("COMMIT") || word.startsWith("ROLLBACK")) {
    open.delete(client)
    const shape = `BEGIN; ${statements.join("; ")}; ${word.startsWith("COMMIT") ? "COMMIT" : "ROLLBACK"}`
    transactions.set(shape, (transactions.get(shape) ?? 0) + 1)
  } else statements.push(short(text))
}

const textOf = (config: unknown): string => {
  if (typeof config === "string") return config
  if (typeof config === "object" && config !== null) {
    const { text, name } = config as { readonly text?: unknown; readonly name?: unknown }
    if (typeof text === "string") return text
    if (typeof name === "string") return `<prepared ${name}>`
  }
  return "<unknown>"
}

/** Wraps `pg.Client.prototype.query` (once); nothing is counted until `startCounting`. */
export const installStatementCounter = (): void => {
  if (installed) return
  installed = true
  const proto = pg.Client.prototype as unknown as { query: (...args: Array<unknown>) => unknown }
  const original = proto.query
  proto.query = function(this: unknown, ...args: Array<unknown>) {
    if (current !== null) {
      const text = textOf(args[0])
      current.set(text, (current.get(text) ?? 0) + 1)
      if (typeof this === "object" && this !== null) track(this, text)
    }
    return Reflect.apply(original, this, args)
  }
}

/**
 * Counts from now until the next `startCounting` (or `stopCounting`): statements by text, and
 * transactions by shape (`BEGIN; INSERT INTO runs; …; COMMIT`), those begun since.
 */
export const startCounting = (): { readonly snapshot: () => Counts; readonly transactions: () => Counts } => {
  const counts = new Map<string, number>()
  const shapes = new Map<string, number>()
  current = counts
  transactions = shapes
  return { snapshot: () => new Map(counts), transactions: () => new Map(shapes) }
}

export const stopCounting = (): void => {
  current = null
  transactions = null
}

/**
 * Whitespace collapsed; past `width` characters, its head and its tail (where the `WHERE` usually
 * is, which tells apart statements on the same columns), at most `width` in all.
 */
export const normalize = (text: string, width = 120): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  if (flat.length <= width) return flat
  const tail = Math.floor(width / 3)
  return `${flat.slice(0, width - tail - 3)} … ${flat.slice(flat.length - tail)}`
}

/** The counts by normalized text (texts that differ only in whitespace, or in their middle past `width`, are one). */
export const byNormalized = (counts: Counts): Map<string, number> => {
  const out = new Map<string, number>()
  for (const [text, n] of counts) out.set(normalize(text), (out.get(normalize(text)) ?? 0) + n)
  return out
}

/** `a − b`, per text (texts only in `b` are left out; never below 0). */
export const minus = (a: Counts, b: Counts): Map<string, number> => {
  const out = new Map<string, number>()
  for (const [text, n] of a) {
    const left = n - (b.get(text) ?? 0)
    if (left > 0) out.set(text, left)
  }
  return out
}

export const total = (counts: Counts): number => [...counts.values()].reduce((s, n) => s + n, 0)

/**
 * Statements counted over `windowMs` while `n` jobs went through, less what the idle process sends
 * over as long (`idle` counted over `idleMs`), per text (never below 0).
 */
export const withoutIdle = (counts: Counts, windowMs: number, idle: Counts, idleMs: number): Map<string, number> => {
  const out = new Map<string, number>()
  for (const [text, n] of counts) {
    const left = n - ((idle.get(text) ?? 0) * windowMs) / idleMs
    if (left > 0) out.set(text, left)
  }
  return out
}

/**
 * The breakdown as lines: per job with everything counted and without the idle polls, the count,
 * the normalized text; the most frequent first.
 */
export const breakdown = (counts: Counts, withoutIdlePolls: Counts, n: number): Array<string> => {
  const all = byNormalized(counts)
  const busy = byNormalized(withoutIdlePolls)
  const rows = [...all].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
  const lines = [`${"per job".padStart(8)} ${"w/o idle".padStart(8)} ${"count".padStart(7)}  statement`]
  for (const [text, count] of rows) {
    lines.push(`${(count / n).toFixed(2).padStart(8)} ${((busy.get(text) ?? 0) / n).toFixed(2).padStart(8)} ${String(count).padStart(7)}  ${text}`)
  }
  lines.push(`${(total(all) / n).toFixed(2).padStart(8)} ${(total(busy) / n).toFixed(2).padStart(8)} ${String(total(all)).padStart(7)}  (total)`)
  return lines
}
