/**
 * The definition on a real @effect/platform server: a small API made of the runs group, with
 * stand-in handlers, shows the statuses, content types and bodies the definition produces.
 */
import { HttpApi, HttpApiBuilder, HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Errors, type Access, type Ids } from "@agent-runs/core"
import { Effect, Layer, Redacted } from "effect"
import { RunsGroup } from "@agent-runs/api/endpoints/Runs"
import { DecodeErrorsAsProblems } from "../src/DecodeErrors.js"
import * as Problems from "@agent-runs/api/Problems"
import { Authentication, CurrentViewer } from "@agent-runs/api/Security"

const TOKEN = "ar_test-token"
const PENDING_RUN = "019a6b2e-7c4d-7f00-8a00-000000000001"
const RUN = "019a6b2e-7c4d-7f00-8a00-000000000002"

const viewer: Access.Viewer = {
  principal_uid: "P".repeat(22) as Ids.PrincipalUid,
  team_uid: "T".repeat(22) as Ids.TeamUid,
  role: "member",
  instance_admin: false
}

class MiniApi extends HttpApi.make("AgentRuns")
  .add(RunsGroup)
  .addError(Problems.InvalidRequest, { status: 400 })
  .addError(Problems.InternalError, { status: 500 })
  .prefix("/api/v1")
{}

const unused = () => Effect.die("not used by this test")

const RunsLive = HttpApiBuilder.group(MiniApi, "runs", (handlers) =>
  handlers
    .handle("cancelRun", ({ path }) =>
      Effect.gen(function*() {
        const caller = yield* CurrentViewer
        if (caller.principal_uid !== viewer.principal_uid) return yield* Effect.die("wrong viewer")
        if (path.runId === PENDING_RUN) {
          return yield* new Errors.Conflict({ message: "run is PENDING; try again shortly", retryable: true })
        }
        if (path.runId !== RUN) return yield* Errors.ResourceNotFound.of("run", path.runId)
        return path.runId
      }))
    .handle("deleteRun", unused)
    .handle("createRun", unused)
    .handle("createRunDeprecated", unused)
    .handle("listRuns", unused)
    .handle("countRuns", unused)
    .handle("getRun", unused)
    .handle("getRunTimeline", unused)
    .handle("getRunConversation", unused)
    .handle("getRunTranscript", unused)
    .handle("getRunTranscriptLink", unused)
    .handle("createRunFollowup", unused)
    .handle("getRunByExternalReference", unused)
    .handle("streamRunEvents", unused)
)

const AuthenticationLive = Layer.succeed(Authentication, {
  bearerAuth: (token) =>
    Redacted.value(token) === TOKEN
      ? Effect.succeed(viewer)
      : Effect.fail(new Errors.AuthenticationRequired({ message: "missing or invalid bearer token" }))
})

const serve = () =>
  HttpApiBuilder.toWebHandler(
    Layer.mergeAll(
      HttpApiBuilder.api(MiniApi).pipe(Layer.provide(RunsLive), Layer.provide(AuthenticationLive)),
      DecodeErrorsAsProblems,
      HttpServer.layerContext
    )
  )

const cancel = async (runId: string, token: string | undefined) => {
  const { dispose, handler } = serve()
  try {
    const response = await handler(
      new Request(`http://localhost/api/v1/agent/runs/${runId}/cancel`, {
        method: "POST",
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` }
      })
    )
    return { status: response.status, contentType: response.headers.get("content-type"), body: await response.json() }
  } finally {
    await dispose()
  }
}

const createRun = async (body: string) => {
  const { dispose, handler } = serve()
  try {
    const response = await handler(
      new Request("http://localhost/api/v1/agent/runs", {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body
      })
    )
    return { status: response.status, contentType: response.headers.get("content-type"), body: await response.json() }
  } finally {
    await dispose()
  }
}

describe("the definition on a server", () => {
  it("answers a cancel with the run id as a JSON string", async () => {
    expect(await cancel(RUN, TOKEN)).toEqual({ status: 200, contentType: "application/json", body: RUN })
  })

  it("answers a core Conflict as a 409 problem", async () => {
    expect(await cancel(PENDING_RUN, TOKEN)).toEqual({
      status: 409,
      contentType: "application/problem+json",
      body: {
        type: "/docs/errors#conflict",
        title: "Conflict",
        status: 409,
        error: "run is PENDING; try again shortly",
        error_code: "conflict",
        retryable: true
      }
    })
  })

  it("answers a core ResourceNotFound as a 404 problem", async () => {
    const unknown = "019a6b2e-7c4d-7f00-8a00-0000000000ff"
    const answer = await cancel(unknown, TOKEN)
    expect(answer).toMatchObject({ status: 404, contentType: "application/problem+json" })
    expect(answer.body).toMatchObject({ error_code: "resource_not_found", resource: "run", id: unknown })
  })

  it("answers a missing or wrong token with a 401 problem", async () => {
    for (const token of [undefined, "ar_wrong"]) {
      const answer = await cancel(RUN, token)
      expect(answer).toMatchObject({ status: 401, contentType: "application/problem+json" })
      expect(answer.body).toMatchObject({ error_code: "authentication_required", retryable: false })
    }
  })

  it("rejects a malformed run id with a 400 problem naming the parameter", async () => {
    const answer = await cancel("not-a-run", TOKEN)
    expect(answer).toMatchObject({ status: 400, contentType: "application/problem+json" })
    expect(answer.body).toMatchObject({
      error_code: "invalid_request",
      field: "runId",
      retryable: false,
      error: expect.stringMatching(/^runId: run id must be a lowercase UUIDv7/)
    })
  })

  it("rejects an invalid body with a 400 problem naming the field, before the handler runs", async () => {
    const missing = await createRun("{}")
    expect(missing).toMatchObject({ status: 400, contentType: "application/problem+json" })
    expect(missing.body).toMatchObject({ field: "prompt", error: expect.stringMatching(/^prompt: is required, also when a skill is given/) })
    const wrongType = await createRun(JSON.stringify({ prompt: "hi", config: { model_id: 3 } }))
    expect(wrongType.body).toMatchObject({ status: 400, field: "config.model_id" })
  })
})
