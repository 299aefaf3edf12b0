/**
 * The web dashboard at `/app` (`@agent-runs/dashboard`'s built files): `GET /app` and any path
 * under it.
 *
 * Decisions:
 * - A path naming a built file answers that file with its content type; files under `assets/`
 *   have hashed names and are cached for a year (`immutable`); anything else under `/app` that is
 *   not a file answers `index.html` (the app routes in the browser), never cached (`no-store`), so
 *   a new build is picked up at the next load. A missing file under `assets/` is a 404.
 * - A built file is streamed from disk (never read whole) with an `ETag` (the platform's, from its
 *   size and modification time) and `Last-Modified`; a request whose `If-None-Match` names the
 *   ETag (weak comparison, or `*`) is answered 304 with no body. Files other than assets are
 *   `no-cache`: the browser asks again each time and gets a 304 while the file is unchanged.
 * - `index.html` is given `<base href="<prefix>/app/">` and `<meta name="agent-runs-base"
 *   content="<prefix>">` when it is served, so its relative asset URLs and the app's API calls
 *   (`<prefix>/api/v1/…`) work at any deep link and under any mount prefix.
 * - A path with a `.` or `..` segment, raw or percent-encoded, or an encoded `/`, `\` or NUL in a
 *   segment is refused (400 `invalid_request` naming `path`); the file read is also checked to lie
 *   inside the built directory, links followed (a link pointing out of it is not served).
 * - Every answer carries a strict Content-Security-Policy: scripts, styles, fonts and API calls
 *   from the service's own origin only, no inline script or style, no framing.
 * - Before the dashboard is built (`npm run build`), `/app` answers 503 saying so.
 */
import { Etag, FileSystem, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Errors } from "@agent-runs/core"
import { Effect } from "effect"
import { readFile, realpath, stat } from "node:fs/promises"
import { extname, join, resolve, sep } from "node:path"
import { escapeHtml } from "./pages/Page.js"
import { problemResponse } from "./ServerMiddleware.js"

/** Where the dashboard is served. */
export const DASHBOARD_PATH = "/app"

/** The Content-Security-Policy of every `/app` answer. */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

const SECURITY_HEADERS = {
  "content-security-policy": DASHBOARD_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY"
}

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".map": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".txt": "text/plain; charset=utf-8"
}

/** The content type of a file, by its extension. */
export const contentTypeOf = (file: string): string => CONTENT_TYPES[extname(file).toLowerCase()] ?? "application/octet-stream"

/**
 * The segments of a path under `/app` (`rest` is what follows `/app`), decoded; `undefined` when
 * one of them would leave the directory or cannot be decoded.
 */
export const segmentsOf = (rest: string): ReadonlyArray<string> | undefined => {
  const segments: Array<string> = []
  for (const raw of rest.split("/")) {
    if (raw === "") continue
    let segment: string
    try {
      segment = decodeURIComponent(raw)
    } catch {
      return undefined
    }
    if (segment === "." || segment === ".." || /[/\\\0]/.test(segment)) return undefined
    segments.push(segment)
  }
  return segments
}

/** `index.html` told where it is served: the `<base href>` and the mount prefix. */
export const withBase = (html: string, basePath: string): string =>
  // A function, so that `$&` or `$'` in the prefix is not read as a replacement pattern.
  html.replace(
    /<head>/i,
    () =>
      `<head><base href="${escapeHtml(`${basePath}${DASHBOARD_PATH}/`)}"><meta name="agent-runs-base" content="${
        escapeHtml(basePath)
      }">`
  )

const secured = (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.setHeaders(response, SECURITY_HEADERS)

/**
 * The real path of `path` (links followed) when it is a file inside `realRoot`; undefined
 * otherwise (a link in the built directory pointing elsewhere is not served).
 */
const fileInside = async (path: string, realRoot: string): Promise<string | undefined> => {
  try {
    const real = await realpath(path)
    return real.startsWith(`${realRoot}${sep}`) && (await stat(real)).isFile() ? real : undefined
  } catch {
    return undefined
  }
}

/**
 * The real path of `root`, remembered once it exists (the directory may be built after the server
 * starts); `fresh` resolves it again (a deploy may point `root`, a link, at another release).
 */
const realRootOf = (root: string): ((fresh: boolean) => Promise<string | undefined>) => {
  let known: string | undefined
  return async (fresh) => {
    if (fresh || known === undefined) known = await realpath(root).catch(() => undefined)
    return known
  }
}

/** The file's real path inside the remembered real root, or else inside the root's real path as it is now. */
const servedFile = async (file: string, realRoot: (fresh: boolean) => Promise<string | undefined>) => {
  const remembered = await realRoot(false)
  const found = remembered === undefined ? undefined : await fileInside(file, remembered)
  if (found !== undefined) return found
  const now = await realRoot(true)
  return now === undefined || now === remembered ? undefined : fileInside(file, now)
}

/** The entity tags of an `If-None-Match` header (`"…"` or `W/"…"`). */
const ENTITY_TAG = /(?:W\/)?"[^"]*"/g

/**
 * Whether an `If-None-Match` header names `etag`: `*`, or one of its tags by weak comparison
 * (RFC 9110 §13.1.2: `W/"x"` and `"x"` are the same).
 */
export const etagMatches = (ifNoneMatch: string | undefined, etag: string): boolean => {
  if (ifNoneMatch === undefined) return false
  if (ifNoneMatch.trim() === "*") return true
  const opaque = (tag: string) => tag.replace(/^W\//, "")
  return (ifNoneMatch.match(ENTITY_TAG) ?? []).some((tag) => opaque(tag) === opaque(etag))
}

/**
 * A built file streamed by the platform (with its Last-Modified), or a 304 with no body when the
 * request's `If-None-Match` names its ETag (the platform answers no conditional requests itself).
 * The ETag is the `Etag.Generator` service's (the Node server's is weak), from the file's size and
 * modification time; it replaces the one the platform's file response makes with a generator of
 * its own, so that a 200 and a 304 always carry the same ETag.
 */
const builtFile = (request: HttpServerRequest.HttpServerRequest, path: string, contentType: string, cache: string) =>
  Effect.gen(function*() {
    const info = yield* (yield* FileSystem.FileSystem).stat(path)
    const etag = Etag.toString(yield* (yield* Etag.Generator).fromFileInfo(info))
    if (etagMatches(request.headers["if-none-match"], etag)) {
      return HttpServerResponse.empty({ status: 304, headers: { "cache-control": cache, etag } })
    }
    const response = yield* HttpServerResponse.file(path, { headers: { "content-type": contentType, "cache-control": cache } })
    return HttpServerResponse.setHeader(response, "etag", etag)
  }).pipe(Effect.orDie)

/** The handler of `/app` and every path under it, serving the files of `dir` (the dashboard's `dist/app`). */
export const dashboard = (basePath: string, dir: string) => {
  const root = resolve(dir)
  const realRoot = realRootOf(root)
  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const path = request.url.split(/[?#]/)[0] ?? ""
    const segments = segmentsOf(path.slice(DASHBOARD_PATH.length))
    if (segments === undefined) {
      return secured(problemResponse(Errors.InvalidRequest.forField("path", "must not contain . or .. segments or encoded slashes")))
    }
    const file = resolve(join(root, ...segments))
    const inside = file.startsWith(`${root}${sep}`)
    const named = inside && segments.length > 0 && segments.join("/") !== "index.html"
      ? yield* Effect.promise(() => servedFile(file, realRoot))
      : undefined
    if (named !== undefined) {
      const cache = segments[0] === "assets" ? "public, max-age=31536000, immutable" : "no-cache"
      return secured(yield* builtFile(request, named, contentTypeOf(file), cache))
    }
    if (segments[0] === "assets") {
      return secured(problemResponse(Errors.ResourceNotFound.of("file", path)))
    }
    const index = yield* Effect.promise(() => readFile(join(root, "index.html"), "utf8").catch(() => undefined))
    if (index === undefined) {
      return secured(problemResponse(new Errors.ResourceUnavailable({ message: "the dashboard is not built: run npm run build" })))
    }
    return secured(HttpServerResponse.text(withBase(index, basePath), {
      contentType: "text/html; charset=utf-8",
      headers: { "cache-control": "no-store" }
    }))
  })
}
