/**
 * The runs: the API's filters and sorts in a form whose values live in the URL's query string
 * (so a filtered view can be shared and the back button restores it), the counts by state of the
 * runs the other filters select (each a link that filters the table by its state), the table,
 * cursor paging, a jump to a run id, and auto-refresh (of the counts too). An error of the API is
 * shown beside the control it names, and the form keeps what was typed.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"
import { ApiError, messageOf, request, RUN_SORTS, RUN_SOURCES, RUN_STATES, type RunCounts, type RunList, type RunState } from "./api.js"
import { formatTime, fromLocalInput, toLocalInput } from "./format.js"
import { followLink, hrefOf, navigate } from "./router.js"

/** The query parameters the page keeps in its URL and passes to `GET /agent/runs`. */
const FILTERS = [
  "q", "state", "creator", "source", "schedule_id", "environment_id", "skill", "model_id",
  "created_after", "created_before", "sort_by", "sort_order"
] as const
type Filter = typeof FILTERS[number]
type Filters = Record<Filter, string>

/**
 * The filters the counts by state take: the list's but the state, which each count sets (with it
 * the other states would count 0), and the sort, which counts nothing.
 */
const COUNTED = FILTERS.filter((name) => name !== "state" && name !== "sort_by" && name !== "sort_order")

const AUTO_REFRESH_MS = 5_000

const filtersOf = (query: URLSearchParams): Filters =>
  Object.fromEntries(FILTERS.map((name) => [name, query.get(name) ?? ""])) as Filters

const queryOf = (filters: Filters): URLSearchParams => {
  const query = new URLSearchParams()
  for (const name of FILTERS) if (filters[name] !== "") query.set(name, filters[name])
  return query
}

const LABELS: Record<Filter, string> = {
  q: "Search",
  state: "State",
  creator: "Creator uid",
  source: "Source",
  schedule_id: "Schedule id",
  environment_id: "Environment uid",
  skill: "Skill spec",
  model_id: "Model",
  created_after: "Created after",
  created_before: "Created before",
  sort_by: "Sort by",
  sort_order: "Order"
}

export const StateBadge = (props: { readonly state: string }) => (
  <span class={`state state-${props.state.toLowerCase()}`}>{props.state}</span>
)

/**
 * How many runs the filters select in each state (`GET /agent/run-counts`, without the state
 * filter), read again with the table. Each count links to the table filtered by its state, "All"
 * to the table without a state filter; the current one is marked.
 */
const StateCounts = (props: { readonly search: string; readonly tick: number; readonly showError: boolean }) => {
  const [counts, setCounts] = useState<RunCounts | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const given = new URLSearchParams(props.search)
  const counted = new URLSearchParams()
  for (const name of COUNTED) for (const value of given.getAll(name)) counted.append(name, value)
  const countedSearch = counted.toString()

  useEffect(() => {
    const controller = new AbortController()
    request<RunCounts>(`/agent/run-counts?${countedSearch}`, { signal: controller.signal }).then(
      (answer) => {
        setCounts(answer)
        setError(undefined)
      },
      (failure: unknown) => {
        if (controller.signal.aborted) return
        setCounts(undefined)
        setError(messageOf(failure))
      }
    )
    return () => controller.abort()
  }, [countedSearch, props.tick])

  const selected = given.get("state") ?? ""
  /** The page's query with this state filter (none: every state), from the first page. */
  const queryFor = (state: RunState | "") => {
    const query = new URLSearchParams(props.search)
    query.delete("cursor")
    if (state === "") query.delete("state")
    else query.set("state", state)
    return query
  }
  const link = (state: RunState | "", label: ComponentChildren, count: number) => {
    const query = queryFor(state)
    const current = state === selected
    return (
      <a href={hrefOf("", query)} onClick={(e) => followLink(e, "", query)} aria-current={current ? "true" : undefined}>
        {current ? <strong>{label} {count}</strong> : <>{label} {count}</>}
      </a>
    )
  }
  return (
    <nav class="state-counts" aria-label="Run counts">
      {counts === undefined ? null : (
        <ul class="counts">
          <li key="all">{link("", "All", counts.total)}</li>
          {RUN_STATES.map((state) => <li key={state}>{link(state, <StateBadge state={state} />, counts.counts[state])}</li>)}
        </ul>
      )}
      {error === undefined || !props.showError ? null : <span class="error" role="alert">Counts by state: {error}</span>}
    </nav>
  )
}

/** A new run from a prompt; its page opens once the API has created it. What was typed stays on an error. */
const NewRun = () => {
  const [prompt, setPrompt] = useState("")
  const [error, setError] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    try {
      const created = await request<{ run_id: string }>("/agent/runs", { method: "POST", body: { prompt } })
      navigate(`runs/${created.run_id}`)
    } catch (failure) {
      setError(messageOf(failure))
      setBusy(false)
    }
  }
  return (
    <form class="new-run" method="post" onSubmit={submit}>
      <label for="new-prompt">New run: prompt</label>
      <textarea
        id="new-prompt"
        rows={3}
        value={prompt}
        onInput={(e) => setPrompt(e.currentTarget.value)}
        aria-describedby={error === undefined ? undefined : "new-prompt-error"}
      />
      <div class="buttons">
        <button type="submit" disabled={busy}>{busy ? "Starting…" : "Start run"}</button>
        {error === undefined ? null : <span class="error" id="new-prompt-error" role="alert">{error}</span>}
      </div>
    </form>
  )
}

export const RunsPage = (props: { readonly query: URLSearchParams }) => {
  const search = props.query.toString()
  const [filters, setFilters] = useState<Filters>(() => filtersOf(props.query))
  const [list, setList] = useState<RunList | undefined>(undefined)
  const [error, setError] = useState<ApiError | undefined>(undefined)
  const [loading, setLoading] = useState(true)
  const [autoRefresh, setAutoRefresh] = useState(false)
  const [tick, setTick] = useState(0)
  const [jump, setJump] = useState("")

  // The back and forward buttons bring other filters: the form shows them.
  useEffect(() => setFilters(filtersOf(new URLSearchParams(search))), [search])

  useEffect(() => {
    const controller = new AbortController()
    const query = new URLSearchParams()
    const given = new URLSearchParams(search)
    for (const name of [...FILTERS, "cursor"]) for (const value of given.getAll(name)) query.append(name, value)
    query.set("limit", "25")
    setLoading(true)
    request<RunList>(`/agent/runs?${query.toString()}`, { signal: controller.signal }).then(
      (answer) => {
        setList(answer)
        setError(undefined)
        setLoading(false)
      },
      (failure: unknown) => {
        if (controller.signal.aborted) return
        setError(failure instanceof ApiError ? failure : new ApiError(0, String(failure), undefined, undefined))
        setLoading(false)
      }
    )
    return () => controller.abort()
  }, [search, tick])

  useEffect(() => {
    if (!autoRefresh) return
    const timer = window.setInterval(() => setTick((n) => n + 1), AUTO_REFRESH_MS)
    return () => window.clearInterval(timer)
  }, [autoRefresh])

  const set = (name: Filter) => (event: { currentTarget: { value: string } }) =>
    setFilters({ ...filters, [name]: event.currentTarget.value })

  /** The error of the API beside the control it names (the Apply button when it names none of them). */
  const errorFor = (name: Filter | "apply") => {
    if (error === undefined) return null
    const named = FILTERS.find((filter) => filter === error.field || error.message.startsWith(`${filter}:`) || error.message.startsWith(`${filter} `))
    if ((named ?? "apply") !== name) return null
    return <span class="error" id={`error-${name}`} role="alert">{error.message}</span>
  }
  const described = (name: Filter) => (error !== undefined && errorFor(name) !== null ? `error-${name}` : undefined)

  const text = (name: Filter, type = "text") => (
    <div class="field">
      <label for={`filter-${name}`}>{LABELS[name]}</label>
      <input id={`filter-${name}`} name={name} type={type} value={filters[name]} onInput={set(name)} aria-describedby={described(name)} />
      {errorFor(name)}
    </div>
  )
  const select = (name: Filter, options: ReadonlyArray<string>, any: string) => (
    <div class="field">
      <label for={`filter-${name}`}>{LABELS[name]}</label>
      <select id={`filter-${name}`} name={name} value={filters[name]} onChange={set(name)} aria-describedby={described(name)}>
        <option value="">{any}</option>
        {options.map((option) => <option key={option} value={option}>{option}</option>)}
      </select>
      {errorFor(name)}
    </div>
  )
  const time = (name: "created_after" | "created_before") => (
    <div class="field">
      <label for={`filter-${name}`}>{LABELS[name]}</label>
      <input
        id={`filter-${name}`}
        name={name}
        type="datetime-local"
        value={toLocalInput(filters[name])}
        onInput={(e) => setFilters({ ...filters, [name]: fromLocalInput(e.currentTarget.value) })}
        aria-describedby={described(name)}
      />
      {errorFor(name)}
    </div>
  )

  const apply = (event: Event) => {
    event.preventDefault()
    navigate("", queryOf(filters))
  }
  const nextPage = () => {
    const cursor = list?.page_info.next_cursor
    if (cursor === undefined) return
    const query = new URLSearchParams(search)
    query.set("cursor", cursor)
    navigate("", query)
  }
  const firstPage = () => {
    const query = new URLSearchParams(search)
    query.delete("cursor")
    navigate("", query)
  }

  return (
    <>
      <h1>Runs</h1>
      <NewRun />
      <form class="jump" method="post" onSubmit={(e) => {
        e.preventDefault()
        if (jump.trim() !== "") navigate(`runs/${jump.trim()}`)
      }}>
        <label for="jump">Run id</label>
        <input id="jump" autocomplete="off" value={jump} onInput={(e) => setJump(e.currentTarget.value)} />
        <button type="submit">Open</button>
      </form>
      <form class="filters" method="post" onSubmit={apply} aria-label="Filters">
        {text("q", "search")}
        {select("state", RUN_STATES, "any state")}
        {text("creator")}
        {select("source", RUN_SOURCES, "any source")}
        {text("schedule_id")}
        {text("environment_id")}
        {text("skill")}
        {text("model_id")}
        {time("created_after")}
        {time("created_before")}
        {select("sort_by", RUN_SORTS, "default")}
        {select("sort_order", ["desc", "asc"], "default (desc)")}
        <div class="actions">
          <button type="submit">Apply filters</button>
          <button type="button" class="secondary" onClick={() => navigate("", new URLSearchParams())}>Clear</button>
          {errorFor("apply")}
        </div>
      </form>
      <div class="toolbar">
        <label class="check">
          <input type="checkbox" checked={autoRefresh} onChange={(e) => setAutoRefresh(e.currentTarget.checked)} />
          Auto-refresh every {AUTO_REFRESH_MS / 1000} s
        </label>
        <button type="button" class="secondary" onClick={() => setTick((n) => n + 1)}>Refresh</button>
        <span class="muted" aria-live="polite">{loading ? "Loading…" : list === undefined ? "" : `${list.runs.length} runs on this page`}</span>
      </div>
      {/* A filter the API refuses is named beside its control already: the counts say nothing more. */}
      <StateCounts search={search} tick={tick} showError={error === undefined} />
      {list === undefined ? null : (
        <table class="runs">
          <caption class="visually-hidden">Runs matching the filters</caption>
          <thead>
            <tr>
              <th scope="col">Title</th>
              <th scope="col">State</th>
              <th scope="col">Created</th>
              <th scope="col" class="wide">Creator</th>
              <th scope="col" class="wide">Source</th>
              <th scope="col" class="wide">Model</th>
            </tr>
          </thead>
          <tbody>
            {list.runs.length === 0
              ? <tr><td colSpan={6} class="muted">No runs match.</td></tr>
              : list.runs.map((run) => (
                <tr key={run.run_id} data-run-id={run.run_id}>
                  <td>
                    <a href={hrefOf(`runs/${run.run_id}`)} onClick={(e) => followLink(e, `runs/${run.run_id}`)}>
                      {run.title === "" ? run.run_id : run.title}
                    </a>
                  </td>
                  <td><StateBadge state={run.state} /></td>
                  <td>{formatTime(run.created_at)}</td>
                  <td class="wide">{run.creator.display_name}</td>
                  <td class="wide">{run.source}</td>
                  <td class="wide">{typeof run.agent_config["model_id"] === "string" ? run.agent_config["model_id"] : "—"}</td>
                </tr>
              ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages">
        <button type="button" class="secondary" disabled={!props.query.has("cursor")} onClick={firstPage}>First page</button>
        <button type="button" disabled={list?.page_info.has_next_page !== true} onClick={nextPage}>Next page</button>
      </nav>
    </>
  )
}
