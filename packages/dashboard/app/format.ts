/** How the app writes times, durations and JSON. */

/** A timestamp in the reader's locale (`—` for none). */
export const formatTime = (iso: string | null | undefined): string =>
  iso === null || iso === undefined || iso === "" ? "—" : new Date(iso).toLocaleString()

/** The time between two timestamps (or until now), as `1 h 2 min`, `3 min 4 s` or `5.6 s`. */
export const formatDuration = (from: string | null, to: string | null): string => {
  if (from === null) return "—"
  const ms = Math.max(0, (to === null ? Date.now() : Date.parse(to)) - Date.parse(from))
  const seconds = ms / 1000
  if (seconds < 60) return `${seconds.toFixed(1)} s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes} min ${Math.round(seconds % 60)} s`
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`
}

/** JSON for reading. */
export const formatJson = (value: unknown): string => JSON.stringify(value, null, 2) ?? "null"

/** An RFC 3339 time as the value of a `datetime-local` input (local time), or `""`. */
export const toLocalInput = (iso: string | null): string => {
  if (iso === null || iso === "" || Number.isNaN(Date.parse(iso))) return ""
  const date = new Date(iso)
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000)
  return local.toISOString().slice(0, 16)
}

/** A `datetime-local` value as RFC 3339 (UTC), or `""`. */
export const fromLocalInput = (value: string): string =>
  value === "" || Number.isNaN(Date.parse(value)) ? "" : new Date(value).toISOString()

/** US dollars as a reader expects them: cents, or two significant digits below a cent. */
export const formatUsd = (usd: number): string =>
  usd === 0 ? "$0" : usd < 0.01 ? `$${usd.toPrecision(2)}` : `$${usd.toFixed(2)}`
