/**
 * The factory: schedules (their cron in words; a schedule's page with its next fire times, recent
 * runs, Pause / Resume and Run now), webhooks (a webhook's delivery log, its counts by outcome and
 * cursor paging, its automations' filters tested against a stored delivery or a pasted payload),
 * environments, connected self-hosted workers and the team's secrets (names and times only: the
 * API never returns a value).
 */
import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"
import { ApiError, messageOf, request, type RunState } from "./api.js"
import { formatJson, formatTime } from "./format.js"
import { followLink, hrefOf, navigate, useLocation } from "./router.js"

/** An API read: its answer, or the API's error text; `reload` reads it again. */
const useApi = <A,>(path: string): { data: A | undefined; error: string | undefined; reload: () => void } => {
  const [data, setData] = useState<A | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [tick, setTick] = useState(0)
  useEffect(() => {
    const controller = new AbortController()
    request<A>(path, { signal: controller.signal }).then(
      (answer) => {
        setData(answer)
        setError(undefined)
      },
      (failure: unknown) => {
        if (!controller.signal.aborted) setError(messageOf(failure))
      }
    )
    return () => controller.abort()
  }, [path, tick])
  return { data, error, reload: () => setTick((n) => n + 1) }
}

/** A page of the factory: its heading, the API's error, a loading note, then its table. */
const Section = <A,>(props: {
  readonly title: string
  readonly read: { data: A | undefined; error: string | undefined }
  readonly children: (data: A) => ComponentChildren
}) => (
  <>
    <h1>{props.title}</h1>
    {props.read.error === undefined ? null : <p class="error" role="alert">{props.read.error}</p>}
    {props.read.data === undefined
      ? (props.read.error === undefined ? <p aria-live="polite">Loading…</p> : null)
      : props.children(props.read.data)}
  </>
)

const Empty = (props: { readonly columns: number; readonly text: string }) => (
  <tr><td colSpan={props.columns} class="muted">{props.text}</td></tr>
)

interface Schedule {
  readonly id: string
  readonly name: string
  readonly cron_schedule: string
  readonly timezone: string
  readonly enabled: boolean
  readonly prompt: string
  readonly history: {
    readonly last_ran: string | null
    readonly next_run: string | null
    readonly recent_runs: ReadonlyArray<{ readonly run_id: string; readonly state: RunState; readonly scheduled_for: string }>
  }
  readonly last_spawn_error: string | null
}

/** `POST /agent/schedules/preview`: a cron expression in words and its next fire times. */
interface SchedulePreview {
  readonly description: string
  readonly next_runs: ReadonlyArray<string>
}

/** The preview of a schedule's expression in its zone (`count` fire times), or the API's error; nothing until both are known. */
const usePreview = (cron: string | undefined, timezone: string | undefined, count: number) => {
  const [preview, setPreview] = useState<{ data?: SchedulePreview; error?: string }>({})
  useEffect(() => {
    if (cron === undefined || timezone === undefined) return
    const controller = new AbortController()
    request<SchedulePreview>("/agent/schedules/preview", {
      method: "POST",
      body: { cron_schedule: cron, timezone, count },
      signal: controller.signal
    }).then(
      (data) => setPreview({ data }),
      (failure: unknown) => {
        if (!controller.signal.aborted) setPreview({ error: messageOf(failure) })
      }
    )
    return () => controller.abort()
  }, [cron, timezone, count])
  return preview
}

/** A schedule's cron in words (the expression itself while the words load, or when they cannot be had). */
const CronWords = (props: { readonly cron: string; readonly timezone: string }) => {
  const preview = usePreview(props.cron, props.timezone, 1)
  return (
    <>
      {preview.data === undefined ? null : <span class="cron-words">{preview.data.description}</span>}
      <div class="muted"><code>{props.cron}</code> {props.timezone}</div>
    </>
  )
}

/** `schedules` lists them; `schedules/<id>` is one schedule's page. */
export const SchedulesPage = () => {
  const id = useLocation().route.split("/")[1]
  return id === undefined || id === "" ? <ScheduleList /> : <SchedulePage id={id} />
}

const ScheduleList = () => {
  const read = useApi<{ schedules: ReadonlyArray<Schedule> }>("/agent/schedules")
  return (
    <Section title="Schedules" read={read}>
      {({ schedules }) => (
        <table class="list">
          <caption class="visually-hidden">Schedules</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">When</th><th scope="col">Enabled</th><th scope="col">Last ran</th><th scope="col" class="wide">Next run</th><th scope="col" class="wide">Runs</th></tr></thead>
          <tbody>
            {schedules.length === 0 ? <Empty columns={6} text="No schedules." /> : schedules.map((schedule) => {
              const runs = new URLSearchParams({ schedule_id: schedule.id })
              const route = `schedules/${schedule.id}`
              return (
                <tr key={schedule.id} data-schedule-id={schedule.id}>
                  <td>
                    <a href={hrefOf(route)} onClick={(e) => followLink(e, route)}>{schedule.name}</a>
                    {schedule.last_spawn_error === null ? null : <div class="error">{schedule.last_spawn_error}</div>}
                  </td>
                  <td><CronWords cron={schedule.cron_schedule} timezone={schedule.timezone} /></td>
                  <td>{schedule.enabled ? "yes" : "paused"}</td>
                  <td>{formatTime(schedule.history.last_ran)}</td>
                  <td class="wide">{formatTime(schedule.history.next_run)}</td>
                  <td class="wide"><a href={hrefOf("", runs)} onClick={(e) => followLink(e, "", runs)}>Its runs</a></td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
    </Section>
  )
}

/** What a schedule's action buttons did: the error beside the button, or the run started. */
interface ActionOutcome {
  readonly error?: string
  readonly started?: string
}

/**
 * A schedule: its cron in words, its next 5 fire times, its recent runs (links to their pages),
 * Pause / Resume and Run now (the API's error beside the button; the page is read again after).
 */
const SchedulePage = (props: { readonly id: string }) => {
  const path = `/agent/schedules/${encodeURIComponent(props.id)}`
  const read = useApi<Schedule>(path)
  const schedule = read.data
  const preview = usePreview(schedule?.cron_schedule, schedule?.timezone, 5)
  const [busy, setBusy] = useState(false)
  const [toggled, setToggled] = useState<ActionOutcome>({})
  const [ran, setRan] = useState<ActionOutcome>({})
  const act = async (action: "pause" | "resume" | "run") => {
    setBusy(true)
    const done = action === "run" ? setRan : setToggled
    try {
      const answer = await request<{ run_id?: string }>(`${path}/${action}`, { method: "POST" })
      done(answer.run_id === undefined ? {} : { started: answer.run_id })
    } catch (failure) {
      done({ error: messageOf(failure) })
    } finally {
      setBusy(false)
      read.reload()
    }
  }
  const runs = new URLSearchParams({ schedule_id: props.id })
  return (
    <>
      <p><a href={hrefOf("schedules")} onClick={(e) => followLink(e, "schedules")}>← All schedules</a></p>
      <Section title={schedule?.name ?? "Schedule"} read={read}>
        {(s) => (
          <>
            <dl class="facts">
              <div><dt>When</dt><dd><span class="cron-words">{preview.data?.description ?? "—"}</span></dd></div>
              <div><dt>Cron</dt><dd><code>{s.cron_schedule}</code> <span class="muted">{s.timezone}</span></dd></div>
              <div><dt>State</dt><dd class="schedule-state">{s.enabled ? "active" : "paused"}</dd></div>
              <div><dt>Last ran</dt><dd>{formatTime(s.history.last_ran)}</dd></div>
              <div><dt>Next run</dt><dd>{formatTime(s.history.next_run)}</dd></div>
            </dl>
            {s.last_spawn_error === null ? null : <p class="error">The last tick started no run: {s.last_spawn_error}</p>}
            <div class="actions-row">
              <div class="buttons">
                <button
                  type="button"
                  class="secondary"
                  disabled={busy}
                  aria-describedby={toggled.error === undefined ? undefined : "schedule-state-error"}
                  onClick={() => void act(s.enabled ? "pause" : "resume")}
                >
                  {s.enabled ? "Pause" : "Resume"}
                </button>
                {toggled.error === undefined ? null : <span class="error" id="schedule-state-error" role="alert">{toggled.error}</span>}
              </div>
              <div class="buttons">
                <button
                  type="button"
                  disabled={busy}
                  aria-describedby={ran.error === undefined ? undefined : "schedule-run-error"}
                  onClick={() => void act("run")}
                >
                  Run now
                </button>
                {ran.error === undefined ? null : <span class="error" id="schedule-run-error" role="alert">{ran.error}</span>}
                {ran.started === undefined ? null : (
                  <span role="status">
                    Started run <a href={hrefOf(`runs/${ran.started}`)} onClick={(e) => followLink(e, `runs/${ran.started}`)}><code>{ran.started}</code></a>
                  </span>
                )}
              </div>
            </div>
            <h2 id="next-runs-heading">Next runs</h2>
            {preview.error === undefined ? null : <p class="error" role="alert">{preview.error}</p>}
            {preview.data === undefined ? null : (
              <ol class="fire-times" aria-labelledby="next-runs-heading">
                {preview.data.next_runs.map((time) => <li key={time}><time dateTime={time}>{formatTime(time)}</time></li>)}
              </ol>
            )}
            <p class="muted">Times in this browser's time zone; the schedule fires on the clock of {s.timezone}.</p>
            <h2>Prompt</h2>
            <pre>{s.prompt}</pre>
            <h2 id="recent-runs-heading">Recent runs</h2>
            <table class="list recent-runs" aria-labelledby="recent-runs-heading">
              <thead><tr><th scope="col">Run</th><th scope="col">State</th><th scope="col">Started for</th></tr></thead>
              <tbody>
                {s.history.recent_runs.length === 0 ? <Empty columns={3} text="No run yet." /> : s.history.recent_runs.map((run) => (
                  <tr key={run.run_id} data-run-id={run.run_id}>
                    <td><a class="run-link" href={hrefOf(`runs/${run.run_id}`)} onClick={(e) => followLink(e, `runs/${run.run_id}`)}><code>{run.run_id}</code></a></td>
                    <td><span class={`state state-${run.state.toLowerCase()}`}>{run.state}</span></td>
                    <td>{formatTime(run.scheduled_for)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <p><a href={hrefOf("", runs)} onClick={(e) => followLink(e, "", runs)}>All its runs</a></p>
          </>
        )}
      </Section>
    </>
  )
}

interface Webhook {
  readonly uid: string
  readonly name: string
  readonly auth_mode: string
  readonly signature_scheme: string | null
  readonly enabled: boolean
  readonly ingress_url: string
  readonly created_at: string
}

export const WebhooksPage = () => {
  const read = useApi<{ webhooks: ReadonlyArray<Webhook> }>("/agent/webhooks")
  return (
    <Section title="Webhooks" read={read}>
      {({ webhooks }) => (
        <table class="list">
          <caption class="visually-hidden">Webhooks</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Auth</th><th scope="col">Enabled</th><th scope="col" class="wide">Ingress URL</th></tr></thead>
          <tbody>
            {webhooks.length === 0 ? <Empty columns={4} text="No webhooks." /> : webhooks.map((webhook) => (
              <tr key={webhook.uid} data-webhook-uid={webhook.uid}>
                <td>
                  <a href={hrefOf(`webhooks/${webhook.uid}`)} onClick={(e) => followLink(e, `webhooks/${webhook.uid}`)}>{webhook.name}</a>
                </td>
                <td>{webhook.auth_mode}{webhook.signature_scheme === null ? "" : ` (${webhook.signature_scheme})`}</td>
                <td>{webhook.enabled ? "yes" : "no"}</td>
                <td class="wide"><code>{webhook.ingress_url}</code></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  )
}

interface Delivery {
  readonly delivery_id: string
  readonly received_at: string
  readonly size_bytes: number
  readonly identity: string
  readonly outcome: string
  readonly run_ids: ReadonlyArray<string>
  readonly payload?: unknown
}

interface Deliveries {
  readonly deliveries: ReadonlyArray<Delivery>
  readonly page_info: { readonly has_next_page: boolean; readonly next_cursor?: string }
  readonly counts?: Record<string, number>
}

interface Automation {
  readonly id: string
  readonly name: string
  readonly enabled: boolean
  readonly prompt: string
  readonly trigger: { readonly filter: { readonly webhook_ids: ReadonlyArray<string>; readonly payload?: unknown } }
}

/** A filter test's verdict. */
interface Verdict {
  readonly result: string
  readonly reasons: ReadonlyArray<string>
}

/** JSON typed into a textarea: its value, or why it is not JSON (`""` reads as `fallback`). */
const parseJsonText = (text: string, fallback?: unknown): { readonly value?: unknown; readonly problem?: string } => {
  if (text.trim() === "") return fallback === undefined ? { problem: "enter a JSON value" } : { value: fallback }
  try {
    return { value: JSON.parse(text) as unknown }
  } catch (error) {
    return { problem: `not valid JSON: ${error instanceof Error ? error.message : String(error)}` }
  }
}

/**
 * The automations a webhook's deliveries start, and the test of one's filter
 * (`POST /agent/automations/{id}/test-filter`) against a stored delivery or a pasted payload (with
 * optional headers): the verdict and its reasons, or the error beside the control that caused it,
 * the choices kept. Text that is not JSON is refused beside its textarea, without calling the API.
 */
const Automations = (props: { readonly uid: string; readonly deliveries: ReadonlyArray<Delivery> }) => {
  const read = useApi<{ automations: ReadonlyArray<Automation> }>("/agent/automations")
  const mine = (read.data?.automations ?? []).filter((a) => a.trigger.filter.webhook_ids.includes(props.uid))
  const [automation, setAutomation] = useState("")
  const [delivery, setDelivery] = useState("")
  const [payloadText, setPayloadText] = useState("")
  const [headersText, setHeadersText] = useState("")
  const [verdict, setVerdict] = useState<Verdict | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [pasteError, setPasteError] = useState<{ readonly field: "payload" | "headers" | "api"; readonly text: string } | undefined>(undefined)
  const chosenAutomation = automation === "" ? mine[0]?.id ?? "" : automation
  const chosenDelivery = delivery === "" ? props.deliveries[0]?.delivery_id ?? "" : delivery
  const testFilter = (body: unknown) =>
    request<Verdict>(`/agent/automations/${encodeURIComponent(chosenAutomation)}/test-filter`, { method: "POST", body })
  const test = async (event: Event) => {
    event.preventDefault()
    setPasteError(undefined)
    try {
      setVerdict(await testFilter({ delivery_id: chosenDelivery }))
      setError(undefined)
    } catch (failure) {
      setVerdict(undefined)
      setError(messageOf(failure))
    }
  }
  const testPasted = async (event: Event) => {
    event.preventDefault()
    setError(undefined)
    const payload = parseJsonText(payloadText)
    if (payload.problem !== undefined) {
      setVerdict(undefined)
      return setPasteError({ field: "payload", text: payload.problem })
    }
    const headers = parseJsonText(headersText, {})
    const headersProblem = headers.problem ?? (
      typeof headers.value !== "object" || headers.value === null || Array.isArray(headers.value) ||
        Object.values(headers.value).some((v) => typeof v !== "string")
        ? "enter a JSON object of header names and their text values"
        : undefined
    )
    if (headersProblem !== undefined) {
      setVerdict(undefined)
      return setPasteError({ field: "headers", text: headersProblem })
    }
    try {
      setVerdict(await testFilter({ payload: payload.value, headers: headers.value }))
      setPasteError(undefined)
    } catch (failure) {
      setVerdict(undefined)
      // The API names `headers.<name>` for a header it refuses; anything else goes beside the button.
      const field = failure instanceof ApiError && failure.field?.startsWith("headers") === true ? "headers" : "api"
      setPasteError({ field, text: messageOf(failure) })
    }
  }
  const errorOf = (field: "payload" | "headers" | "api") => (pasteError?.field === field ? pasteError.text : undefined)
  return (
    <section aria-labelledby="automations-heading">
      <h2 id="automations-heading">Automations</h2>
      {read.error === undefined ? null : <p class="error" role="alert">{read.error}</p>}
      {read.data === undefined ? null : mine.length === 0 ? <p class="muted">No automation starts runs from this webhook.</p> : (
        <>
          <ul class="automations">
            {mine.map((a) => (
              <li key={a.id}>
                <strong>{a.name}</strong> {a.enabled ? null : <span class="muted">(disabled)</span>}
                <details><summary>Filter and prompt</summary><pre>{formatJson(a.trigger.filter.payload ?? {})}</pre><pre>{a.prompt}</pre></details>
              </li>
            ))}
          </ul>
          <div class="field test-automation">
            <label for="test-automation">Automation</label>
            <select id="test-automation" value={chosenAutomation} onChange={(e) => setAutomation(e.currentTarget.value)}>
              {mine.map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
            </select>
          </div>
          <h3>Test against a stored delivery</h3>
          <form class="test-filter" method="post" onSubmit={test}>
            <div class="field">
              <label for="test-delivery">Delivery</label>
              <select id="test-delivery" value={chosenDelivery} onChange={(e) => setDelivery(e.currentTarget.value)}>
                {props.deliveries.map((d) => (
                  <option key={d.delivery_id} value={d.delivery_id}>{formatTime(d.received_at)} · {d.outcome} · {d.delivery_id.slice(0, 8)}</option>
                ))}
              </select>
            </div>
            <div class="buttons">
              <button type="submit" disabled={chosenDelivery === ""} aria-describedby={error === undefined ? undefined : "test-filter-error"}>Test filter</button>
              {error === undefined ? null : <span class="error" id="test-filter-error" role="alert">{error}</span>}
            </div>
          </form>
          <h3>Test a pasted payload</h3>
          <form class="test-payload" method="post" onSubmit={testPasted}>
            <div class="field">
              <label for="test-payload">Payload (JSON)</label>
              <textarea
                id="test-payload"
                rows={6}
                spellcheck={false}
                value={payloadText}
                aria-invalid={errorOf("payload") === undefined ? undefined : true}
                aria-describedby={errorOf("payload") === undefined ? undefined : "test-payload-error"}
                onInput={(e) => setPayloadText(e.currentTarget.value)}
              />
              {errorOf("payload") === undefined ? null : <span class="error" id="test-payload-error" role="alert">{errorOf("payload")}</span>}
            </div>
            <div class="field">
              <label for="test-headers">Headers (JSON object, optional)</label>
              <textarea
                id="test-headers"
                rows={2}
                spellcheck={false}
                value={headersText}
                aria-invalid={errorOf("headers") === undefined ? undefined : true}
                aria-describedby={errorOf("headers") === undefined ? "test-headers-note" : "test-headers-error"}
                onInput={(e) => setHeadersText(e.currentTarget.value)}
              />
              <span class="muted" id="test-headers-note">Filters read only the body: headers do not change the verdict.</span>
              {errorOf("headers") === undefined ? null : <span class="error" id="test-headers-error" role="alert">{errorOf("headers")}</span>}
            </div>
            <div class="buttons">
              <button type="submit" aria-describedby={errorOf("api") === undefined ? undefined : "test-pasted-error"}>Test payload</button>
              {errorOf("api") === undefined ? null : <span class="error" id="test-pasted-error" role="alert">{errorOf("api")}</span>}
            </div>
          </form>
          {verdict === undefined ? null : (
            <div class="verdict" role="status">
              <strong>{verdict.result}</strong>
              <ul>{verdict.reasons.map((reason, i) => <li key={i}>{reason}</li>)}</ul>
            </div>
          )}
        </>
      )}
    </section>
  )
}

/** A webhook and its delivery log, newest first (`cursor` in the URL pages it). */
export const WebhookPage = (props: { readonly uid: string; readonly query: URLSearchParams }) => {
  const path = `/agent/webhooks/${encodeURIComponent(props.uid)}`
  const webhook = useApi<Webhook>(path)
  const cursor = props.query.get("cursor")
  const page = new URLSearchParams({ limit: "25" })
  if (cursor !== null) page.set("cursor", cursor)
  const deliveries = useApi<Deliveries>(`${path}/deliveries?${page.toString()}`)
  const route = `webhooks/${props.uid}`
  return (
    <>
      <p><a href={hrefOf("webhooks")} onClick={(e) => followLink(e, "webhooks")}>← All webhooks</a></p>
      <Section title={webhook.data?.name ?? "Webhook"} read={webhook}>
        {(hook) => (
          <dl class="facts">
            <div><dt>Auth</dt><dd>{hook.auth_mode}{hook.signature_scheme === null ? "" : ` (${hook.signature_scheme})`}</dd></div>
            <div><dt>Enabled</dt><dd>{hook.enabled ? "yes" : "no"}</dd></div>
            <div><dt>Created</dt><dd>{formatTime(hook.created_at)}</dd></div>
            <div><dt>Ingress URL</dt><dd><code>{hook.ingress_url}</code></dd></div>
          </dl>
        )}
      </Section>
      <h2 id="deliveries-heading">Deliveries</h2>
      {deliveries.error === undefined ? null : <p class="error" role="alert">{deliveries.error}</p>}
      {deliveries.data?.counts === undefined ? null : (
        <ul class="counts" aria-label="Deliveries by outcome">
          {Object.entries(deliveries.data.counts).map(([outcome, count]) => <li key={outcome}><code>{outcome}</code> {count}</li>)}
        </ul>
      )}
      {deliveries.data === undefined ? null : (
        <table class="list deliveries" aria-labelledby="deliveries-heading">
          <thead><tr><th scope="col">Received</th><th scope="col">Outcome</th><th scope="col">Runs</th><th scope="col" class="wide">Size</th><th scope="col" class="wide">Payload</th></tr></thead>
          <tbody>
            {deliveries.data.deliveries.length === 0 ? <Empty columns={5} text="No deliveries yet." /> : deliveries.data.deliveries.map((delivery) => (
              <tr key={delivery.delivery_id} data-delivery-id={delivery.delivery_id}>
                <td>{formatTime(delivery.received_at)}</td>
                <td><code>{delivery.outcome}</code></td>
                <td>
                  {delivery.run_ids.length === 0 ? "—" : delivery.run_ids.map((id) => (
                    <a key={id} class="run-link" href={hrefOf(`runs/${id}`)} onClick={(e) => followLink(e, `runs/${id}`)}>{id.slice(0, 8)}</a>
                  ))}
                </td>
                <td class="wide">{delivery.size_bytes} B</td>
                <td class="wide">
                  {delivery.payload === undefined ? "—" : (
                    <details><summary>Payload</summary><pre>{formatJson(delivery.payload)}</pre></details>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages of deliveries">
        <button type="button" class="secondary" disabled={cursor === null} onClick={() => navigate(route)}>First page</button>
        <button
          type="button"
          disabled={deliveries.data?.page_info.has_next_page !== true}
          onClick={() => navigate(route, new URLSearchParams({ cursor: deliveries.data?.page_info.next_cursor ?? "" }))}
        >
          Next page
        </button>
      </nav>
      <Automations uid={props.uid} deliveries={deliveries.data?.deliveries ?? []} />
    </>
  )
}

interface Environment {
  readonly uid: string
  readonly config: { readonly name: string; readonly description: string | null; readonly docker_image: string | null }
  readonly setup_failed: boolean
  readonly updated_at: string
}

export const EnvironmentsPage = () => {
  const read = useApi<{ environments: ReadonlyArray<Environment> }>("/agent/environments")
  return (
    <Section title="Environments" read={read}>
      {({ environments }) => (
        <table class="list">
          <caption class="visually-hidden">Environments</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Setup</th><th scope="col" class="wide">Image</th><th scope="col" class="wide">Updated</th></tr></thead>
          <tbody>
            {environments.length === 0 ? <Empty columns={4} text="No environments." /> : environments.map((environment) => (
              <tr key={environment.uid}>
                <td>{environment.config.name}<div class="muted"><code>{environment.uid}</code></div></td>
                <td>{environment.setup_failed ? <span class="error">failed</span> : "ok"}</td>
                <td class="wide">{environment.config.docker_image ?? "—"}</td>
                <td class="wide">{formatTime(environment.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  )
}

interface Worker {
  readonly worker_id: string
  readonly display_name: string
  readonly connected_at: string
  readonly last_heartbeat_at: string
  readonly labels: ReadonlyArray<string>
  readonly capacity: number
  readonly active_runs: number
}

export const WorkersPage = () => {
  const read = useApi<{ workers: ReadonlyArray<Worker> }>("/agent/connected-self-hosted-workers")
  return (
    <Section title="Self-hosted workers" read={read}>
      {({ workers }) => (
        <table class="list">
          <caption class="visually-hidden">Connected self-hosted workers</caption>
          <thead><tr><th scope="col">Worker</th><th scope="col">Runs</th><th scope="col">Last heartbeat</th><th scope="col" class="wide">Labels</th></tr></thead>
          <tbody>
            {workers.length === 0 ? <Empty columns={4} text="No worker is connected." /> : workers.map((worker) => (
              <tr key={worker.worker_id}>
                <td>{worker.display_name}<div class="muted"><code>{worker.worker_id}</code></div></td>
                <td>{worker.active_runs} of {worker.capacity}</td>
                <td>{formatTime(worker.last_heartbeat_at)}</td>
                <td class="wide">{worker.labels.join(", ") || "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  )
}

export const SecretsPage = () => {
  const read = useApi<{ secrets: ReadonlyArray<{ name: string; created_at: string; updated_at: string }> }>("/agent/secrets")
  return (
    <Section title="Secrets" read={read}>
      {({ secrets }) => (
        <>
          <p class="muted">Names only: the API never returns a secret's value.</p>
          <table class="list">
            <caption class="visually-hidden">The team's secrets</caption>
            <thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Updated</th></tr></thead>
            <tbody>
              {secrets.length === 0 ? <Empty columns={3} text="No secrets." /> : secrets.map((secret) => (
                <tr key={secret.name}>
                  <td><code>{secret.name}</code></td>
                  <td>{formatTime(secret.created_at)}</td>
                  <td>{formatTime(secret.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </Section>
  )
}
