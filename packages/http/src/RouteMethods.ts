/**
 * Which methods a path answers, from the router's routes: a request whose path exists under
 * other methods only is a 405 with `Allow` (ServerMiddleware.ts), not a 404. Paths match as the
 * router matches them (docs/reference/api.md): case-insensitive, one trailing slash ignored,
 * `:param` one segment, `*` the rest.
 */

/** A route as the router holds it. */
export interface RouteLike {
  readonly method: string
  readonly path: string
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

const patternOf = (path: string): RegExp => {
  const segments = path.replace(/\/$/, "").split("/").map((segment) =>
    segment === "*" ? ".*" : segment.startsWith(":") ? "[^/]+" : escape(segment)
  )
  return new RegExp(`^${segments.join("/")}/?$`, "i")
}

/** The methods each path answers (`HEAD` wherever `GET`), sorted; none for a path no route has. */
export const allowedMethods = (routes: ReadonlyArray<RouteLike>): (path: string) => ReadonlyArray<string> => {
  const patterns = routes.filter((route) => route.method !== "*").map((route) => ({
    method: route.method.toUpperCase(),
    pattern: patternOf(route.path)
  }))
  return (path) => {
    const methods = new Set(patterns.filter(({ pattern }) => pattern.test(path)).map(({ method }) => method))
    if (methods.has("GET")) methods.add("HEAD")
    return [...methods].sort()
  }
}
