/**
 * The Overview page (docs/dashboard.md): what the team's runs did, drawn with Chart.js from
 * `GET /agent/team/overview` and `GET /agent/team/spend`: runs created per hour by their state now,
 * the wait before an agent starts and runs' durations per hour (p50, p90), and spend per day.
 * Clicking a chart opens the runs table filtered to what was clicked (the hour or day, and the
 * state of a bar's segment); each chart has the same figures as a table beside it. For the team's
 * admins, the outbound webhooks' delivery health too (`GET /agent/team/outbound-webhook-health`):
 * each endpoint's deliveries of the window by state, a click opening its deliveries in that state.
 */
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  type ChartConfiguration,
  type ChartEvent,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip
} from "chart.js"
import { useEffect, useRef, useState } from "preact/hooks"
import type { RunState, TeamOverview, TeamSpend } from "./api.js"
import { formatUsd } from "./format.js"
import { followLink, hrefOf, navigate } from "./router.js"
import { Empty, useApi, useOptionalApi } from "./Section.js"

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Legend, Tooltip)

const WINDOWS = [6, 24, 168] as const
const SPEND_DAYS = 14
const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000

/** The states a bar's segments stand for; `live` is every state a run has before it ends. */
const SEGMENTS = [
  ["SUCCEEDED", "#2e7d32"],
  ["FAILED", "#c62828"],
  ["ERROR", "#6a1b9a"],
  ["CANCELLED", "#757575"],
  ["BLOCKED", "#ef6c00"],
  ["live", "#1565c0"]
] as const

type Hour = TeamOverview["hours"][number]

/** `GET /agent/team/outbound-webhook-health`. */
interface OutboundHealth {
  readonly since: string
  readonly hours: number
  readonly endpoints: ReadonlyArray<{
    readonly uid: string
    readonly url: string
    readonly enabled: boolean
    readonly disabled_reason: string | null
    readonly delivered: number
    readonly failed: number
    readonly pending: number
  }>
}

/** The states of an outbound webhook's deliveries, as the health chart's segments. */
const DELIVERY_STATES = [["delivered", "#2e7d32"], ["failed", "#c62828"], ["pending", "#1565c0"]] as const

/** The runs table's query for the runs created in `[start, start + length)`, in `state` (none: any). */
const runsQuery = (start: number, length: number, state: RunState | undefined): URLSearchParams => {
  const query = new URLSearchParams()
  // The list's bounds are strict.
  query.set("created_after", new Date(start - 1).toISOString())
  query.set("created_before", new Date(start + length).toISOString())
  if (state !== undefined) query.set("state", state)
  return query
}

/** Opens the runs table for the runs created in `[start, start + length)`, in `state` (none: any). */
const openRuns = (start: number, length: number, state?: RunState) => navigate("", runsQuery(start, length, state))

/** The state a segment filters the runs table by: `live` is four states, so the whole hour is shown. */
const stateOf = (segment: (typeof SEGMENTS)[number][0]): RunState | undefined => (segment === "live" ? undefined : segment)

const hourLabel = (hour: string) => `${hour.slice(5, 10)} ${hour.slice(11, 16)}`

/**
 * A chart on a canvas, made once per configuration. `onPick(index, dataset)`: a click on the bar
 * or point of `dataset` at `index`, or anywhere in the column of `index` (dataset undefined).
 */
const ChartCanvas = (props: {
  readonly label: string
  readonly config: ChartConfiguration
  readonly onPick: (index: number, dataset: number | undefined) => void
}) => {
  const canvas = useRef<HTMLCanvasElement>(null)
  useEffect(() => {
    if (canvas.current === null) return
    const chart = new Chart(canvas.current, {
      ...props.config,
      options: {
        ...props.config.options,
        animation: false,
        maintainAspectRatio: false,
        onClick: (event: ChartEvent) => {
          const native = event.native
          if (native === null || native === undefined) return
          const hit = chart.getElementsAtEventForMode(native, "nearest", { intersect: true }, false)[0]
          // The column (or, on a horizontal chart, the row) of the click.
          const axis = props.config.options?.indexAxis === "y" ? "y" : "x"
          const column = chart.getElementsAtEventForMode(native, "index", { intersect: false, axis }, false)[0]
          const index = hit?.index ?? column?.index
          if (index !== undefined) props.onPick(index, hit?.datasetIndex)
        }
      }
    })
    // The figures drawn, for whoever checks the chart against the API.
    canvas.current.dataset["figures"] = JSON.stringify(chart.data.datasets.map((d) => ({ label: d.label, data: d.data })))
    canvas.current.dataset["area"] = JSON.stringify(chart.chartArea)
    return () => chart.destroy()
  }, [props.config])
  return (
    <div class="chart">
      <canvas ref={canvas} role="img" aria-label={props.label} />
    </div>
  )
}

const RunsChart = (props: { readonly overview: TeamOverview }) => {
  const hours = props.overview.hours
  const [config] = useState<ChartConfiguration>(() => ({
    type: "bar",
    data: {
      labels: hours.map((h) => hourLabel(h.hour)),
      datasets: SEGMENTS.map(([key, color]) => ({ label: key, data: hours.map((h) => h[key]), backgroundColor: color }))
    },
    options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } } }
  }))
  const pick = (index: number, dataset: number | undefined) =>
    openRuns(Date.parse(hours[index]!.hour), HOUR_MS, dataset === undefined ? undefined : stateOf(SEGMENTS[dataset]![0]))
  return <ChartCanvas label="Runs created per hour, by state" config={config} onPick={pick} />
}

const seconds = (value: number | null) => (value === null ? "—" : value < 10 ? value.toFixed(1) : Math.round(value).toString())

const TimesChart = (props: { readonly overview: TeamOverview }) => {
  const hours = props.overview.hours
  const [config] = useState<ChartConfiguration>(() => ({
    type: "line",
    data: {
      labels: hours.map((h) => hourLabel(h.hour)),
      datasets: [
        { label: "wait p50 (s)", data: hours.map((h) => h.queue_wait_seconds.p50), borderColor: "#1565c0", spanGaps: true },
        { label: "wait p90 (s)", data: hours.map((h) => h.queue_wait_seconds.p90), borderColor: "#90caf9", spanGaps: true },
        { label: "duration p50 (s)", data: hours.map((h) => h.run_duration_seconds.p50), borderColor: "#2e7d32", spanGaps: true },
        { label: "duration p90 (s)", data: hours.map((h) => h.run_duration_seconds.p90), borderColor: "#a5d6a7", spanGaps: true }
      ]
    },
    options: { scales: { y: { beginAtZero: true } } }
  }))
  return (
    <ChartCanvas label="Wait before the agent starts and run duration per hour" config={config}
      onPick={(index) => openRuns(Date.parse(hours[index]!.hour), HOUR_MS)} />
  )
}

const SpendChart = (props: { readonly spend: TeamSpend }) => {
  // Every day of the window, those without runs at 0.
  const first = Date.parse(`${props.spend.since}T00:00:00Z`)
  const days = Array.from({ length: SPEND_DAYS }, (_, i) => new Date(first + i * DAY_MS).toISOString().slice(0, 10))
  const byDay = new Map(props.spend.days.map((d) => [d.day, d.cost_usd]))
  const [config] = useState<ChartConfiguration>(() => ({
    type: "bar",
    data: { labels: days, datasets: [{ label: "cost (USD)", data: days.map((d) => byDay.get(d) ?? 0), backgroundColor: "#00838f" }] },
    options: { scales: { y: { beginAtZero: true } } }
  }))
  return <ChartCanvas label="Spend per day" config={config} onPick={(index) => openRuns(first + index * DAY_MS, DAY_MS)} />
}

/** An endpoint as a short label: its host and path. */
const endpointLabel = (url: string): string => {
  const parsed = new URL(url)
  return `${parsed.host}${parsed.pathname}`
}

/** Opens an endpoint's deliveries, in `state` (none: any). */
const openDeliveries = (uid: string, state?: string) =>
  navigate(`outbound/${uid}`, state === undefined ? undefined : new URLSearchParams({ state }))

const HealthChart = (props: { readonly health: OutboundHealth }) => {
  const endpoints = props.health.endpoints
  const [config] = useState<ChartConfiguration>(() => ({
    type: "bar",
    data: {
      labels: endpoints.map((e) => endpointLabel(e.url)),
      datasets: DELIVERY_STATES.map(([state, color]) => ({ label: state, data: endpoints.map((e) => e[state]), backgroundColor: color }))
    },
    options: { indexAxis: "y", scales: { x: { stacked: true, beginAtZero: true, ticks: { precision: 0 } }, y: { stacked: true } } }
  }))
  const pick = (index: number, dataset: number | undefined) =>
    openDeliveries(endpoints[index]!.uid, dataset === undefined ? undefined : DELIVERY_STATES[dataset]![0])
  return <ChartCanvas label="Outbound webhook deliveries by endpoint and state" config={config} onPick={pick} />
}

/** The endpoints' figures as a table (what the health chart draws), each linking to its deliveries. */
const HealthTable = (props: { readonly health: OutboundHealth }) => (
  <table class="list">
    <caption class="visually-hidden">Outbound webhook deliveries</caption>
    <thead>
      <tr><th scope="col">Endpoint</th>{DELIVERY_STATES.map(([state]) => <th scope="col" key={state}>{state}</th>)}<th scope="col" class="wide">Status</th></tr>
    </thead>
    <tbody>
      {props.health.endpoints.map((e) => (
        <tr key={e.uid}>
          <td><a href={hrefOf(`outbound/${e.uid}`)} onClick={(event) => followLink(event, `outbound/${e.uid}`)}>{endpointLabel(e.url)}</a></td>
          {DELIVERY_STATES.map(([state]) => <td key={state}>{e[state]}</td>)}
          <td class="wide">{e.enabled ? "on" : e.disabled_reason === null ? "off" : <span class="error">turned off: {e.disabled_reason}</span>}</td>
        </tr>
      ))}
    </tbody>
  </table>
)

/** An hour, as a link to the runs table showing its runs (what a click in the charts opens). */
const HourLink = (props: { readonly hour: string }) => {
  const query = runsQuery(Date.parse(props.hour), HOUR_MS, undefined)
  return <a href={hrefOf("", query)} onClick={(e) => followLink(e, "", query)}>{hourLabel(props.hour)}</a>
}

/** The per-hour figures as a table (what the charts draw). */
const HoursTable = (props: { readonly overview: TeamOverview }) => (
  <table class="list">
    <caption class="visually-hidden">Runs per hour</caption>
    <thead>
      <tr>
        <th scope="col">Hour (UTC)</th><th scope="col">Created</th>
        {SEGMENTS.map(([key]) => <th scope="col" key={key}>{key}</th>)}
        <th scope="col" class="wide">Wait p50 / p90 (s)</th><th scope="col" class="wide">Duration p50 / p90 (s)</th>
      </tr>
    </thead>
    <tbody>
      {props.overview.hours.every((h) => h.created === 0) ? <Empty columns={10} text="No runs created in this window." /> : null}
      {props.overview.hours.filter((h) => h.created > 0).reverse().map((h: Hour) => (
        <tr key={h.hour}>
          <td><HourLink hour={h.hour} /></td>
          <td>{h.created}</td>
          {SEGMENTS.map(([key]) => <td key={key}>{h[key]}</td>)}
          <td class="wide">{seconds(h.queue_wait_seconds.p50)} / {seconds(h.queue_wait_seconds.p90)}</td>
          <td class="wide">{seconds(h.run_duration_seconds.p50)} / {seconds(h.run_duration_seconds.p90)}</td>
        </tr>
      ))}
    </tbody>
  </table>
)

/** The outbound webhooks' delivery health, when the team has endpoints (or why it cannot be read). */
const HealthSection = (props: { readonly read: { data: OutboundHealth | undefined; error: string | undefined }; readonly hours: number }) => {
  const { data, error } = props.read
  if (error !== undefined) return <p class="error" role="alert">Outbound webhooks: {error}</p>
  if (data === undefined || data.hours !== props.hours || data.endpoints.length === 0) return null
  return (
    <>
      <h2>Outbound webhook deliveries, by endpoint and state</h2>
      <HealthChart key={`${data.since}:${data.hours}`} health={data} />
      <HealthTable health={data} />
    </>
  )
}

const OverviewCharts = (props: { readonly overview: TeamOverview; readonly spend: TeamSpend | undefined }) => {
  const o = props.overview
  return (
    <>
      {o.truncated ? <p class="muted">More runs than the overview reads: the figures cover the newest 20,000 runs, so the earliest hours count fewer than were created.</p> : null}
      <dl class="facts">
        <div><dt>Runs created</dt><dd>{o.hours.reduce((sum, h) => sum + h.created, 0)}</dd></div>
        <div><dt>Wait before start</dt><dd>p50 {seconds(o.queue_wait_seconds.p50)} s, p90 {seconds(o.queue_wait_seconds.p90)} s</dd></div>
        <div><dt>Run duration</dt><dd>p50 {seconds(o.run_duration_seconds.p50)} s, p90 {seconds(o.run_duration_seconds.p90)} s</dd></div>
        {props.spend === undefined ? null : <div><dt>Spent by the team (last {SPEND_DAYS} days)</dt><dd>{formatUsd(props.spend.total_cost_usd)}</dd></div>}
      </dl>
      <h2>Runs created per hour (UTC), by state</h2>
      <RunsChart overview={o} />
      <h2>Wait before the agent starts and run duration, per hour (UTC)</h2>
      <TimesChart overview={o} />
      {props.spend === undefined ? null : (
        <>
          <h2>Spend per day (UTC), the whole team's, last {SPEND_DAYS} days</h2>
          <SpendChart spend={props.spend} />
        </>
      )}
      <h2>By hour</h2>
      <HoursTable overview={o} />
    </>
  )
}

/** The Overview; `admin`: the caller is an admin of the team (who alone may read the outbound webhooks' health). */
export const OverviewPage = (props: { readonly admin: boolean }) => {
  const [hours, setHours] = useState<number>(24)
  const overview = useApi<TeamOverview>(`/agent/team/overview?hours=${hours}`)
  const spend = useApi<TeamSpend>(`/agent/team/spend?days=${SPEND_DAYS}`)
  // Only the team's admins may read it: nobody else asks.
  const health = useOptionalApi<OutboundHealth>(props.admin ? `/agent/team/outbound-webhook-health?hours=${hours}` : undefined)
  // The data of another window than the one chosen is not drawn (while the chosen one loads).
  const data = overview.data !== undefined && overview.data.hours.length === hours ? overview.data : undefined
  return (
    <>
      <h1>Overview</h1>
      <form class="filters" aria-label="Window" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="overview-hours">Window</label>
          <select id="overview-hours" value={String(hours)} onChange={(e) => setHours(Number(e.currentTarget.value))}>
            {WINDOWS.map((w) => <option key={w} value={String(w)}>{w === 168 ? "7 days" : `${w} hours`}</option>)}
          </select>
        </div>
        <div class="actions"><button type="button" onClick={() => { overview.reload(); spend.reload(); health.reload() }}>Reload</button></div>
      </form>
      {overview.error === undefined ? null : <p class="error" role="alert">{overview.error}</p>}
      {spend.error === undefined ? null : <p class="error" role="alert">Spend: {spend.error}</p>}
      {data === undefined
        ? (overview.error === undefined ? <p aria-live="polite">Loading…</p> : null)
        : <OverviewCharts key={`${data.since}:${data.hours.length}`} overview={data} spend={spend.data} />}
      {data === undefined ? null : <HealthSection read={health} hours={hours} />}
    </>
  )
}
