/**
 * The shell of the service's own HTML pages (`/` and `/docs/errors`): self-contained (styles
 * inline, system fonts, nothing fetched from elsewhere), light and dark following the system.
 */
import { HttpServerResponse } from "@effect/platform"

/** Text made safe for HTML. */
export const escapeHtml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const STYLE = `
:root { color-scheme: light dark; --fg: #1d1d1f; --bg: #ffffff; --muted: #5f6368; --link: #0b57d0; --rule: #dadce0; }
@media (prefers-color-scheme: dark) { :root { --fg: #e8eaed; --bg: #161718; --muted: #9aa0a6; --link: #8ab4f8; --rule: #3c4043; } }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); margin: 0; }
main { max-width: 56rem; margin: 0 auto; padding: 2rem 1rem; }
a { color: var(--link); } a:focus-visible { outline: 2px solid var(--link); outline-offset: 2px; }
code { font: 0.9em ui-monospace, SFMono-Regular, Menlo, monospace; }
p.muted { color: var(--muted); }
dt { margin-top: 1.25rem; font-weight: 600; } dd { margin: 0.25rem 0 0 0; }
dl > div:target { outline: 2px solid var(--link); outline-offset: 0.5rem; }
`

/** A whole page: `title` and `body` (HTML, already escaped where needed). */
export const page = (title: string, body: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.html(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
      `<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`
  )
