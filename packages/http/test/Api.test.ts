import { HttpApi, HttpApiSchema } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Errors } from "@agent-runs/core"
import { Either, Option, Schema } from "effect"
import * as fc from "fast-check"
import { Api } from "@agent-runs/api/Api"
import { openApiDocument } from "../src/OpenApiDocument.js"
import * as Problems from "@agent-runs/api/Problems"

/**
 * Every endpoint of the API (docs/reference/api.md): those of the published SDK's interface and
 * ours (management, the admin API, the worker protocol), as `METHOD path` relative to /api/v1. The webhook ingress, the worker protocol, /openapi.json,
 * /docs and the health endpoints are served outside the HttpApi definition.
 */
const expectedEndpoints = [
  // the published interface: agents and environments
  "GET /agent",
  "GET /agent/connected-self-hosted-workers",
  // ours: who the caller is (docs/reference/access.md)
  "GET /agent/me",
  "GET /agent/environments",
  // the published interface: runs
  "POST /agent/runs",
  "POST /agent/run",
  "GET /agent/runs",
  "GET /agent/runs/{runId}",
  "GET /agent/runs/{runId}/timeline",
  "GET /agent/runs/{runId}/conversation",
  "GET /agent/runs/{runId}/transcript",
  "POST /agent/runs/{runId}/followups",
  "POST /agent/runs/{runId}/cancel",
  "DELETE /agent/runs/{runId}",
  "GET /agent/run-by-external-reference",
  // ours: the run counts by state and the transcript's signed link as JSON (the web dashboard)
  "GET /agent/run-counts",
  "GET /agent/runs/{runId}/transcript-link",
  // the published interface: conversations
  "GET /agent/conversations/{conversation_id}",
  "GET /agent/conversations/{conversation_id}/transcript",
  // the published interface: scheduled agents
  "POST /agent/schedules",
  "GET /agent/schedules",
  "GET /agent/schedules/{scheduleId}",
  "PUT /agent/schedules/{scheduleId}",
  "DELETE /agent/schedules/{scheduleId}",
  "POST /agent/schedules/{scheduleId}/pause",
  "POST /agent/schedules/{scheduleId}/resume",
  // ours: a schedule run by hand, and a cron expression in words with its next fire times (the web dashboard)
  "POST /agent/schedules/{scheduleId}/run",
  "POST /agent/schedules/preview",
  // ours: environments, webhooks, automations, secrets, events, harness support
  "POST /agent/environments",
  "GET /agent/environments/{uid}",
  "PUT /agent/environments/{uid}",
  "DELETE /agent/environments/{uid}",
  "POST /agent/webhooks",
  "GET /agent/webhooks",
  "GET /agent/webhooks/{uid}",
  "PATCH /agent/webhooks/{uid}",
  "DELETE /agent/webhooks/{uid}",
  "POST /agent/webhooks/{uid}/rotate-secret",
  // definitions as code check secrets before applying anything
  "POST /agent/webhooks/check-secret",
  "GET /agent/webhooks/{uid}/deliveries",
  "GET /agent/webhooks/{uid}/deliveries/{delivery_id}",
  "POST /agent/outbound-webhooks",
  "POST /agent/outbound-webhooks/check",
  "GET /agent/outbound-webhooks",
  "GET /agent/outbound-webhooks/{uid}",
  "PATCH /agent/outbound-webhooks/{uid}",
  "DELETE /agent/outbound-webhooks/{uid}",
  "POST /agent/outbound-webhooks/{uid}/rotate-secret",
  "GET /agent/outbound-webhooks/{uid}/deliveries",
  "POST /agent/outbound-webhooks/{uid}/deliveries/{delivery_id}/redeliver",
  "POST /agent/outbound-webhooks/{uid}/redeliver",
  "GET /agent/team/outbound-webhook-health",
  "POST /agent/automations",
  "GET /agent/audit-log",
  "GET /agent/audit-log/export",
  "GET /agent/automations",
  "GET /agent/automations/{id}",
  "PUT /agent/automations/{id}",
  "DELETE /agent/automations/{id}",
  "POST /agent/automations/{id}/test-filter",
  "PUT /agent/secrets/{name}",
  "GET /agent/secrets",
  "DELETE /agent/secrets/{name}",
  // the team's GitHub connection (docs/github.md)
  "GET /agent/github",
  "PUT /agent/github",
  "DELETE /agent/github",
  "GET /agent/github/repositories",
  "GET /agent/runs/{runId}/events",
  "POST /harness-support/report-artifact",
  // the admin API (docs/reference/access.md)
  "POST /admin/teams",
  "GET /admin/audit-log",
  "GET /admin/audit-log/export",
  "GET /admin/teams",
  "PATCH /admin/teams/{uid}",
  "POST /admin/principals",
  "POST /admin/principals/{uid}/tokens",
  "DELETE /admin/tokens/{token_id}",
  "GET /admin/principals",
  "GET /admin/principals/{uid}",
  "PATCH /admin/principals/{uid}",
  "DELETE /admin/principals/{uid}",
  "POST /admin/principals/{uid}/erase",
  "PUT /admin/principals/{uid}/memberships/{team_uid}",
  "DELETE /admin/principals/{uid}/memberships/{team_uid}",
  "GET /admin/principals/{uid}/tokens",
  // a team's members, service accounts and their tokens (docs/reference/access.md)
  "GET /agent/team/members",
  "PUT /agent/team/members/{principal_uid}",
  "DELETE /agent/team/members/{principal_uid}",
  "POST /agent/team/service-accounts",
  "DELETE /agent/team/service-accounts/{principal_uid}",
  "POST /agent/team/service-accounts/{principal_uid}/tokens",
  "GET /agent/team/service-accounts/{principal_uid}/tokens",
  "DELETE /agent/team/tokens/{token_id}",
  // the team's budgets and spend (docs/budgets.md)
  "GET /agent/team/budgets",
  "PUT /agent/team/budgets",
  // the team's retention (docs/retention.md)
  "GET /agent/team/retention",
  "PUT /agent/team/retention",
  "GET /agent/team/spend",
  "GET /agent/team/overview",
  // the self-hosted worker protocol (docs/workers.md)
  "POST /workers/{workerId}/heartbeat",
  "DELETE /workers/{workerId}/heartbeat",
  "DELETE /workers/{workerId}/binding",
  "POST /workers/{workerId}/claim",
  "POST /workers/{workerId}/runs/{runId}/events",
  "POST /workers/{workerId}/runs/{runId}/report",
  "POST /workers/{workerId}/runs/{runId}/update",
  "POST /workers/{workerId}/runs/{runId}/renew",
  "POST /workers/{workerId}/runs/{runId}/followups",
  "PUT /workers/{workerId}/runs/{runId}/conversation",
  "POST /workers/{workerId}/runs/{runId}/artifacts",
  "POST /workers/{workerId}/runs/{runId}/conversation/parts",
  "POST /workers/{workerId}/runs/{runId}/transcript",
  "POST /workers/{workerId}/runs/{runId}/agent-state",
  "POST /workers/{workerId}/runs/{runId}/agent-state/read"
]

const RUN_LIST_PARAMS = [
  "limit", "cursor", "sort_by", "sort_order", "state", "name", "model_id", "creator", "executor", "source",
  "execution_location", "created_after", "created_before", "updated_after", "environment_id", "skill",
  "skill_spec", "schedule_id", "ancestor_run_id", "metadata", "artifact_type", "q"
]

type Parameter = {
  readonly name: string
  readonly in: string
  readonly required: boolean
  readonly description?: string
  readonly style?: string
  readonly explode?: boolean
  readonly schema: { readonly pattern?: string; readonly items?: { readonly enum?: ReadonlyArray<string> } }
}

type Operation = {
  readonly deprecated?: boolean
  readonly security: ReadonlyArray<Record<string, ReadonlyArray<string>>>
  readonly parameters: ReadonlyArray<Parameter>
  readonly responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>
  readonly summary?: string
  readonly description?: string
}

const spec = openApiDocument()

const operation = (endpoint: string): Operation => {
  const [method, path] = endpoint.split(" ") as [string, string]
  const op = (spec.paths[`/api/v1${path}`] as Record<string, Operation> | undefined)?.[method.toLowerCase()]
  if (op === undefined) throw new Error(`${endpoint} is not in the document`)
  return op
}

const INGRESS_PATHS = ["/webhooks/w/{uid}", "/webhooks/w/{uid}/{token}"]

const documented = Object.entries(spec.paths).filter(([path]) => !INGRESS_PATHS.includes(path)).flatMap(([path, item]) =>
  Object.keys(item).map((method) => `${method.toUpperCase()} ${path.replace(/^\/api\/v1/, "")}`)
)

const statuses = (endpoint: string) => Object.keys(operation(endpoint).responses).sort()

const refsIn = (value: unknown): Array<string> => {
  const json = JSON.stringify(value)
  return [...json.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!)
}

describe("the OpenAPI document", () => {
  it("is OpenAPI 3.1 with info version 1.0.0", () => {
    expect(spec.openapi).toBe("3.1.0")
    expect(spec.info.version).toBe("1.0.0")
    expect(spec.info.title).toBe("Agent Runs API")
  })

  it("has every endpoint of the API, all under /api/v1, and no other but the ingress", () => {
    expect(Object.keys(spec.paths).filter((path) => !path.startsWith("/api/v1/")).sort()).toEqual(INGRESS_PATHS)
    expect([...documented].sort()).toEqual([...expectedEndpoints].sort())
  })

  it("documents the webhook ingress: POST only, its statuses, no API token", () => {
    for (const path of INGRESS_PATHS) {
      const item = spec.paths[path] as Record<string, Operation>
      expect(Object.keys(item)).toEqual(["post"])
      expect(Object.keys(item["post"]!.responses).sort()).toEqual(["202", "400", "401", "404", "408", "413", "429"])
      expect(JSON.stringify(item["post"]!.security)).not.toContain("bearerAuth")
      for (const ref of refsIn(item["post"])) expect(spec.components.schemas[ref], ref).toBeDefined()
    }
  })

  it("marks only POST /agent/run deprecated", () => {
    expect(operation("POST /agent/run").deprecated).toBe(true)
    expect(documented.filter((e) => operation(e).deprecated === true)).toEqual(["POST /agent/run"])
  })

  it("describes every endpoint", () => {
    for (const endpoint of expectedEndpoints) {
      const op = operation(endpoint)
      expect(op.summary, endpoint).toBeTruthy()
      expect(op.description, endpoint).toBeTruthy()
    }
  })

  it("declares bearer security on every endpoint, and the run token on harness support", () => {
    expect(spec.components.securitySchemes["bearerAuth"]).toMatchObject({ type: "http", scheme: "bearer" })
    expect(spec.components.securitySchemes["runToken"]).toMatchObject({ type: "http", scheme: "bearer" })
    for (const endpoint of expectedEndpoints) {
      const scheme = endpoint.includes("/harness-support/") ? "runToken" : "bearerAuth"
      expect(operation(endpoint).security, endpoint).toEqual([{ [scheme]: [] }])
      expect(statuses(endpoint), endpoint).toContain("401")
    }
  })

  it("documents the TEAM header on team endpoints but not on the admin API", () => {
    const header = (endpoint: string) =>
      operation(endpoint).parameters.find((p) => p.in === "header" && p.name === "x-team-uid")
    for (const endpoint of expectedEndpoints.filter((e) => e.includes(" /agent"))) {
      expect(header(endpoint), endpoint).toMatchObject({ required: false })
    }
    expect(header("POST /admin/teams")).toBeUndefined()
  })

  it("has the documented error responses for cancel", () => {
    expect(statuses("POST /agent/runs/{runId}/cancel")).toEqual(
      expect.arrayContaining(["200", "400", "401", "403", "404", "409", "422", "500"])
    )
    const ok = operation("POST /agent/runs/{runId}/cancel").responses["200"]!
    expect(ok.content?.["application/json"]?.schema).toMatchObject({ type: "string", format: "uuid" })
    const conflict = operation("POST /agent/runs/{runId}/cancel").responses["409"]!
    expect(refsIn(conflict)).toEqual(["ConflictProblem"])
    expect(refsIn(operation("POST /agent/runs/{runId}/cancel").responses["422"])).toEqual([
      "OperationNotSupportedProblem"
    ])
  })

  it("has 400 and both kinds of 403 on the run list, and no 404", () => {
    expect(statuses("GET /agent/runs")).toEqual(expect.arrayContaining(["200", "400", "401", "403"]))
    expect(statuses("GET /agent/runs")).not.toContain("404")
    expect(refsIn(operation("GET /agent/runs").responses["403"]).sort()).toEqual([
      "FeatureNotAvailableProblem",
      "NotAuthorizedProblem"
    ])
    expect(refsIn(operation("GET /agent/runs").responses["400"])).toEqual(["InvalidRequestProblem"])
  })

  it("has the statuses of the other tables", () => {
    expect(statuses("GET /agent/runs/{runId}")).toEqual(expect.arrayContaining(["400", "401", "403", "404"]))
    expect(statuses("GET /agent/runs/{runId}/conversation")).toEqual(expect.arrayContaining(["404", "422"]))
    expect(statuses("GET /agent/conversations/{conversation_id}")).toEqual(expect.arrayContaining(["404", "422"]))
    expect(statuses("GET /agent/run-by-external-reference")).toEqual(expect.arrayContaining(["400", "404", "500"]))
    expect(statuses("POST /agent/schedules")).toEqual(expect.arrayContaining(["201", "400", "403"]))
    expect(refsIn(operation("POST /agent/schedules").responses["403"])).toContain("FeatureNotAvailableProblem")
    expect(statuses("POST /agent/webhooks")).toEqual(expect.arrayContaining(["201", "409"]))
    expect(statuses("POST /agent/runs")).toEqual(expect.arrayContaining(["200", "400", "401", "403", "413"]))
    expect(statuses("GET /agent/schedules")).toEqual(expect.arrayContaining(["200", "401", "500"]))
  })

  it("answers transcripts with a 302 redirect", () => {
    for (const endpoint of ["GET /agent/runs/{runId}/transcript", "GET /agent/conversations/{conversation_id}/transcript"]) {
      const found = operation(endpoint).responses["302"]
      expect(found?.description, endpoint).toMatch(/Location/)
      expect(found?.content, endpoint).toBeUndefined()
      expect(statuses(endpoint), endpoint).not.toContain("200")
    }
  })

  it("sends every error as application/problem+json, never @effect/platform's decode error", () => {
    for (const endpoint of expectedEndpoints) {
      for (const [status, response] of Object.entries(operation(endpoint).responses)) {
        if (Number(status) < 400) continue
        expect(Object.keys(response.content ?? {}), `${endpoint} ${status}`).toEqual(["application/problem+json"])
      }
    }
    expect(JSON.stringify(spec)).not.toContain("HttpApiDecodeError")
  })

  it("resolves every schema reference", () => {
    const defined = new Set(Object.keys(spec.components.schemas))
    const missing = refsIn(spec).filter((name) => !defined.has(name))
    expect(missing).toEqual([])
  })

  it("documents every run list query parameter", () => {
    const params = operation("GET /agent/runs").parameters.filter((p) => p.in === "query")
    expect(params.map((p) => p.name).sort()).toEqual([...RUN_LIST_PARAMS].sort())
    const byName = new Map(params.map((p) => [p.name, p]))
    expect(byName.get("limit")?.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 500, default: 20 })
    expect(byName.get("state")).toMatchObject({ style: "form", explode: true, schema: { type: "array" } })
    expect(byName.get("state")?.schema.items?.enum).toContain("CANCELLED")
    expect(byName.get("metadata")).toMatchObject({ style: "deepObject", explode: true, schema: { type: "object" } })
    expect(byName.get("created_after")?.schema).toMatchObject({ format: "date-time" })
    expect(params.every((p) => p.required === false && typeof p.description === "string")).toBe(true)
  })

  it("documents the run counts with the run list's filters, without its paging and sort", () => {
    const params = operation("GET /agent/run-counts").parameters.filter((p) => p.in === "query")
    const paging = ["limit", "cursor", "sort_by", "sort_order"]
    expect(params.map((p) => p.name).sort()).toEqual(RUN_LIST_PARAMS.filter((p) => !paging.includes(p)).sort())
    const byName = new Map(params.map((p) => [p.name, p]))
    expect(byName.get("state")).toMatchObject({ style: "form", explode: true, schema: { type: "array" } })
    expect(byName.get("metadata")).toMatchObject({ style: "deepObject", explode: true })
    expect(refsIn(operation("GET /agent/run-counts").responses["403"]).sort()).toEqual([
      "FeatureNotAvailableProblem",
      "NotAuthorizedProblem"
    ])
    expect(refsIn(operation("GET /agent/run-counts").responses["200"])).toEqual(["RunCountsResponse"])
    const counts = spec.components.schemas["RunCountsResponse"] as unknown as {
      properties: { counts: { required: Array<string> } }
    }
    expect(counts.properties.counts.required.sort()).toEqual(byName.get("state")?.schema.items?.enum?.slice().sort())
    expect(statuses("GET /agent/runs/{runId}/transcript-link")).toEqual(expect.arrayContaining(["200", "400", "404"]))
  })

  it("documents path ids with their formats", () => {
    const runId = operation("POST /agent/runs/{runId}/cancel").parameters.find((p) => p.in === "path")
    expect(runId).toMatchObject({ name: "runId", required: true, schema: { format: "uuid" } })
    const uid = operation("GET /agent/environments/{uid}").parameters.find((p) => p.in === "path")
    expect(uid?.schema.pattern).toBe("^[A-Za-z0-9]{22}$")
  })

  it("answers 201 to creations", () => {
    for (const endpoint of [
      "POST /agent/schedules", "POST /agent/environments", "POST /agent/webhooks", "POST /agent/automations",
      "POST /admin/teams", "POST /admin/principals", "POST /admin/principals/{uid}/tokens"
    ]) {
      expect(statuses(endpoint), endpoint).toContain("201")
    }
  })
})

describe("path parameters", () => {
  it("reject a malformed run id before any handler runs (a 400, not a 404)", () => {
    const paths: Array<Schema.Schema<never, unknown, never>> = []
    HttpApi.reflect(Api, {
      onGroup: () => undefined,
      onEndpoint: ({ endpoint }) => {
        if (endpoint.name === "cancelRun") {
          paths.push(Option.getOrThrow(endpoint.pathSchema))
        }
      }
    })
    expect(paths).toHaveLength(1)
    const decode = Schema.decodeUnknownEither(paths[0]!)
    expect(Either.isLeft(decode({ runId: "not-a-run" }))).toBe(true)
    expect(Either.isRight(decode({ runId: "019a6b2e-7c4d-7f00-8a00-0123456789ab" }))).toBe(true)
  })
})

describe("problem bodies", () => {
  it("encode a core error as docs/reference/errors.md says and decode it back", () => {
    const body = Schema.encodeSync(Problems.Conflict)(
      new Errors.Conflict({ message: "run is PENDING; try again shortly", retryable: true })
    )
    expect(body).toEqual({
      type: "/docs/errors#conflict",
      title: "Conflict",
      status: 409,
      error: "run is PENDING; try again shortly",
      error_code: "conflict",
      retryable: true
    })
    const back = Schema.decodeUnknownSync(Problems.Conflict)(body)
    expect(back).toBeInstanceOf(Errors.Conflict)
    expect(back.retryable).toBe(true)
  })

  it("carry the extension members in snake_case", () => {
    expect(
      Schema.encodeSync(Problems.RateLimited)(new Errors.RateLimited({ message: "slow down", retryAfterSeconds: 7 }))
    ).toMatchObject({ status: 429, error_code: "rate_limited", retryable: true, retry_after_seconds: 7 })
    expect(Schema.encodeSync(Problems.ResourceNotFound)(Errors.ResourceNotFound.of("run", "r1"))).toMatchObject({
      status: 404,
      error: "run r1 not found",
      resource: "run",
      id: "r1",
      retryable: false
    })
    expect(
      Schema.encodeSync(Problems.PayloadTooLarge)(new Errors.PayloadTooLarge({ message: "too big", limitBytes: 262144 }))
    ).toMatchObject({ status: 413, limit_bytes: 262144 })
  })

  it("round-trip every invalid_request, keeping the field", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string(), (field, problem) => {
        const error = Errors.InvalidRequest.forField(field, problem)
        const body = Schema.encodeSync(Problems.InvalidRequest)(error)
        expect(body).toMatchObject({ status: 400, error_code: "invalid_request", field, error: `${field}: ${problem}` })
        const back = Schema.decodeUnknownSync(Problems.InvalidRequest)(body)
        expect(back).toBeInstanceOf(Errors.InvalidRequest)
        expect({ field: back.field, message: back.message }).toEqual({ field, message: error.message })
      }),
      { numRuns: 200 }
    )
  })

  it("give each error code its status", () => {
    const cases: Array<[Schema.Schema.Any, number]> = [
      [Problems.InvalidRequest, 400], [Problems.AuthenticationRequired, 401], [Problems.NotAuthorized, 403],
      [Problems.FeatureNotAvailable, 403], [Problems.ResourceNotFound, 404], [Problems.Conflict, 409],
      [Problems.OperationNotSupported, 422], [Problems.RateLimited, 429], [Problems.PayloadTooLarge, 413],
      [Problems.InternalError, 500], [Problems.ResourceUnavailable, 503]
    ]
    for (const [schema, status] of cases) {
      expect(HttpApiSchema.getStatusError(schema)).toBe(status)
    }
  })
})
