/**
 * Outbound webhooks, for the team's admins (docs/outbound-webhooks.md): the endpoints, each with
 * whether it is on and, when the service turned it off, why; a form that adds one and shows its
 * signing secret once; an endpoint's page with its delivery log (a state filter, cursor paging, a
 * Redeliver button per delivery), turning it on or off, rotating its secret (the new one shown
 * once) and redelivering what failed since a time.
 *
 * Decisions:
 * - Every change calls the API and reads the page again (Outcome.ts): a refusal is the API's
 *   `error` text in an alert, and the page shows what the API has.
 * - The navigation offers the section to the team's admins (App.tsx); anyone else who opens its URL
 *   sees the API's refusal.
 */
import { useState } from "preact/hooks"
import { request } from "./api.js"
import { formatTime, fromLocalInput, toLocalInput } from "./format.js"
import { OutcomeLine, useChange } from "./Outcome.js"
import { followLink, hrefOf, navigate } from "./router.js"
import { Empty, Section, useApi } from "./Section.js"

/** The event types an endpoint may subscribe to. */
export const EVENT_TYPES = ["run.created", "run.state_changed", "run.succeeded", "run.failed", "run.blocked", "run.errored", "run.cancelled"] as const

interface Endpoint {
  readonly uid: string
  readonly name: string | null
  readonly url: string
  readonly description: string
  readonly events: ReadonlyArray<string>
  readonly enabled: boolean
  readonly disabled_reason: string | null
  readonly disabled_at: string | null
  readonly previous_secret_expires_at: string | null
  readonly secret_name: string | null
  readonly created_at: string
}

/** What an endpoint is created with. */
interface NewEndpoint {
  readonly url: string
  readonly name: string
  readonly events: ReadonlyArray<string>
}

interface Delivery {
  readonly delivery_id: string
  readonly event_type: string
  readonly run_id: string
  readonly state: string
  readonly attempts: number
  readonly created_at: string
  readonly next_attempt_at: string | null
  readonly last_attempt_at: string | null
  readonly last_status: number | null
  readonly last_error: string | null
  readonly last_latency_ms: number | null
  readonly last_response_excerpt: string | null
}

interface Deliveries {
  readonly deliveries: ReadonlyArray<Delivery>
  readonly page_info: { readonly has_next_page: boolean; readonly next_cursor?: string }
}

const BASE = "/agent/outbound-webhooks"
const pathOf = (uid: string) => `${BASE}/${encodeURIComponent(uid)}`

/** A secret shown once, in a read-only field selected on focus. */
const ShownOnce = (props: { readonly secret: string }) => (
  <div class="field new-token">
    <label for="new-secret">Signing secret</label>
    <input id="new-secret" readOnly value={props.secret} onFocus={(e) => e.currentTarget.select()} />
    <p class="muted">Copy it now: it is shown this once.</p>
  </div>
)

/** Whether the endpoint is on; when the service turned it off, why and when. */
const Status = (props: { readonly endpoint: Endpoint }) => {
  const { endpoint } = props
  if (endpoint.enabled) return <span>on</span>
  if (endpoint.disabled_reason === null) return <span class="muted">off</span>
  return <span class="error">turned off {formatTime(endpoint.disabled_at)}: {endpoint.disabled_reason}</span>
}

const NewEndpointForm = (props: { readonly onCreate: (endpoint: NewEndpoint) => Promise<boolean> }) => {
  const [url, setUrl] = useState("")
  const [name, setName] = useState("")
  const [events, setEvents] = useState<ReadonlyArray<string>>(["run.succeeded", "run.failed"])
  const toggle = (type: string, on: boolean) => setEvents(on ? [...events, type] : events.filter((e) => e !== type))
  const submit = async (event: Event) => {
    event.preventDefault()
    if (await props.onCreate({ url: url.trim(), name: name.trim(), events: EVENT_TYPES.filter((t) => events.includes(t)) })) {
      setUrl("")
      setName("")
    }
  }
  return (
    <form class="filters" aria-label="Add an endpoint" onSubmit={submit}>
      <div class="field">
        <label for="endpoint-url">URL</label>
        <input id="endpoint-url" type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="endpoint-name">Name (optional)</label>
        <input id="endpoint-name" maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      <fieldset class="field">
        <legend>Events</legend>
        {EVENT_TYPES.map((type) => (
          <label key={type} class="check">
            <input type="checkbox" checked={events.includes(type)} onChange={(e) => toggle(type, e.currentTarget.checked)} /> <code>{type}</code>
          </label>
        ))}
      </fieldset>
      <div class="actions"><button type="submit">Add endpoint</button></div>
    </form>
  )
}

export const OutboundWebhooksPage = () => {
  const read = useApi<{ outbound_webhooks: ReadonlyArray<Endpoint> }>(BASE)
  const { change, outcome } = useChange(read.reload)
  const [secret, setSecret] = useState<string | undefined>(undefined)
  const create = async ({ events, name, url }: NewEndpoint) => {
    const made = await change(
      () => request<Endpoint & { secret: string }>(BASE, { method: "POST", body: { url, events, ...(name === "" ? {} : { name }) } }),
      (endpoint) => `Added ${endpoint.url}.`
    )
    setSecret(made?.secret)
    return made !== undefined
  }
  return (
    <Section title="Outbound webhooks" read={read}>
      {({ outbound_webhooks: endpoints }) => (
        <>
          <p class="muted">Endpoints told of the team's runs as they are created and change state, signed in the Standard Webhooks format.</p>
          <OutcomeLine outcome={outcome} />
          {secret === undefined ? null : <ShownOnce secret={secret} />}
          <table class="list outbound">
            <caption class="visually-hidden">Outbound webhooks</caption>
            <thead>
              <tr><th scope="col">Name</th><th scope="col">URL</th><th scope="col" class="wide">Events</th><th scope="col">Status</th></tr>
            </thead>
            <tbody>
              {endpoints.length === 0 ? <Empty columns={4} text="No endpoints." /> : endpoints.map((endpoint) => (
                <tr key={endpoint.uid} data-endpoint-uid={endpoint.uid}>
                  <td>{endpoint.name ?? <span class="muted">—</span>}</td>
                  <td><a href={hrefOf(`outbound/${endpoint.uid}`)} onClick={(e) => followLink(e, `outbound/${endpoint.uid}`)}><code>{endpoint.url}</code></a></td>
                  <td class="wide">{endpoint.events.join(", ")}</td>
                  <td><Status endpoint={endpoint} /></td>
                </tr>
              ))}
            </tbody>
          </table>
          <h2>Add an endpoint</h2>
          <NewEndpointForm onCreate={create} />
        </>
      )}
    </Section>
  )
}

const DeliveryRow = (props: { readonly delivery: Delivery; readonly onRedeliver: () => void }) => {
  const { delivery } = props
  return (
    <tr data-delivery-id={delivery.delivery_id} data-state={delivery.state}>
      <td>{formatTime(delivery.created_at)}</td>
      <td><code>{delivery.event_type}</code></td>
      <td><a class="run-link" href={hrefOf(`runs/${delivery.run_id}`)} onClick={(e) => followLink(e, `runs/${delivery.run_id}`)}>{delivery.run_id.slice(0, 8)}</a></td>
      <td>{delivery.state}{delivery.state === "pending" && delivery.next_attempt_at !== null ? ` (next ${formatTime(delivery.next_attempt_at)})` : ""}</td>
      <td>{delivery.attempts}</td>
      <td class="wide">
        {delivery.last_status === null ? "—" : delivery.last_status}
        {delivery.last_latency_ms === null ? "" : ` · ${delivery.last_latency_ms} ms`}
        {delivery.last_error === null ? null : <div class="muted">{delivery.last_error}</div>}
      </td>
      <td>
        {delivery.state === "pending" ? <span class="muted">queued</span> : (
          <button type="button" class="secondary" aria-label={`Redeliver ${delivery.delivery_id}`} onClick={props.onRedeliver}>Redeliver</button>
        )}
      </td>
    </tr>
  )
}

/** The controls of an endpoint: on or off, a new secret, redelivering what failed since a time. */
const EndpointActions = (props: { readonly endpoint: Endpoint; readonly change: ReturnType<typeof useChange>["change"] }) => {
  const { endpoint, change } = props
  const path = pathOf(endpoint.uid)
  const [secret, setSecret] = useState<string | undefined>(undefined)
  const [since, setSince] = useState(toLocalInput(new Date(Date.now() - 24 * 60 * 60 * 1000).toISOString()))
  const rotate = async () => {
    const rotated = await change(() => request<{ secret: string }>(`${path}/rotate-secret`, { method: "POST", body: {} }), () =>
      "A new secret signs from now on; the old one also signs for a day.")
    setSecret(rotated?.secret)
  }
  const redeliver = (event: Event) => {
    event.preventDefault()
    void change(
      () => request<{ redelivered: number }>(`${path}/redeliver`, { method: "POST", body: { since: fromLocalInput(since) } }),
      (answer) => `Queued ${answer.redelivered} failed deliveries again.`
    )
  }
  const toggle = () =>
    void change(() => request(path, { method: "PATCH", body: { enabled: !endpoint.enabled } }), () => endpoint.enabled ? "Turned off." : "Turned on.")
  return (
    <>
      <div class="buttons">
        <button type="button" onClick={toggle}>{endpoint.enabled ? "Turn off" : "Turn on"}</button>
        <button type="button" class="secondary" onClick={() => void rotate()}>Rotate secret</button>
      </div>
      {secret === undefined ? null : <ShownOnce secret={secret} />}
      <form class="filters" aria-label="Redeliver what failed" onSubmit={redeliver}>
        <div class="field">
          <label for="redeliver-since">Failed since</label>
          <input id="redeliver-since" type="datetime-local" required value={since} onInput={(e) => setSince(e.currentTarget.value)} />
        </div>
        <div class="actions"><button type="submit">Redeliver failed</button></div>
      </form>
    </>
  )
}

/** An endpoint and its delivery log, newest first (`state` and `cursor` in the URL). */
export const OutboundWebhookPage = (props: { readonly uid: string; readonly query: URLSearchParams }) => {
  const path = pathOf(props.uid)
  const route = `outbound/${props.uid}`
  const endpoint = useApi<Endpoint>(path)
  const state = props.query.get("state") ?? ""
  const cursor = props.query.get("cursor")
  const page = new URLSearchParams({ limit: "25" })
  if (state !== "") page.set("state", state)
  if (cursor !== null) page.set("cursor", cursor)
  const deliveries = useApi<Deliveries>(`${path}/deliveries?${page.toString()}`)
  const { change, outcome } = useChange(() => {
    endpoint.reload()
    deliveries.reload()
  })
  const filtered = (next: string) => navigate(route, next === "" ? undefined : new URLSearchParams({ state: next }))
  return (
    <>
      <p><a href={hrefOf("outbound")} onClick={(e) => followLink(e, "outbound")}>← All outbound webhooks</a></p>
      <Section title="Outbound webhook" read={endpoint}>
        {(hook) => (
          <>
            {hook.disabled_reason === null ? null : (
              <p class="banner" role="alert">Turned off {formatTime(hook.disabled_at)}: {hook.disabled_reason}</p>
            )}
            <dl class="facts">
              {hook.name === null ? null : <div><dt>Name</dt><dd>{hook.name}</dd></div>}
              <div><dt>URL</dt><dd><code>{hook.url}</code></dd></div>
              <div><dt>Events</dt><dd>{hook.events.join(", ")}</dd></div>
              <div><dt>Status</dt><dd><Status endpoint={hook} /></dd></div>
              <div><dt>Created</dt><dd>{formatTime(hook.created_at)}</dd></div>
              {hook.secret_name === null ? null : <div><dt>Signs with team secret</dt><dd><code>{hook.secret_name}</code></dd></div>}
              {hook.previous_secret_expires_at === null ? null : (
                <div><dt>Old secret signs until</dt><dd>{formatTime(hook.previous_secret_expires_at)}</dd></div>
              )}
            </dl>
            <OutcomeLine outcome={outcome} />
            <EndpointActions endpoint={hook} change={change} />
          </>
        )}
      </Section>
      <h2 id="deliveries-heading">Deliveries</h2>
      <form class="filters" aria-label="Filter the deliveries" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="delivery-state">State</label>
          <select id="delivery-state" value={state} onChange={(e) => filtered(e.currentTarget.value)}>
            {["", "pending", "delivered", "failed"].map((s) => <option key={s} value={s}>{s === "" ? "any" : s}</option>)}
          </select>
        </div>
      </form>
      {deliveries.error === undefined ? null : <p class="error" role="alert">{deliveries.error}</p>}
      {deliveries.data === undefined ? null : (
        <table class="list deliveries" aria-labelledby="deliveries-heading">
          <thead>
            <tr>
              <th scope="col">Created</th><th scope="col">Event</th><th scope="col">Run</th><th scope="col">State</th>
              <th scope="col">Tries</th><th scope="col" class="wide">Last answer</th><th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.data.deliveries.length === 0 ? <Empty columns={7} text="No deliveries." /> : deliveries.data.deliveries.map((d) => (
              <DeliveryRow
                key={d.delivery_id}
                delivery={d}
                onRedeliver={() =>
                  void change(
                    () => request<{ redelivered: number }>(`${path}/deliveries/${encodeURIComponent(d.delivery_id)}/redeliver`, { method: "POST" }),
                    (answer) => answer.redelivered === 0 ? `${d.event_type} is still queued.` : `Queued ${d.event_type} again.`
                  )}
              />
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages of deliveries">
        <button type="button" class="secondary" disabled={cursor === null} onClick={() => filtered(state)}>First page</button>
        <button
          type="button"
          disabled={deliveries.data?.page_info.has_next_page !== true}
          onClick={() => navigate(route, new URLSearchParams({ ...(state === "" ? {} : { state }), cursor: deliveries.data?.page_info.next_cursor ?? "" }))}
        >
          Next page
        </button>
      </nav>
    </>
  )
}
