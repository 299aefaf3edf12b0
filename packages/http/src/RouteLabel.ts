/**
 * The `route` label of the request metrics (Metrics.ts): a request's path with its ids replaced by
 * `{id}` (`/api/v1/agent/runs/{id}/timeline`), so that a route is one series whatever run it names.
 * Bounded: a path is learnt as a route only from an answer under 400 (what a caller cannot make up:
 * a path it invents is refused), other answers on a path not learnt are `unmatched`; a webhook
 * delivery's path never keeps its token, the names of workers and secrets are `{name}`, the
 * dashboard's files are one route, and past `MAX_ROUTES` distinct routes the rest are `other`.
 */

/** Distinct routes labelled at most; later ones are `other`. */
export const MAX_ROUTES = 256

/** A segment that names something: a UUID, a 22-character uid, a number, or anything long. */
const isId = (segment: string) =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(segment) ||
  /^[A-Za-z0-9]{22}$/.test(segment) ||
  /^\d+$/.test(segment) ||
  segment.length > 40

/** Collections whose members are named, not identified: the segment after them is a name. */
const NAMED = new Set(["workers", "secrets"])

const templateOf = (path: string): string => {
  const lower = path.toLowerCase()
  if (lower.startsWith("/webhooks/")) return "/webhooks/w/{id}"
  if (lower === "/app" || lower.startsWith("/app/")) return "/app/*"
  const segments = path.split("/")
  return segments
    .map((segment, i) => (i > 0 && NAMED.has(segments[i - 1]!.toLowerCase()) ? "{name}" : isId(segment) ? "{id}" : segment.toLowerCase()))
    .join("/")
}

/** A labeller with its own set of routes seen. */
export const makeRouteLabel = () => {
  const seen = new Set<string>()
  return (url: string, status: number): string => {
    const query = url.indexOf("?")
    const route = templateOf(query === -1 ? url : url.slice(0, query))
    if (seen.has(route)) return route
    if (status >= 400) return "unmatched"
    if (seen.size >= MAX_ROUTES) return "other"
    seen.add(route)
    return route
  }
}
