/**
 * Routes inside the app, as paths under `<prefix>/app/` (the server answers `index.html` for any of
 * them): `` the runs, `runs/<id>` a run. The query string holds a page's state (the runs'
 * filters), so a URL can be shared and the browser's back button works.
 */
import { useEffect, useState } from "preact/hooks"
import { prefix } from "./api.js"

/** Where the app is served (`/app/`, `/agents/app/` under a prefix). */
export const appBase = `${prefix}/app/`

export interface Location {
  /** The route, without `appBase` (`""`, `runs/…`). */
  readonly route: string
  readonly query: URLSearchParams
}

const current = (): Location => {
  const path = window.location.pathname
  const route = path.startsWith(appBase) ? path.slice(appBase.length) : ""
  return { route: decodeURI(route).replace(/\/+$/, ""), query: new URLSearchParams(window.location.search) }
}

const CHANGED = "agent-runs:navigate"

/** The href of a route with a query. */
export const hrefOf = (route: string, query?: URLSearchParams): string => {
  const search = query === undefined ? "" : query.toString()
  return `${appBase}${route.split("/").map(encodeURIComponent).join("/")}${search === "" ? "" : `?${search}`}`
}

/** Goes to a route (a new history entry, or the current one replaced). */
export const navigate = (route: string, query?: URLSearchParams, replace = false): void => {
  const href = hrefOf(route, query)
  if (replace) window.history.replaceState(null, "", href)
  else window.history.pushState(null, "", href)
  window.dispatchEvent(new Event(CHANGED))
}

/** The current location, re-rendered on every navigation and on the back and forward buttons. */
export const useLocation = (): Location => {
  const [location, setLocation] = useState(current)
  useEffect(() => {
    const update = () => setLocation(current())
    window.addEventListener("popstate", update)
    window.addEventListener(CHANGED, update)
    return () => {
      window.removeEventListener("popstate", update)
      window.removeEventListener(CHANGED, update)
    }
  }, [])
  return location
}

/** A click on an in-app link navigates without reloading (a modified click opens a tab as usual). */
export const followLink = (event: MouseEvent, route: string, query?: URLSearchParams): void => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
  event.preventDefault()
  navigate(route, query)
}
