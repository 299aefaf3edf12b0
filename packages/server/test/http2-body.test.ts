/**
 * A request body that declares no length (HTTP/2 sends no `transfer-encoding`, and `content-length`
 * is optional) is still read under the body limit: the service mounted in a `node:http2` host
 * answers a POST of a body over the limit with 413, and stores nothing.
 */
import { connect, createServer, type Http2Server } from "node:http2"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LocalService, startLocalService } from "./support/LocalService.js"

const LIMIT = 1024 * 1024

describe("a body without a declared length (HTTP/2)", () => {
  let service: LocalService
  let host: Http2Server
  let origin: string

  beforeAll(async () => {
    service = await startLocalService({ name: "http2-body", mountAt: "/agents", executor: false })
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the compatibility API's request and response stand in for node:http's
    host = createServer((request, response) => service.mounted!.handler(request as any, response as any))
    await new Promise<void>((resolve) => host.listen(0, "127.0.0.1", resolve))
    origin = `http://127.0.0.1:${(host.address() as AddressInfo).port}`
  })

  afterAll(async () => {
    await new Promise((resolve) => host?.close(resolve))
    await service?.close()
  })

  /** POSTs `body` over HTTP/2 without `content-length`; answers the status and the body. */
  const post = (path: string, body: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const client = connect(origin)
      client.on("error", reject)
      const stream = client.request({
        ":method": "POST",
        ":path": path,
        authorization: `Bearer ${service.adminToken}`,
        "content-type": "application/json"
      })
      let status = 0
      let text = ""
      stream.on("response", (headers) => (status = Number(headers[":status"])))
      stream.setEncoding("utf8")
      stream.on("data", (chunk: string) => (text += chunk))
      stream.on("end", () => {
        client.close()
        resolve({ status, body: text })
      })
      stream.on("error", (error) => {
        client.close()
        // The server may answer and reset the stream before the whole body is sent.
        if (status === 0) reject(error)
        else resolve({ status, body: text })
      })
      stream.end(body)
    })

  it("refuses a body over the limit with 413, and creates nothing", async () => {
    const count = async () => ((await (await service.api.call("GET", "/agent/runs?limit=100")).json()) as { runs: Array<unknown> }).runs.length
    const before = await count()
    const oversized = JSON.stringify({ prompt: "over the limit", padding: "a".repeat(LIMIT) })
    const answer = await post("/agents/api/v1/agent/runs", oversized)
    expect(answer.status).toBe(413)
    expect(JSON.parse(answer.body).error).toContain("body")
    expect(await count()).toBe(before)
    // A body under the limit is read as usual.
    const fine = await post("/agents/api/v1/agent/runs", JSON.stringify({ prompt: "under the limit" }))
    expect(fine.status).toBe(200)
  })
})
