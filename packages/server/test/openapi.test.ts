/**
 * The server against its own OpenAPI document (`/openapi.json`): every operation of the document is
 * called (with no token, with ids that do not exist, with a malformed input, and as it is meant to
 * be used, with a property the schema does not name), and every answer's status must be one the
 * document lists for that operation, its JSON body valid against the documented schema of that
 * status, a documented required header present. The document must also say what the server does
 * with request bodies: unknown properties are ignored, so no request schema says
 * `additionalProperties: false`.
 */
import { Api } from "@agent-runs/api"
import { HttpApi } from "@effect/platform"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeGitHub, startFakeGitHub } from "@agent-runs/testing"
import { type LocalService, startLocalService } from "./support/LocalService.js"

// The document and the answers are arbitrary JSON, read field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

// ---------------------------------------------------------------------------------------------
// A small JSON Schema (2020-12 subset, as the document uses it) check

/** The problems of `value` against `schema` (empty when it is valid); `$ref`s into `components`. */
const validate = (document: Json, schema: Json, value: unknown, at = "$"): Array<string> => {
  if (schema === undefined || schema === true || (typeof schema === "object" && Object.keys(schema).length === 0)) return []
  if (schema === false) return [`${at}: no value allowed`]
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.replace("#/components/schemas/", "")
    const target = document.components.schemas[name]
    if (target === undefined) return [`${at}: unresolved ${schema.$ref}`]
    const problems = validate(document, target, value, at)
    const rest = { ...schema }
    delete rest.$ref
    return [...problems, ...validate(document, rest, value, at)]
  }
  const problems: Array<string> = []
  const typeOf = (v: unknown) =>
    v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v
  if (schema.type !== undefined) {
    const types: Array<string> = Array.isArray(schema.type) ? schema.type : [schema.type]
    const actual = typeOf(value)
    if (!types.includes(actual) && !(actual === "integer" && types.includes("number"))) {
      return [`${at}: ${JSON.stringify(value)?.slice(0, 60)} is not of type ${types.join("|")}`]
    }
  }
  if (schema.enum !== undefined && !schema.enum.some((e: unknown) => JSON.stringify(e) === JSON.stringify(value))) {
    problems.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`)
  }
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) {
    problems.push(`${at}: ${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`)
  }
  if (typeof value === "string") {
    if (schema.minLength !== undefined && [...value].length < schema.minLength) problems.push(`${at}: too short`)
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) problems.push(`${at}: too long`)
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) {
      problems.push(`${at}: ${JSON.stringify(value)} does not match ${schema.pattern}`)
    }
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) problems.push(`${at}: below ${schema.minimum}`)
    if (schema.maximum !== undefined && value > schema.maximum) problems.push(`${at}: above ${schema.maximum}`)
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) problems.push(`${at}: too few items`)
    if (schema.maxItems !== undefined && value.length > schema.maxItems) problems.push(`${at}: too many items`)
    if (schema.items !== undefined) value.forEach((v, i) => problems.push(...validate(document, schema.items, v, `${at}[${i}]`)))
  }
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const record = value as Record<string, unknown>
    for (const key of schema.required ?? []) if (!(key in record)) problems.push(`${at}: ${key} is missing`)
    for (const [key, v] of Object.entries(record)) {
      if (schema.properties?.[key] !== undefined) problems.push(...validate(document, schema.properties[key], v, `${at}.${key}`))
      else if (schema.additionalProperties === false) problems.push(`${at}: ${key} is not a documented property`)
      else if (typeof schema.additionalProperties === "object") {
        problems.push(...validate(document, schema.additionalProperties, v, `${at}.${key}`))
      }
    }
  }
  for (const part of schema.allOf ?? []) problems.push(...validate(document, part, value, at))
  const alternatives = schema.anyOf ?? schema.oneOf
  if (alternatives !== undefined) {
    const results = alternatives.map((part: Json) => validate(document, part, value, at))
    if (!results.some((r: Array<string>) => r.length === 0)) {
      problems.push(`${at}: matches none of ${alternatives.length} alternatives (${results.map((r: Array<string>) => r[0]).join("; ")})`)
    }
  }
  return problems
}

describe("validate (the test's own JSON Schema check)", () => {
  const document = { components: { schemas: { Id: { type: "string", pattern: "^[a-z]+$" } } } }
  it("accepts what matches and names what does not", () => {
    const schema = {
      type: "object",
      required: ["id", "n"],
      properties: { id: { $ref: "#/components/schemas/Id" }, n: { type: "integer", minimum: 1 }, tag: { enum: ["a"] } },
      additionalProperties: false
    }
    expect(validate(document, schema, { id: "abc", n: 2, tag: "a" })).toEqual([])
    expect(validate(document, schema, { id: "ABC", n: 0, tag: "b", extra: 1 })).toHaveLength(4)
    expect(validate(document, schema, { n: 1.5 })).toHaveLength(2)
    expect(validate(document, { anyOf: [{ type: "string" }, { type: "null" }] }, 3)).toHaveLength(1)
  })
})

// ---------------------------------------------------------------------------------------------
// The server

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: Json
  readonly contentType: string
}

describe("the server against /openapi.json", () => {
  let service: LocalService
  let base: string
  let adminToken: string
  let document: Json
  let github: FakeGitHub

  beforeAll(async () => {
    github = await startFakeGitHub()
    service = await startLocalService({ name: "openapi", mountAt: "" })
    base = service.base
    adminToken = service.adminToken
    document = await (await fetch(`${base}/openapi.json`)).json()
  }, 60_000)

  afterAll(async () => {
    await service?.close()
    await github?.close()
  })

  /** Every operation of the document: `METHOD /path/{param}`. */
  const operations = (): Array<{ key: string; method: string; path: string; op: Json }> =>
    Object.entries(document.paths as Record<string, Record<string, Json>>).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => ["get", "put", "post", "delete", "patch"].includes(method))
        .map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path, op }))
    )

  it("no request body schema says additionalProperties: false (the server ignores unknown properties)", () => {
    const strict: Array<string> = []
    const seen = new Set<string>()
    const visit = (node: unknown, where: string): void => {
      if (Array.isArray(node)) return node.forEach((n) => visit(n, where))
      if (typeof node !== "object" || node === null) return
      const record = node as Json
      if (record.additionalProperties === false) strict.push(where)
      if (typeof record.$ref === "string" && !seen.has(record.$ref)) {
        seen.add(record.$ref)
        visit(document.components.schemas[record.$ref.replace("#/components/schemas/", "")], `${where} → ${record.$ref}`)
      }
      for (const value of Object.values(record)) visit(value, where)
    }
    for (const { key, op } of operations()) visit(op.requestBody, key)
    expect(strict).toEqual([])
  })

  it("every operation of the code is in the document under the name the typed client calls it (group.endpoint)", () => {
    const inCode: Array<string> = []
    HttpApi.reflect(Api.Api, {
      onGroup: () => {},
      onEndpoint: ({ endpoint, group }) => {
        const path = endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}")
        inCode.push(`${endpoint.method} ${path} ${group.identifier}.${endpoint.name}`)
      }
    })
    const inDocument = operations().map(({ key, op }) => `${key} ${op.operationId}`)
    expect(inCode.length).toBeGreaterThan(60)
    expect(inDocument.filter((line) => !line.includes("/webhooks/w/")).sort()).toEqual(inCode.sort())
  })

  it("every 302 declares its Location header; operation ids are unique", () => {
    const ids = operations().map(({ op }) => op.operationId)
    expect(new Set(ids).size).toBe(ids.length)
    const redirects = operations().filter(({ op }) => op.responses["302"] !== undefined)
    expect(redirects.length).toBeGreaterThan(0)
    for (const { op } of redirects) expect(op.responses["302"].headers?.Location?.required).toBe(true)
  })

  it("every operation, called without a token, with unknown ids, with bad input and as meant: documented statuses, bodies and headers", async () => {
    const seen = new Map<string, Set<number>>()
    /** The last body each operation took: the other probes send it too, so that only their point fails. */
    const bodies = new Map<string, unknown>()
    const problems: Array<string> = []

    const send = async (
      method: string,
      path: string,
      options: { token?: string | undefined; body?: unknown; headers?: Record<string, string> } = {}
    ): Promise<Answer> => {
      const headers: Record<string, string> = { ...options.headers }
      if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`
      let body: string | undefined
      if (options.body !== undefined) {
        headers["content-type"] ??= "application/json"
        body = typeof options.body === "string" ? options.body : JSON.stringify(options.body)
      }
      const response = await fetch(`${base}${path}`, { method, headers, redirect: "manual", ...(body === undefined ? {} : { body }) })
      const contentType = response.headers.get("content-type") ?? ""
      const text = contentType.includes("text/event-stream") ? "" : await response.text()
      if (contentType.includes("text/event-stream")) await response.body?.cancel()
      let parsed: unknown = text
      try {
        parsed = text === "" ? undefined : JSON.parse(text)
      } catch {
        // not JSON
      }
      return { status: response.status, headers: response.headers, body: parsed, contentType }
    }

    /** Calls one documented operation and checks the answer against the document. */
    const probe = async (
      key: string,
      params: Record<string, string>,
      options: { token?: string | undefined; body?: unknown; query?: string; headers?: Record<string, string> } = {}
    ): Promise<Answer> => {
      const [method, template] = key.split(" ") as [string, string]
      const op = document.paths[template]?.[method.toLowerCase()]
      if (op === undefined) throw new Error(`${key} is not in the document`)
      const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
        const value = params[name]
        if (value === undefined) throw new Error(`${key}: no value for {${name}}`)
        return encodeURIComponent(value)
      })
      const answer = await send(method, `${path}${options.query ?? ""}`, options)
      if (answer.status < 300 && typeof options.body === "object") bodies.set(key, options.body)
      const statuses = seen.get(key) ?? new Set<number>()
      statuses.add(answer.status)
      seen.set(key, statuses)
      // A body the server took must be one the document allows (unknown properties included).
      const requestSchema = op.requestBody?.content?.["application/json"]?.schema
      if (answer.status < 300 && requestSchema !== undefined && typeof options.body === "object") {
        const refused = validate(document, requestSchema, options.body)
        if (refused.length > 0) problems.push(`${key}: the server took a body the document refuses: ${refused.slice(0, 2).join("; ")}`)
      }
      const documented = op.responses[String(answer.status)]
      if (documented === undefined) {
        problems.push(`${key}${options.query ?? ""} answered ${answer.status}, documented: ${Object.keys(op.responses).join(", ")} ` +
          `(${JSON.stringify(answer.body)?.slice(0, 200)})`)
        return answer
      }
      for (const [name, header] of Object.entries(documented.headers ?? {}) as Array<[string, Json]>) {
        const sent = answer.headers.get(name)
        if (header.required === true && sent === null) problems.push(`${key} ${answer.status}: no ${name} header`)
        if (sent !== null && header.schema?.format === "uri" && !URL.canParse(sent)) {
          problems.push(`${key} ${answer.status}: ${name} ${sent} is not an absolute URL`)
        }
      }
      const mediaType = Object.keys(documented.content ?? {}).find((t) => answer.contentType.startsWith(t))
      if (documented.content !== undefined && answer.status !== 302 && mediaType === undefined && answer.body !== undefined) {
        problems.push(`${key} ${answer.status}: content type ${answer.contentType}, documented ${Object.keys(documented.content).join(", ")}`)
      }
      if (mediaType !== undefined && mediaType.includes("json")) {
        const invalid = validate(document, documented.content[mediaType].schema, answer.body)
        if (invalid.length > 0) problems.push(`${key} ${answer.status}: ${invalid.slice(0, 3).join("; ")}`)
      }
      return answer
    }

    // An admin of a team, a member service account for the worker endpoints.
    const admin = (key: string, params: Record<string, string>, options: Parameters<typeof probe>[2] = {}) =>
      probe(key, params, { token: adminToken, ...options })
    const team = await admin("POST /api/v1/admin/teams", {}, { body: { name: "openapi", zz_unknown: 1 } })
    expect(team.status).toBe(201)
    const principal = async (type: string, role: string) => {
      const created = await admin("POST /api/v1/admin/principals", {}, {
        body: { type, display_name: `${type} ${role}`, memberships: [{ team_uid: team.body.uid, role }], zz_unknown: 1 }
      })
      expect(created.status).toBe(201)
      const token = await admin("POST /api/v1/admin/principals/{uid}/tokens", { uid: created.body.uid }, { body: { name: "t", zz_unknown: 1 } })
      expect(token.status).toBe(201)
      return { uid: created.body.uid as string, token: token.body.token as string, tokenId: token.body.token_id as string | undefined }
    }
    const teamAdmin = await principal("user", "admin")
    const worker = await principal("service_account", "member")
    const viewer = await principal("user", "viewer")
    const token = teamAdmin.token
    const as = (key: string, params: Record<string, string>, options: Parameters<typeof probe>[2] = {}) =>
      probe(key, params, { token, ...options })

    // Resources, created as meant (each body with a property the schema does not name).
    const x = { zz_unknown: "ignored" }
    const environment = await as("POST /api/v1/agent/environments", {}, { body: { config: { name: "env" }, ...x } })
    const webhook = await as("POST /api/v1/agent/webhooks", {}, { body: { name: "hook", ...x } })
    // Told of runs' creation, at a loopback port nobody listens on: its deliveries fail and are logged.
    const outbound = await as("POST /api/v1/agent/outbound-webhooks", {}, {
      body: { url: "http://127.0.0.1:9/openapi", events: ["run.created"], ...x }
    })
    const automation = await as("POST /api/v1/agent/automations", {}, {
      body: { name: "auto", prompt: "act", trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [webhook.body.uid] } }, ...x }
    })
    const schedule = await as("POST /api/v1/agent/schedules", {}, {
      body: { name: "nightly", cron_schedule: "0 3 * * *", prompt: "check", enabled: true, ...x }
    })
    const run = await as("POST /api/v1/agent/runs", {}, { body: { prompt: "Say hello", ...x } })
    const queued = await as("POST /api/v1/agent/run", {}, { body: { prompt: "wait for a worker", config: { worker_host: "openapi-worker" }, ...x } })
    const secretName = "OPENAPI_SECRET"
    await as("PUT /api/v1/agent/secrets/{name}", { name: secretName }, { body: { value: "v", ...x } })
    for (const created of [environment, webhook, automation, schedule, run, queued]) expect(created.status).toBeLessThan(300)
    const urlToken = await as("POST /api/v1/agent/webhooks", {}, { body: { name: "url token hook", auth_mode: "url_token" } })
    await probe("POST /webhooks/w/{uid}/{token}", { uid: urlToken.body.uid, token: urlToken.body.secret }, { body: { hello: "world" } })
    const delivery = await probe("POST /webhooks/w/{uid}", { uid: webhook.body.uid }, {
      headers: { authorization: `Bearer ${webhook.body.secret}` },
      body: { hello: "world" }
    })
    // The run ends (the default harness answers at once): its transcript exists.
    for (let i = 0; i < 300; i++) {
      const current = await send("GET", `/api/v1/agent/runs/${run.body.run_id}`, { token })
      if (["SUCCEEDED", "FAILED", "ERROR"].includes(current.body?.state)) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }

    const ids: Record<string, string> = {
      uid: environment.body.uid,
      runId: run.body.run_id,
      scheduleId: schedule.body.id ?? schedule.body.schedule_id,
      id: automation.body.id,
      name: secretName,
      conversation_id: run.body.run_id,
      delivery_id: delivery.body?.delivery_id,
      token_id: "tok_unknown",
      workerId: "openapi-worker",
      team_uid: team.body.uid,
      principal_uid: viewer.uid
    }
    const unknown: Record<string, string> = {
      uid: "Zz0000000000000000000z",
      runId: "01890000-0000-7000-8000-000000000000",
      scheduleId: "Zz0000000000000000000z",
      id: "Zz0000000000000000000z",
      name: "NO_SUCH_SECRET",
      conversation_id: "01890000-0000-7000-8000-000000000000",
      delivery_id: "Zz0000000000000000000z",
      token_id: "Zz0000000000000000000z",
      workerId: "no-such-worker",
      token: "no-such-token",
      team_uid: "Zz0000000000000000000z",
      principal_uid: "Zz0000000000000000000z"
    }
    const current = (await send("GET", `/api/v1/agent/runs/${run.body.run_id}`, { token })).body
    if (typeof current?.conversation_id === "string") ids["conversation_id"] = current.conversation_id

    // As meant: each operation once more, with real ids (bodies with an unknown property).
    const webhookIds = { ...ids, uid: webhook.body.uid }
    await as("GET /api/v1/agent", {})
    await as("GET /api/v1/agent/connected-self-hosted-workers", {})
    await as("GET /api/v1/agent/me", {})
    await as("GET /api/v1/agent/environments", {})
    await as("GET /api/v1/agent/environments/{uid}", ids)
    await as("PUT /api/v1/agent/environments/{uid}", ids, { body: { config: { name: "env2" }, ...x } })
    await as("GET /api/v1/agent/runs", {}, { query: "?q=helo" })
    await as("GET /api/v1/agent/run-counts", {}, { query: "?q=helo&state=SUCCEEDED&state=FAILED" })
    await as("GET /api/v1/agent/runs/{runId}", ids)
    await as("GET /api/v1/agent/runs/{runId}/timeline", ids)
    await as("GET /api/v1/agent/runs/{runId}/conversation", ids)
    await as("GET /api/v1/agent/runs/{runId}/transcript", ids)
    await as("GET /api/v1/agent/runs/{runId}/transcript-link", ids)
    await as("POST /api/v1/agent/runs/{runId}/followups", ids, { body: { message: "and again", ...x } })
    await as("POST /api/v1/agent/runs/{runId}/cancel", { runId: queued.body.run_id })
    await as("GET /api/v1/agent/run-by-external-reference", {}, { query: "?url=https%3A%2F%2Fexample.com%2Fnothing" })
    await as("GET /api/v1/agent/runs/{runId}/events", { runId: queued.body.run_id })
    await as("DELETE /api/v1/agent/runs/{runId}", { runId: queued.body.run_id })
    await as("GET /api/v1/agent/conversations/{conversation_id}", ids)
    await as("GET /api/v1/agent/conversations/{conversation_id}/transcript", ids)
    await as("GET /api/v1/agent/schedules", {})
    await as("GET /api/v1/agent/schedules/{scheduleId}", ids)
    await as("PUT /api/v1/agent/schedules/{scheduleId}", ids, {
      body: { name: "nightly", cron_schedule: "0 4 * * *", prompt: "check", enabled: true, ...x }
    })
    await as("POST /api/v1/agent/schedules/{scheduleId}/pause", ids)
    await as("POST /api/v1/agent/schedules/{scheduleId}/resume", ids)
    await as("POST /api/v1/agent/schedules/{scheduleId}/run", ids)
    await as("POST /api/v1/agent/schedules/preview", {}, { body: { cron_schedule: "0 4 * * *", timezone: "Europe/Paris", count: 3, ...x } })
    await as("GET /api/v1/agent/webhooks", {})
    await as("POST /api/v1/agent/webhooks/check-secret", {}, { body: { secret_name: secretName, ...x } })
    await as("GET /api/v1/agent/webhooks/{uid}", webhookIds)
    await as("PATCH /api/v1/agent/webhooks/{uid}", webhookIds, { body: { name: "hook2", ...x } })
    const rotated = await as("POST /api/v1/agent/webhooks/{uid}/rotate-secret", webhookIds)
    const webhookSecret: string = rotated.body?.secret ?? webhook.body.secret
    await as("GET /api/v1/agent/webhooks/{uid}/deliveries", webhookIds)
    await as("GET /api/v1/agent/webhooks/{uid}/deliveries/{delivery_id}", webhookIds)
    const outboundIds = { ...ids, uid: outbound.body.uid }
    await as("GET /api/v1/agent/outbound-webhooks", {})
    await as("POST /api/v1/agent/outbound-webhooks/check", {}, { body: { url: "http://127.0.0.1:9/openapi", secret_name: secretName, ...x } })
    await as("GET /api/v1/agent/outbound-webhooks/{uid}", outboundIds)
    await as("PATCH /api/v1/agent/outbound-webhooks/{uid}", outboundIds, { body: { description: "openapi", ...x } })
    await as("POST /api/v1/agent/outbound-webhooks/{uid}/rotate-secret", outboundIds, { body: { overlap_seconds: 60, ...x } })
    let outboundLog = await as("GET /api/v1/agent/outbound-webhooks/{uid}/deliveries", outboundIds)
    for (let i = 0; i < 100 && outboundLog.body.deliveries.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      outboundLog = await as("GET /api/v1/agent/outbound-webhooks/{uid}/deliveries", outboundIds)
    }
    await as("POST /api/v1/agent/outbound-webhooks/{uid}/deliveries/{delivery_id}/redeliver", {
      ...outboundIds,
      delivery_id: outboundLog.body.deliveries[0].delivery_id
    })
    await as("POST /api/v1/agent/outbound-webhooks/{uid}/redeliver", outboundIds, { body: { since: "2020-01-01T00:00:00Z", ...x } })
    await as("GET /api/v1/agent/team/outbound-webhook-health", {}, { query: "?hours=6" })
    await as("GET /api/v1/agent/team/outbound-webhook-health", {}, { query: "?hours=0" })
    await as("GET /api/v1/agent/automations", {})
    await as("GET /api/v1/agent/automations/{id}", ids)
    await as("PUT /api/v1/agent/automations/{id}", ids, {
      body: { name: "auto", prompt: "act", enabled: false, trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [webhook.body.uid] } }, ...x }
    })
    await as("POST /api/v1/agent/automations/{id}/test-filter", ids, { body: { delivery_id: ids["delivery_id"], ...x } })
    await as("POST /api/v1/agent/automations/{id}/test-filter", ids, { body: { payload: { action: "opened" }, ...x } })
    await as("GET /api/v1/agent/secrets", {})
    // The team's GitHub connection, on the GitHub double.
    await as("PUT /api/v1/agent/secrets/{name}", { name: "GH_TOKEN" }, { body: { value: github.addToken({ repositories: "all", permission: "write" }) } })
    await as("PUT /api/v1/agent/github", {}, { body: { base_url: github.url, auth: { type: "token", token_secret: "GH_TOKEN" }, ...x } })
    await as("GET /api/v1/agent/github", {})
    await as("GET /api/v1/agent/github/repositories", {})
    await as("PUT /api/v1/agent/team/budgets", {}, { body: { default_max_cost_usd: 2, max_turns: 50, ...x } })
    await as("GET /api/v1/agent/team/budgets", {})
    await as("PUT /api/v1/agent/team/retention", {}, { body: { run_days: 90, ...x } })
    await as("PUT /api/v1/agent/team/retention", {}, { body: { run_days: 0 } })
    await as("GET /api/v1/agent/team/retention", {})
    await as("GET /api/v1/agent/team/spend", {}, { query: "?days=7" })
    await as("GET /api/v1/agent/team/spend", {}, { query: "?days=91" })
    await as("GET /api/v1/agent/team/overview", {}, { query: "?hours=6" })
    await as("GET /api/v1/agent/team/overview", {}, { query: "?hours=169" })
    await as("GET /api/v1/agent/audit-log", {}, { query: "?limit=5&outcome=succeeded" })
    await as("GET /api/v1/agent/audit-log/export", {})
    await admin("GET /api/v1/admin/audit-log", {})
    await admin("GET /api/v1/admin/audit-log/export", {}, { query: "?outcome=succeeded" })
    await admin("GET /api/v1/admin/teams", {})
    await admin("PATCH /api/v1/admin/teams/{uid}", { uid: team.body.uid }, { body: { max_concurrent_runs: 5, ...x } })
    if (teamAdmin.tokenId !== undefined) {
      const spare = await admin("POST /api/v1/admin/principals/{uid}/tokens", { uid: worker.uid }, { body: { name: "spare" } })
      await admin("DELETE /api/v1/admin/tokens/{token_id}", { token_id: spare.body.token_id })
    }
    // The identity lifecycle: principals, memberships, tokens; a team's members and service accounts.
    await admin("GET /api/v1/admin/principals", {}, { query: `?limit=2&team_uid=${team.body.uid}` })
    await admin("GET /api/v1/admin/principals/{uid}", { uid: worker.uid })
    await admin("GET /api/v1/admin/principals/{uid}/tokens", { uid: worker.uid })
    await admin("PATCH /api/v1/admin/principals/{uid}", { uid: viewer.uid }, { body: { display_name: "the viewer", ...x } })
    await admin("PUT /api/v1/admin/principals/{uid}/memberships/{team_uid}", { uid: viewer.uid, team_uid: team.body.uid }, { body: { role: "viewer", ...x } })
    const leaving = await principal("user", "member")
    await admin("DELETE /api/v1/admin/principals/{uid}/memberships/{team_uid}", { uid: leaving.uid, team_uid: team.body.uid })
    await admin("DELETE /api/v1/admin/principals/{uid}", { uid: leaving.uid })
    await admin("POST /api/v1/admin/principals/{uid}/erase", { uid: leaving.uid }, { body: { runs: "anonymize", ...x } })
    const bots = [
      await as("POST /api/v1/agent/team/service-accounts", {}, { body: { display_name: "bot one", role: "viewer", ...x } }),
      await as("POST /api/v1/agent/team/service-accounts", {}, { body: { display_name: "bot two", role: "viewer", ...x } })
    ].map((b) => ({ principal_uid: b.body.uid as string }))
    await as("GET /api/v1/agent/team/members", {}, { query: "?limit=3" })
    await as("PUT /api/v1/agent/team/members/{principal_uid}", bots[0]!, { body: { role: "member", ...x } })
    const botToken = await as("POST /api/v1/agent/team/service-accounts/{principal_uid}/tokens", bots[0]!, { body: { name: "b", max_role: "viewer", ...x } })
    await as("GET /api/v1/agent/team/service-accounts/{principal_uid}/tokens", bots[0]!)
    await as("DELETE /api/v1/agent/team/tokens/{token_id}", { token_id: botToken.body.token_id })
    await as("DELETE /api/v1/agent/team/members/{principal_uid}", bots[0]!)
    await as("DELETE /api/v1/agent/team/service-accounts/{principal_uid}", bots[1]!)
    // The worker endpoints, as a worker: heartbeat, claim of the run addressed to it, its lease.
    const w = { workerId: "openapi-worker" }
    const forWorker = await as("POST /api/v1/agent/runs", {}, { body: { prompt: "for the worker", config: { worker_host: "openapi-worker" } } })
    await probe("POST /api/v1/workers/{workerId}/heartbeat", w, { token: worker.token, body: { capacity: 1, ...x } })
    const claim = await probe("POST /api/v1/workers/{workerId}/claim", w, { token: worker.token, body: { wait_seconds: 1, protocol: 3, ...x } })
    const claimed = claim.body?.claim
    expect(claimed?.run?.run_id).toBe(forWorker.body.run_id)
    if (claimed !== null && claimed !== undefined) {
      const lease = { ...w, runId: claimed.run.run_id }
      const execution_id = claimed.execution_id
      await probe("POST /api/v1/workers/{workerId}/runs/{runId}/renew", lease, { token: worker.token, body: { execution_id, protocol: 3, ...x } })
      await probe("POST /api/v1/workers/{workerId}/runs/{runId}/followups", lease, { token: worker.token, body: { execution_id, ...x } })
      await probe("POST /api/v1/workers/{workerId}/runs/{runId}/transcript", lease, {
        token: worker.token,
        body: { execution_id, data_base64: Buffer.from("hello\n").toString("base64"), offset: 0, ...x }
      })
      await probe("POST /api/v1/workers/{workerId}/runs/{runId}/agent-state/read", lease, { token: worker.token, body: { execution_id, offset: 0, ...x } })
      await probe("POST /api/v1/workers/{workerId}/runs/{runId}/agent-state", lease, {
        token: worker.token,
        body: { execution_id, offset: 0, total_bytes: 6, data_base64: Buffer.from("state\n").toString("base64"), ...x }
      })
      await probe("POST /api/v1/workers/{workerId}/runs/{runId}/conversation/parts", lease, {
        token: worker.token,
        body: { execution_id, seq: 1, ops: [], ...x }
      })
      await probe("POST /api/v1/workers/{workerId}/runs/{runId}/events", lease, {
        token: worker.token,
        body: { execution_id, events: [{ _tag: "Start" }], ...x }
      })
      await probe("POST /api/v1/workers/{workerId}/runs/{runId}/report", lease, {
        token: worker.token,
        body: { execution_id, report: { request_usage: { input_tokens: 1, output_tokens: 1, inference_cost: 0, compute_cost: 0 } }, ...x }
      })
      await probe("POST /api/v1/workers/{workerId}/runs/{runId}/artifacts", lease, {
        token: worker.token,
        body: { execution_id, artifact: { artifact_type: "PLAN", created_at: new Date().toISOString(), data: { document_uid: "d", title: "Plan" } }, ...x }
      })
      await probe("POST /api/v1/harness-support/report-artifact", {}, {
        token: claimed.run_token,
        body: { artifact_type: "EXTERNAL_REFERENCE", data: { url: "https://example.com/openapi-ref" }, ...x }
      })
      await probe("POST /api/v1/harness-support/report-artifact", {}, { token: claimed.run_token, body: { artifact_type: "NOPE" } })
      await as("GET /api/v1/agent/run-by-external-reference", {}, { query: "?url=https%3A%2F%2Fexample.com%2Fopenapi-ref" })
      // The protocol-1 endpoints answer 422 to every worker (docs/workers.md), as documented.
      await probe("POST /api/v1/workers/{workerId}/runs/{runId}/update", lease, { token: worker.token, body: { execution_id, ...x } })
      await probe("PUT /api/v1/workers/{workerId}/runs/{runId}/conversation", lease, { token: worker.token, body: { execution_id, ...x } })
      await probe("POST /api/v1/workers/{workerId}/runs/{runId}/events", lease, {
        token: worker.token,
        body: { execution_id, events: [{ _tag: "Succeed" }], ...x }
      })
    }
    await probe("DELETE /api/v1/workers/{workerId}/heartbeat", w, { token: worker.token })
    await as("DELETE /api/v1/workers/{workerId}/binding", w)

    // Every operation: without a token, with ids that do not exist, with a malformed input.
    for (const { key, op } of operations()) {
      const real = {
        ...ids,
        token: urlToken.body.secret,
        uid: key.includes("/webhooks/w/{uid}/{token}")
          ? urlToken.body.uid
          : key.includes("outbound-webhooks")
          ? outbound.body.uid
          : key.includes("webhooks")
          ? webhook.body.uid
          : key.includes("/admin/teams/")
          ? team.body.uid
          : ids["uid"]!
      }
      await probe(key, { ...real, token: "t" }, {})
      const hasParams = /\{/.test(key)
      const hasBody = op.requestBody !== undefined
      const ingress = key.includes("/webhooks/w/")
      const auth = ingress
        ? { headers: { authorization: `Bearer ${webhookSecret}` } }
        : { token: key.includes("/admin/") ? adminToken : key.includes("/workers/") ? worker.token : token }
      const body = hasBody ? { body: bodies.get(key) ?? {} } : {}
      if (hasParams) {
        // (PUT of a secret creates it: the DELETE probe names another.)
        await probe(key, { ...unknown, name: `${unknown["name"]}_${key.split(" ")[0]}` }, { ...auth, ...body })
        const malformed = Object.fromEntries(Object.keys(unknown).map((name) => [name, "not an id!"]))
        await probe(key, malformed, { ...auth, ...body })
      }
      if (hasBody) {
        await probe(key, real, { ...auth, body: "[1, 2" })
        await probe(key, real, { ...auth, body: JSON.stringify({ padding: "x".repeat(1_100_000) }) })
        await probe(key, real, { ...auth, body: "a=b", headers: { ...auth.headers, "content-type": "application/x-www-form-urlencoded" } })
      }
      const parameters: Array<string> = (op.parameters ?? []).map((p: Json) => p.name)
      if (parameters.includes("limit")) await probe(key, real, { ...auth, query: "?limit=0" })
      if (parameters.includes("sort_by")) await probe(key, real, { ...auth, query: "?sort_by=zz_nope" })
      if (parameters.includes("state")) await probe(key, real, { ...auth, query: "?state=zz_nope" })
      if (!key.startsWith("GET") && key.includes("/api/v1/agent/")) await probe(key, real, { token: viewer.token, ...body })
    }

    // Answers a generic probe cannot reach: references to things that do not exist inside a body,
    // a missing query parameter.
    await as("GET /api/v1/agent/run-by-external-reference", {})
    await as("POST /api/v1/agent/runs", {}, { body: { prompt: "p", skill: "nobody/nothing:SKILL.md" } })
    await as("POST /api/v1/agent/run", {}, { body: { prompt: "p", skill: "nobody/nothing:SKILL.md" } })
    await as("POST /api/v1/agent/automations", {}, {
      body: { name: "a", prompt: "p", trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [unknown["uid"]] } } }
    })
    await admin("POST /api/v1/admin/principals", {}, {
      body: { type: "user", display_name: "nobody", memberships: [{ team_uid: unknown["uid"], role: "admin" }] }
    })

    // Deletions last, as meant.
    await as("DELETE /api/v1/agent/automations/{id}", ids)
    await as("DELETE /api/v1/agent/webhooks/{uid}", webhookIds)
    await as("DELETE /api/v1/agent/outbound-webhooks/{uid}", outboundIds)
    await as("DELETE /api/v1/agent/schedules/{scheduleId}", ids)
    await as("DELETE /api/v1/agent/environments/{uid}", ids)
    await as("DELETE /api/v1/agent/secrets/{name}", ids)
    // Disconnected, the team has nothing to disconnect or list.
    await as("DELETE /api/v1/agent/github", {})
    await as("DELETE /api/v1/agent/github", {})
    await as("GET /api/v1/agent/github/repositories", {})

    expect(problems).toEqual([])
    // OPENAPI_TEST_SUMMARY=1 prints the statuses each operation gave (what this test covers).
    if (process.env["OPENAPI_TEST_SUMMARY"] !== undefined) {
      const lines = operations().map(({ key }) => `${key} ${[...(seen.get(key) ?? [])].sort().join(",")}`)
      console.log(lines.join("\n"))
    }
    // Coverage: every operation answered; which statuses each gave.
    const summary = Object.fromEntries(operations().map(({ key }) => [key, [...(seen.get(key) ?? [])].sort()]))
    // Each of 401, 400, 404 and 415 that an operation documents is seen, but for the gaps listed.
    const unseen = operations().flatMap(({ key, op }) =>
      ["400", "401", "404", "415"].filter((s) => op.responses[s] !== undefined && !summary[key]!.includes(Number(s))).map((s) => `${key} ${s}`)
    )
    expect(unseen).toEqual([
      // Lists without parameters: nothing to get wrong (the 400 is the generic one of every endpoint).
      "GET /api/v1/agent/connected-self-hosted-workers 400",
      // An unknown skill, webhook or team inside a body is a 403 (nothing leaks), or a 400.
      "POST /api/v1/agent/runs 404",
      "POST /api/v1/agent/run 404",
      "GET /api/v1/agent/schedules 400",
      "GET /api/v1/agent/webhooks 400",
      "GET /api/v1/agent/outbound-webhooks 400",
      "POST /api/v1/agent/automations 404",
      "GET /api/v1/agent/automations 400",
      "GET /api/v1/agent/secrets 400",
      "GET /api/v1/agent/github 400",
      "DELETE /api/v1/agent/github 400",
      "GET /api/v1/agent/github/repositories 400",
      "GET /api/v1/admin/teams 400",
      "POST /api/v1/admin/principals 404",
      // The caller's own team's budgets, retention and spend: the team exists while the caller acts in it.
      "GET /api/v1/agent/team/budgets 400",
      "GET /api/v1/agent/team/budgets 404",
      "PUT /api/v1/agent/team/budgets 404",
      "GET /api/v1/agent/team/retention 400",
      "GET /api/v1/agent/team/retention 404",
      "PUT /api/v1/agent/team/retention 404",
      "GET /api/v1/agent/me 400"
    ])
    const noSuccess = Object.entries(summary).filter(([, statuses]) => !statuses.some((s) => s >= 200 && s < 400)).map(([k]) => k)
    expect(noSuccess).toEqual([
      "POST /api/v1/workers/{workerId}/runs/{runId}/update",
      "PUT /api/v1/workers/{workerId}/runs/{runId}/conversation"
    ])
  }, 120_000)

  it("GET /agent/runs?q= without sort_by ranks by relevance; with sort_by, q only filters (docs/decisions.md)", async () => {
    const post = async (body: unknown) => {
      const response = await fetch(`${base}/api/v1/agent/runs`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      })
      expect(response.status).toBe(200)
      return ((await response.json()) as Json).run_id as string
    }
    // "deploy service": every term in the first title (relevance 1); the newer one is 0.33 similar.
    const exact = await post({ prompt: "x", title: "Deploy the service" })
    const similar = await post({ prompt: "x", title: "Redeploy the servers" })
    const list = async (query: string) => {
      const response = await fetch(`${base}/api/v1/agent/runs?${query}`, { headers: { authorization: `Bearer ${adminToken}` } })
      expect(response.status).toBe(200)
      return ((await response.json()) as Json).runs.map((r: Json) => r.run_id).filter((id: string) => id === exact || id === similar)
    }
    expect(await list("q=deploy+service")).toEqual([exact, similar])
    expect(await list("q=deploy+service&sort_order=asc")).toEqual([similar, exact])
    expect(await list("q=deploy+service&sort_by=created_at")).toEqual([similar, exact])
    // A typo: 0.38 similar to the second title, 0.31 to the first.
    expect(await list("q=deplyo+servers")).toEqual([similar, exact])
  })
})
