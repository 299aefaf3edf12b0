/**
 * How the HTTP layer reads requests (docs/reference/api.md), on the service served standalone:
 * query strings as sent, one trailing slash ignored, 405 with `Allow`, 415 for bodies that are
 * not JSON, and bodies nested too deeply refused with a 400 before anything parses them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LocalService, startLocalService } from "./support/LocalService.js"

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const json = async (response: Response): Promise<any> => response.json()

describe("the HTTP layer's rules", () => {
  let service: LocalService
  let api: string
  let auth: { authorization: string }

  beforeAll(async () => {
    service = await startLocalService({ name: "http-rules" })
    api = `${service.base}/api/v1`
    auth = { authorization: `Bearer ${service.adminToken}` }
  })

  afterAll(async () => {
    await service?.close()
  })

  it("reads a query string as sent: `//` in a value is kept", async () => {
    const reference = "https://example.test/a//b/pull/1"
    const run = await service.api.runToEnd(`@artifact EXTERNAL_REFERENCE ${reference}`)
    expect(run.state).toBe("SUCCEEDED")
    const found = await fetch(`${api}/agent/run-by-external-reference?url=${reference}`, { headers: auth })
    expect(found.status).toBe(200)
    expect((await json(found)).run_id).toBe(run.runId)
    const repo = await json(await fetch(`${api}/agent?repo=https://github.com/a/b`, { headers: auth }))
    expect(repo.error).toContain(`got "https://github.com/a/b"`)
  })

  it("ignores one trailing slash; an id left empty is a 400 naming it", async () => {
    const plain = await json(await fetch(`${api}/agent/runs`, { headers: auth }))
    const slashed = await fetch(`${api}/agent/runs/`, { headers: auth })
    expect(slashed.status).toBe(200)
    expect((await json(slashed)).runs.map((r: { run_id: string }) => r.run_id)).toEqual(plain.runs.map((r: { run_id: string }) => r.run_id))
    expect((await fetch(`${api}/agent/schedules/`, { headers: auth })).status).toBe(200)
    const emptyRun = await fetch(`${api}/agent/runs//cancel`, { method: "POST", headers: auth })
    expect(emptyRun.status).toBe(400)
    expect((await json(emptyRun)).field).toBe("runId")
    const emptyConversation = await fetch(`${api}/agent/conversations/`, { headers: auth })
    expect(emptyConversation.status).toBe(400)
    expect((await json(emptyConversation)).field).toBe("conversation_id")
  })

  it("answers a method a path does not take with 405 and Allow; an unknown path stays a 404", async () => {
    const patch = await fetch(`${api}/agent/runs`, { method: "PATCH", headers: auth })
    expect(patch.status).toBe(405)
    expect(patch.headers.get("allow")).toBe("GET, HEAD, POST")
    expect(await json(patch)).toMatchObject({ error_code: "method_not_allowed", allow: ["GET", "HEAD", "POST"] })
    const put = await fetch(`${api}/agent/runs/01a21e29-72ca-7569-9e47-5d89afd5faad`, { method: "PUT", headers: auth })
    expect(put.status).toBe(405)
    expect(put.headers.get("allow")).toBe("DELETE, GET, HEAD")
    expect((await fetch(`${api}/agent/nothing-here`, { method: "DELETE", headers: auth })).status).toBe(404)
  })

  it("refuses a form or text body with 415 naming JSON; a body without a content type is read as JSON", async () => {
    for (const [contentType, body] of [["text/plain", "Say hello"], ["application/x-www-form-urlencoded", "prompt=Say+hello"]]) {
      const answer = await fetch(`${api}/agent/runs`, { method: "POST", headers: { ...auth, "content-type": contentType! }, body: body! })
      expect(answer.status).toBe(415)
      const problem = await json(answer)
      expect(problem).toMatchObject({ error_code: "unsupported_media_type", expected: "application/json" })
      expect(problem.error).toContain("Content-Type: application/json")
    }
    const bare = await fetch(`${api}/agent/runs`, { method: "POST", headers: auth, body: new TextEncoder().encode(JSON.stringify({ prompt: "Say hello" })) })
    expect(bare.status).toBe(200)
    const charset = await fetch(`${api}/agent/runs`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({ prompt: "Say hello" })
    })
    expect(charset.status).toBe(200)
  })

  it("refuses a JSON body nested thousands of levels deep with a 400 naming body, not a 500", async () => {
    for (const deep of ["[".repeat(5_000) + "]".repeat(5_000), `{"prompt":"x","config":${"{\"a\":".repeat(3_000)}1${"}".repeat(3_000)}}`]) {
      const answer = await fetch(`${api}/agent/runs`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: deep })
      expect(answer.status).toBe(400)
      expect(await json(answer)).toMatchObject({ error_code: "invalid_request", field: "body" })
    }
  })
})
