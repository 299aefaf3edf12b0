/**
 * Threat (issue 15, finding 7): a signed provider delivery replayed under a new delivery id.
 * Most signature schemes do not sign their delivery-id header (GitHub `X-GitHub-Delivery`, Linear,
 * Shopify; Stripe, Slack and PagerDuty send none and fall back on `X-Service-Delivery-Id` or a
 * configured header, signed by nobody). Whoever captured one genuine delivery (a proxy log, a
 * leaked request dump) could post the same signed bytes again with another id, or none, and each
 * post would start new runs with the provider's authority.
 *
 * Attack: through the bundled server on SQLite and PostgreSQL, post a correctly signed GitHub,
 * Stripe or Standard Webhooks delivery, then the same bytes with a different (or no) delivery id,
 * `X-Service-Delivery-Id`, or configured delivery-id header.
 *
 * Must happen: every replay is a 202 logged DUPLICATE that starts nothing: one run per genuine
 * event. Genuinely different events still start their own runs: Standard Webhooks signs its id
 * (the same body under two ids is two events), and token webhooks, which sign nothing, still tell
 * events apart by the sender's id.
 */
import { Signatures, type Webhook } from "@agent-runs/core"
import { Effect } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, suiteServer } from "../harness.js"
import { postRaw } from "../support.js"

const started = (kind: DatabaseKind) => suiteServer(kind)

const sign = (scheme: Webhook.SignatureScheme, secret: string, body: string, id?: string) =>
  Effect.runPromise(Signatures.sign(scheme, { secret, body: new TextEncoder().encode(body), now: Date.now(), id }))

describe.each(["sqlite", "postgres"] as const)("webhook replay under a new delivery id (%s)", (kind) => {
  const server = started(kind)
  let admin = ""

  const api = (method: string, path: string, body?: unknown) =>
    call(server(), method, `/api/v1${path}`, { token: admin, ...(body === undefined ? {} : { body }) })

  /** A webhook with one automation on it. */
  const hookWithAutomation = async (body: Record<string, unknown>) => {
    const created = await api("POST", "/agent/webhooks", { name: `replay ${Math.random()}`, ...body })
    expect(created.status).toBe(201)
    const hook = created.body as { uid: string; secret: string }
    const automation = await api("POST", "/agent/automations", {
      name: `on ${hook.uid}`,
      prompt: "act on it",
      trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [hook.uid] } }
    })
    expect(automation.status).toBe(201)
    return hook
  }

  const post = async (uid: string, body: string, headers: Record<string, string>) =>
    (await postRaw(server(), `/webhooks/w/${uid}`, body, headers)).status

  const outcomes = async (uid: string) => {
    const log = await api("GET", `/agent/webhooks/${uid}/deliveries?limit=100`)
    expect(log.status).toBe(200)
    return (log.body.deliveries as Array<{ outcome: string }>).map((d) => d.outcome).reverse()
  }

  const runsOf = async (uid: string) => {
    const runs = await api("GET", "/agent/runs?source=WEBHOOK&limit=100")
    expect(runs.status).toBe(200)
    return (runs.body.runs as Array<{ metadata: Record<string, string> }>).filter((r) => r.metadata["webhook_uid"] === uid)
      .length
  }

  beforeAll(async () => {
    admin = (await makeTeam(server(), `replay ${kind}`)).tokens.admin
  })

  it("GitHub: the same signed bytes under another X-GitHub-Delivery, none, or a sender id are duplicates", async () => {
    const hook = await hookWithAutomation({ auth_mode: "signature", signature_scheme: "github", secret: "gh-secret" })
    const body = JSON.stringify({ action: "opened", issue: { number: 7, title: "Please deploy" } })
    const signed = await sign("github", "gh-secret", body, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
    expect(await post(hook.uid, body, signed)).toBe(202)
    const signature = { "x-hub-signature-256": signed["x-hub-signature-256"]! }
    expect(await post(hook.uid, body, { ...signature, "x-github-delivery": "replayed-1" })).toBe(202)
    expect(await post(hook.uid, body, signature)).toBe(202)
    expect(await post(hook.uid, body, { ...signature, "x-service-delivery-id": "replayed-2" })).toBe(202)
    expect(await outcomes(hook.uid)).toEqual(["ACCEPTED", "DUPLICATE", "DUPLICATE", "DUPLICATE"])
    expect(await runsOf(hook.uid)).toBe(1)
  })

  it("Stripe: a replay with a sender id or a configured delivery-id header is a duplicate", async () => {
    const hook = await hookWithAutomation({
      auth_mode: "signature",
      signature_scheme: "stripe",
      secret: "whsec_stripe_test",
      delivery_id_header: "X-Request-Id"
    })
    const body = JSON.stringify({ id: "evt_1", type: "invoice.paid", data: { object: { amount: 100 } } })
    const signed = await sign("stripe", "whsec_stripe_test", body)
    expect(await post(hook.uid, body, signed)).toBe(202)
    expect(await post(hook.uid, body, { ...signed, "x-service-delivery-id": "another" })).toBe(202)
    expect(await post(hook.uid, body, { ...signed, "x-request-id": "req-1" })).toBe(202)
    expect(await post(hook.uid, body, { ...signed, "x-request-id": "req-2" })).toBe(202)
    expect(await outcomes(hook.uid)).toEqual(["ACCEPTED", "DUPLICATE", "DUPLICATE", "DUPLICATE"])
    expect(await runsOf(hook.uid)).toBe(1)
  })

  it("Standard Webhooks: a configured (unsigned) header cannot make a replay new; a new signed id is a new event", async () => {
    const hook = await hookWithAutomation({
      auth_mode: "signature",
      signature_scheme: "standard_webhooks",
      delivery_id_header: "X-Request-Id"
    })
    const body = JSON.stringify({ type: "ping" })
    const first = await sign("standard_webhooks", hook.secret, body, "msg_1")
    expect(await post(hook.uid, body, { ...first, "x-request-id": "a" })).toBe(202)
    expect(await post(hook.uid, body, { ...first, "x-request-id": "b" })).toBe(202)
    // The provider's next message with the same body: its id is signed, so it is another event.
    const second = await sign("standard_webhooks", hook.secret, body, "msg_2")
    expect(await post(hook.uid, body, { ...second, "x-request-id": "c" })).toBe(202)
    expect(await outcomes(hook.uid)).toEqual(["ACCEPTED", "DUPLICATE", "ACCEPTED"])
    expect(await runsOf(hook.uid)).toBe(2)
  })

  it("token webhooks sign nothing: the same body under two sender ids is two events", async () => {
    const hook = await hookWithAutomation({})
    const auth = { authorization: `Bearer ${hook.secret}` }
    expect(await post(hook.uid, `{"tick":true}`, { ...auth, "x-service-delivery-id": "t-1" })).toBe(202)
    expect(await post(hook.uid, `{"tick":true}`, { ...auth, "x-service-delivery-id": "t-2" })).toBe(202)
    expect(await outcomes(hook.uid)).toEqual(["ACCEPTED", "ACCEPTED"])
    expect(await runsOf(hook.uid)).toBe(2)
  })
})
