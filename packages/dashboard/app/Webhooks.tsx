/**
 * Webhooks: the list, and a webhook's page with its delivery log (counts by outcome, cursor
 * paging) and the automations its deliveries start, whose filters are tested against a stored
 * delivery or a pasted payload.
 */
import { useState } from "preact/hooks"
import { messageOf, request } from "./api.js"
import { formatJson, formatTime } from "./format.js"
import { followLink, hrefOf, navigate } from "./router.js"
import { Empty, Section, useApi } from "./Section.js"

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

/** JSON typed into a textarea: its value, or why it is not JSON. */
const parseJsonText = (text: string): { readonly value?: unknown; readonly problem?: string } => {
  if (text.trim() === "") return { problem: "enter a JSON value" }
  try {
    return { value: JSON.parse(text) as unknown }
  } catch (error) {
    return { problem: `not valid JSON: ${error instanceof Error ? error.message : String(error)}` }
  }
}

/**
 * The automations a webhook's deliveries start, and the test of one's filter
 * (`POST /agent/automations/{id}/test-filter`) against a stored delivery or a pasted payload: the verdict and its reasons, or the error beside the control that caused it,
 * the choices kept. Text that is not JSON is refused beside its textarea, without calling the API.
 */
const Automations = (props: { readonly uid: string; readonly deliveries: ReadonlyArray<Delivery> }) => {
  const read = useApi<{ automations: ReadonlyArray<Automation> }>("/agent/automations")
  const mine = (read.data?.automations ?? []).filter((a) => a.trigger.filter.webhook_ids.includes(props.uid))
  const [automation, setAutomation] = useState("")
  const [delivery, setDelivery] = useState("")
  const [payloadText, setPayloadText] = useState("")
  const [verdict, setVerdict] = useState<Verdict | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [pasteError, setPasteError] = useState<{ readonly field: "payload" | "api"; readonly text: string } | undefined>(undefined)
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
    try {
      setVerdict(await testFilter({ payload: payload.value }))
      setPasteError(undefined)
    } catch (failure) {
      setVerdict(undefined)
      setPasteError({ field: "api", text: messageOf(failure) })
    }
  }
  const errorOf = (field: "payload" | "api") => (pasteError?.field === field ? pasteError.text : undefined)
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
