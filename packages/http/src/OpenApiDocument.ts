/**
 * The OpenAPI 3.1 document of the API, generated from the HttpApi definition (served at
 * `/openapi.json`), plus the webhook ingress, which is not part of the HttpApi (it reads raw bytes
 * under its own limit and order of checks; see Ingress.ts).
 *
 * Two corrections make the generated document say what the server does:
 * - Request bodies: the server ignores properties it does not know (Schema's default on decode),
 *   so no schema a request body uses says `additionalProperties: false` (the generator writes it
 *   for every struct). A schema shared with answers loses it there too: still true, less strict.
 * - Redirects (302): the `Location` header is declared, not only described.
 * - Every operation that takes a body lists 413: the server's body limit applies to all of them.
 * - Every API operation that takes a body lists 415: a body that is not JSON by its `Content-Type`
 *   is refused before the endpoint (the ingress reads any media type and is left as it is).
 */
import { OpenApi } from "@effect/platform"
import { Api } from "@agent-runs/api/Api"

const problem = (name: string, description: string) => ({
  description,
  content: { "application/problem+json": { schema: { $ref: `#/components/schemas/${name}Problem` } } }
})

const ingressOperation = (withToken: boolean) => ({
  post: {
    tags: ["webhook ingress"],
    operationId: withToken ? "ingress.receiveWithToken" : "ingress.receive",
    summary: withToken ? "Deliver to a url_token webhook" : "Deliver to a webhook",
    description:
      "Where senders POST JSON (at `{webhook_base_url}`). Checks in order: unknown, disabled or deleted webhook 404; " +
      "the sender's authentication-failure budget spent 429; body over 256 KiB 413; body not arrived within the " +
      "body timeout 408; authentication (Bearer secret, " +
      "URL token, or the provider signature of the webhook's scheme) 401; over 60 deliveries a minute per webhook and " +
      "sender 429 with Retry-After; body not JSON 400; a delivery seen before 202 (nothing starts); otherwise 202, " +
      "and each enabled automation whose trigger matches starts a run.",
    security: withToken ? [] : [{}, { webhookToken: [] }],
    parameters: [
      { name: "uid", in: "path", required: true, schema: { type: "string", pattern: "^[A-Za-z0-9]{22}$" } },
      ...(withToken ? [{ name: "token", in: "path", required: true, schema: { type: "string" } }] : [])
    ],
    requestBody: { required: true, content: { "application/json": { schema: {} } } },
    responses: {
      "202": {
        description: "Accepted for evaluation (also for a duplicate, which starts nothing)",
        content: {
          "application/json": {
            schema: { type: "object", required: ["delivery_id"], properties: { delivery_id: { type: "string" } } }
          }
        }
      },
      "400": problem("InvalidRequest", "the body is not JSON"),
      "401": problem("AuthenticationRequired", "authentication failed"),
      "404": problem("ResourceNotFound", "unknown, disabled or deleted webhook"),
      "408": {
        description: "the body did not arrive in full within the server's body timeout (10 s by default): " +
          "`error_code` `invalid_request` naming `body`; the connection is closed and the attempt counts in the " +
          "sender's authentication-failure budget",
        content: { "application/problem+json": { schema: { type: "object" } } }
      },
      "413": problem("PayloadTooLarge", "the body is over 256 KiB"),
      "429": problem("RateLimited", "over a rate limit; see Retry-After")
    }
  }
})

/** The document's `servers`: the prefix the service is mounted under (`/` at the root). */
export const serversOf = (basePath: string): Array<OpenApi.OpenAPISpecServer> => [{ url: basePath === "" ? "/" : basePath }]

/**
 * The OpenAPI 3.1 document of every endpoint of `Api` (info version 1.0.0) and of the webhook
 * ingress, for the service mounted under `basePath` (`""`: at the root).
 */
export const openApiDocument = (basePath = ""): OpenApi.OpenAPISpec => {
  const spec = structuredClone(OpenApi.fromApi(Api))
  allowUnknownRequestProperties(spec)
  declareRedirectLocations(spec)
  declareBodyLimits(spec)
  declareMediaTypes(spec)
  return {
    ...spec,
    servers: serversOf(basePath),
    paths: {
      ...spec.paths,
      "/webhooks/w/{uid}": ingressOperation(false),
      "/webhooks/w/{uid}/{token}": ingressOperation(true)
    } as unknown as OpenApi.OpenAPISpec["paths"],
    components: {
      ...spec.components,
      securitySchemes: {
        ...spec.components.securitySchemes,
        webhookToken: {
          type: "http",
          scheme: "bearer",
          description: "A `token` webhook's secret, sent as `Authorization: Bearer <secret>`"
        }
      }
    }
  }
}

type Json = { [key: string]: unknown }
const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null

/** Every operation object of the document's paths. */
const operationsOf = (spec: OpenApi.OpenAPISpec): Array<Json> =>
  Object.values(spec.paths as unknown as Record<string, Json>).flatMap((item) =>
    ["get", "put", "post", "delete", "patch"].flatMap((method) => (isObject(item[method]) ? [item[method]] : []))
  )

/** Removes `additionalProperties: false` from every schema a request body uses, through `$ref`s. */
const allowUnknownRequestProperties = (spec: OpenApi.OpenAPISpec): void => {
  const schemas = spec.components.schemas as unknown as Record<string, unknown>
  const seen = new Set<string>()
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit)
    if (!isObject(node)) return
    if (node.additionalProperties === false) delete node.additionalProperties
    const ref = node.$ref
    if (typeof ref === "string" && ref.startsWith("#/components/schemas/")) {
      const name = ref.slice("#/components/schemas/".length)
      if (!seen.has(name)) {
        seen.add(name)
        visit(schemas[name])
      }
    }
    for (const value of Object.values(node)) visit(value)
  }
  for (const operation of operationsOf(spec)) visit(operation.requestBody)
}

/** Declares the `Location` header of every 302 answer (a signed download URL). */
const declareRedirectLocations = (spec: OpenApi.OpenAPISpec): void => {
  for (const operation of operationsOf(spec)) {
    const found = isObject(operation.responses) ? operation.responses["302"] : undefined
    if (!isObject(found)) continue
    found.headers = {
      Location: {
        required: true,
        description: "the signed, time-limited URL to fetch (no bearer token needed)",
        schema: { type: "string", format: "uri" }
      }
    }
  }
}

/** Lists 413 `payload_too_large` on every operation with a request body (the body limit is global). */
const declareBodyLimits = (spec: OpenApi.OpenAPISpec): void => {
  for (const operation of operationsOf(spec)) {
    if (operation.requestBody === undefined || !isObject(operation.responses) || operation.responses["413"] !== undefined) continue
    const description = "payload_too_large: the request body is over its limit"
    operation.responses = {
      ...operation.responses,
      "413": {
        description,
        content: {
          "application/problem+json": {
            schema: { allOf: [{ $ref: "#/components/schemas/PayloadTooLargeProblem" }], description }
          }
        }
      }
    }
  }
}

/** 415 `unsupported_media_type` on every API operation with a body (ServerMiddleware refuses non-JSON). */
const declareMediaTypes = (spec: OpenApi.OpenAPISpec): void => {
  const schemas = spec.components.schemas as unknown as Record<string, unknown>
  const description = "unsupported_media_type: the body's Content-Type is not JSON (`expected`: application/json)"
  schemas["UnsupportedMediaTypeProblem"] = {
    type: "object",
    required: ["type", "title", "status", "error", "error_code", "retryable", "expected"],
    properties: {
      type: { type: "string" },
      title: { type: "string" },
      status: { type: "number", enum: [415] },
      error: { type: "string", description: "what went wrong" },
      error_code: { type: "string", enum: ["unsupported_media_type"] },
      retryable: { type: "boolean" },
      detail: { type: "string" },
      trace_id: { type: "string" },
      expected: { type: "string", description: "the media type the endpoint reads" }
    },
    additionalProperties: false,
    description
  }
  for (const operation of operationsOf(spec)) {
    if (operation.requestBody === undefined || !isObject(operation.responses) || operation.responses["415"] !== undefined) continue
    if (operation.operationId === "ingress.receive" || operation.operationId === "ingress.receiveWithToken") continue
    operation.responses = {
      ...operation.responses,
      "415": {
        description,
        content: { "application/problem+json": { schema: { $ref: "#/components/schemas/UnsupportedMediaTypeProblem" } } }
      }
    }
  }
}
