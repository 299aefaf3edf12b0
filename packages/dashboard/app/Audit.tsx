/**
 * The team's audit log, for its admins (`GET /agent/audit-log`; docs/audit.md): who did what, when,
 * from where and how it ended, newest first. The filters and the page's cursor live in the URL's
 * query, so a view can be shared and the back button works; the export downloads every entry the
 * filters select as JSON lines. Members and viewers see the API's refusal.
 */
import { useState } from "preact/hooks"
import { type AuditEntry, type AuditLogPage, messageOf, requestText } from "./api.js"
import { formatTime } from "./format.js"
import { navigate } from "./router.js"
import { Empty, Section, useApi } from "./Section.js"

/** The filters the page keeps in its URL, as `GET /agent/audit-log` names them. */
const FILTERS = ["action", "outcome", "principal_uid", "resource_type", "resource_id"] as const
type Filters = Record<(typeof FILTERS)[number], string>

const ACTIONS = [
  "run.create", "run.cancel", "run.followup", "environment.create", "environment.update", "environment.delete",
  "schedule.create", "schedule.update", "schedule.pause", "schedule.resume", "schedule.delete", "secret.put",
  "secret.delete", "secret.read", "webhook.create", "webhook.update", "webhook.rotate_secret", "webhook.delete",
  "automation.create", "automation.update", "automation.delete", "worker.release", "transcript.read",
  "team.create", "team.update", "principal.create", "principal.update", "principal.delete", "membership.set",
  "membership.remove", "token.create", "token.revoke"
]

const filtersOf = (query: URLSearchParams): Filters =>
  Object.fromEntries(FILTERS.map((name) => [name, query.get(name) ?? ""])) as Filters

const queryOf = (filters: Filters): URLSearchParams => {
  const query = new URLSearchParams()
  for (const name of FILTERS) if (filters[name].trim() !== "") query.set(name, filters[name].trim())
  return query
}

/** Who acted: the name, and what it acted through. */
const actorOf = (entry: AuditEntry) => (
  <>
    {entry.actor.display_name ?? entry.actor.principal_uid ?? "—"}
    {entry.actor.run_id === null ? null : <div class="muted">for run <code>{entry.actor.run_id.slice(0, 8)}</code></div>}
    {entry.actor.instance_admin ? <div class="muted">instance administrator</div> : null}
  </>
)

/** Downloads every entry the filters select as JSON lines (the API's export, through the session's token). */
const exportEntries = async (query: URLSearchParams) => {
  const text = await requestText(`/agent/audit-log/export?${query.toString()}`)
  const link = document.createElement("a")
  link.href = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }))
  link.download = "audit-log.jsonl"
  link.click()
  URL.revokeObjectURL(link.href)
}

export const AuditPage = (props: { readonly query: URLSearchParams }) => {
  const applied = filtersOf(props.query)
  const [filters, setFilters] = useState<Filters>(applied)
  const [exportError, setExportError] = useState<string | undefined>(undefined)
  const cursor = props.query.get("cursor")
  const query = queryOf(applied)
  const read = useApi<AuditLogPage>(`/agent/audit-log?${query.toString()}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
  const field = (name: keyof Filters, label: string, list?: string) => (
    <div class="field">
      <label for={`audit-${name}`}>{label}</label>
      <input
        id={`audit-${name}`}
        value={filters[name]}
        list={list}
        onInput={(e) => setFilters({ ...filters, [name]: e.currentTarget.value })}
      />
    </div>
  )
  return (
    <Section title="Audit log" read={read}>
      {(page) => (
        <>
          <p class="muted">Every write through the API in this team, and reads of others' transcripts, newest first.</p>
          <form
            class="filters"
            aria-label="Audit log filters"
            onSubmit={(e) => {
              e.preventDefault()
              navigate("audit", queryOf(filters))
            }}
          >
            {field("action", "Action", "audit-actions")}
            <datalist id="audit-actions">{ACTIONS.map((a) => <option key={a} value={a} />)}</datalist>
            <div class="field">
              <label for="audit-outcome">Outcome</label>
              <select id="audit-outcome" value={filters.outcome} onChange={(e) => setFilters({ ...filters, outcome: e.currentTarget.value })}>
                <option value="">any</option>
                <option value="succeeded">succeeded</option>
                <option value="denied">denied</option>
                <option value="failed">failed</option>
              </select>
            </div>
            {field("principal_uid", "Actor (principal uid)")}
            {field("resource_type", "Resource type")}
            {field("resource_id", "Resource id")}
            <button type="submit">Apply filters</button>
            <button
              type="button"
              class="secondary"
              onClick={() => exportEntries(query).then(() => setExportError(undefined), (failure: unknown) => setExportError(messageOf(failure)))}
            >
              Export (JSON lines)
            </button>
          </form>
          {exportError === undefined ? null : <p class="error" role="alert">{exportError}</p>}
          <table class="list audit">
            <caption class="visually-hidden">The team's audit log</caption>
            <thead>
              <tr>
                <th scope="col">When</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Resource</th>
                <th scope="col">Outcome</th><th scope="col" class="wide">From</th>
              </tr>
            </thead>
            <tbody>
              {page.entries.length === 0 ? <Empty columns={6} text="No entries." /> : page.entries.map((entry) => (
                <tr key={entry.id} data-entry-id={entry.id}>
                  <td>{formatTime(entry.at)}</td>
                  <td>{actorOf(entry)}</td>
                  <td><code>{entry.action}</code></td>
                  <td>{entry.resource.type}{entry.resource.id === null ? null : <div class="muted"><code>{entry.resource.id}</code></div>}</td>
                  <td>{entry.outcome}{entry.error_code === null ? null : <div class="muted">{entry.error_code}</div>}</td>
                  <td class="wide">{entry.origin.address ?? "—"}{entry.origin.user_agent === null ? null : <div class="muted">{entry.origin.user_agent}</div>}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <nav class="pager" aria-label="Pages of the audit log">
            <button type="button" class="secondary" disabled={cursor === null} onClick={() => navigate("audit", query)}>Newest</button>
            <button
              type="button"
              disabled={!page.page_info.has_next_page}
              onClick={() => {
                const next = new URLSearchParams(query)
                next.set("cursor", page.page_info.next_cursor ?? "")
                navigate("audit", next)
              }}
            >
              Older entries
            </button>
          </nav>
        </>
      )}
    </Section>
  )
}
