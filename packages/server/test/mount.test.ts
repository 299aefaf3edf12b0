/**
 * The service mounted under `/agents` in a bare `node:http` server and behind a `fetch` handler:
 * a run created through the mounted API finishes and its conversation reads back; every link the
 * service writes names the prefix; paths outside it stay the host's; a host that forgot an
 * option, or whose storage is unreachable, gets one line saying so.
 */
import { PgStorage } from "@agent-runs/storage-pg"
import { assistantTexts } from "@agent-runs/testing"
import { Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type AgentRuns, mount, Mount } from "../src/index.js"
import { HOST_PAGE, type LocalService, serviceOptions, startLocalService } from "./support/LocalService.js"

const adminToken = `ar_${randomBytes(32).toString("base64url")}`
const secretKey = new Uint8Array(randomBytes(32))

const optionsFor = (dir: string, publicUrl: string): AgentRuns.AgentRunsOptions<unknown, unknown, never> =>
  serviceOptions({ dir, publicUrl, secretKey, adminToken })

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const json = async (response: Response): Promise<any> => response.json()

describe("mount under a prefix in node:http", () => {
  let service: LocalService
  let base: string
  let agents: Mount.Mounted

  beforeAll(async () => {
    service = await startLocalService({ name: "mount", mountAt: "/agents" })
    base = service.origin
    agents = service.mounted!
  })

  afterAll(async () => {
    await service?.close()
  })

  const api = () => service.api

  it("creates a run, which finishes, and reads its conversation", async () => {
    const run = await api().runToEnd("Say hello")
    expect(run.state).toBe("SUCCEEDED")
    expect(assistantTexts(run.conversation.steps)).toContain("Done: Say hello")
    // The transcript's signed download URL starts with the public URL, prefix included, and works.
    const transcript = await api().call("GET", `/agent/runs/${run.runId}/transcript`)
    expect(transcript.url.startsWith(`${base}/agents/api/v1/downloads/transcripts/`)).toBe(true)
    expect(transcript.status).toBe(200)
  })

  it("names the prefix in the OpenAPI document and the docs page; health answers under it", async () => {
    const document = await json(await fetch(`${base}/agents/openapi.json`))
    expect(document.servers).toEqual([{ url: "/agents" }])
    const docs = await (await fetch(`${base}/agents/docs`)).text()
    expect(docs).toContain(`"servers":[{"url":"/agents"}]`)
    expect((await fetch(`${base}/agents/healthz`)).status).toBe(200)
    expect((await json(await fetch(`${base}/agents/readyz`))).status).toBe("ready")
  })

  it("says so, instead of hanging, when mounted after a body parser that read the body", async () => {
    const parsing = createServer((request, response) => {
      let text = ""
      request.on("data", (chunk) => (text += chunk))
      request.on("end", () => {
        ;(request as { body?: unknown }).body = JSON.parse(text)
        agents.handler(request, response)
      })
    })
    await new Promise<void>((resolve) => parsing.listen(0, "127.0.0.1", resolve))
    try {
      const port = (parsing.address() as AddressInfo).port
      const answer = await fetch(`http://127.0.0.1:${port}/agents/api/v1/agent/runs`, {
        method: "POST",
        headers: { authorization: `Bearer ${service.adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ prompt: "x" })
      })
      expect(answer.status).toBe(500)
      expect(await answer.text()).toContain("mount it before (for example before express.json())")
    } finally {
      await new Promise((resolve) => parsing.close(resolve))
    }
  })

  it("answers its root with a page linking to the dashboard, the docs, the API and health; every problem type resolves to its section", async () => {
    const home = await fetch(`${base}/agents`)
    expect(home.headers.get("content-type")).toContain("text/html")
    const page = await home.text()
    for (const link of ["/agents/app", "/agents/docs", "/agents/openapi.json", "/agents/docs/errors", "/agents/healthz", "/agents/readyz"]) {
      expect(page).toContain(`href="${link}"`)
      expect((await fetch(`${base}${link}`)).status).toBe(200)
    }
    expect(page).not.toMatch(/(src|href)="https?:/)
    const errors = await (await fetch(`${base}/agents/docs/errors`)).text()
    const problems = [
      await fetch(`${base}/agents/api/v1/agent/runs`),
      await fetch(`${base}/agents/api/v1/agent/runs`, { method: "PATCH", headers: { authorization: `Bearer ${service.adminToken}` } }),
      await fetch(`${base}/agents/api/v1/agent/runs/nope`, { headers: { authorization: `Bearer ${service.adminToken}` } })
    ]
    for (const answer of problems) {
      const { error_code, type } = await json(answer)
      expect(type).toBe(`/agents/docs/errors#${error_code}`)
      expect(errors).toContain(`id="${error_code}"`)
    }
  })

  it("leaves paths outside the prefix to the host", async () => {
    expect(await (await fetch(`${base}/agentsx/healthz`)).text()).toBe(HOST_PAGE)
    expect(await (await fetch(`${base}/healthz`)).text()).toBe(HOST_PAGE)
  })

  it("answers web requests through fetch, prefix included or stripped", async () => {
    const withPrefix = await agents.fetch(new Request("http://example.test/agents/healthz"))
    expect(await json(withPrefix)).toEqual({ status: "ok" })
    const stripped = await agents.fetch(
      new Request("http://example.test/api/v1/agent/runs", { headers: { authorization: `Bearer ${service.adminToken}` } })
    )
    expect(stripped.status).toBe(200)
    expect((await json(stripped)).runs.length).toBeGreaterThan(0)
  })

  it("reads webhook deliveries' bodies through fetch: accepted, too large, refused unread", async () => {
    const hook = await api().json<{ uid: string; secret: string }>(await api().call("POST", "/agent/webhooks", { name: "Fetched" }))
    const deliver = (body: string, authorization = `Bearer ${hook.secret}`) =>
      agents.fetch(new Request(`http://example.test/agents/webhooks/w/${hook.uid}`, {
        method: "POST",
        headers: { authorization, "content-type": "application/json" },
        body
      }))
    const body = JSON.stringify({ ref: "main", padding: "x".repeat(100_000) })
    const accepted = await deliver(body)
    expect(accepted.status).toBe(202)
    const deliveries = await api().json<{ deliveries: Array<{ outcome: string; size_bytes: number; payload?: { ref: string } }> }>(
      await api().call("GET", `/agent/webhooks/${hook.uid}/deliveries`)
    )
    expect(deliveries.deliveries.map((d) => [d.outcome, d.size_bytes, d.payload?.ref])).toEqual([["ACCEPTED", body.length, "main"]])
    const tooLarge = await deliver("x".repeat(600 * 1024))
    expect(tooLarge.status).toBe(413)
    expect(tooLarge.headers.get("connection")).toBe(null)
    expect((await deliver("{}", "Bearer wrong")).status).toBe(401)
    const unknown = await agents.fetch(new Request("http://example.test/agents/webhooks/w/0000000000000000000000", { method: "POST", body: "{}" }))
    expect(unknown.status).toBe(404)
  })

  it("a web body that fails after the ingress stopped reading it does not take the process down", async () => {
    // 1.5 MiB to an unknown webhook (404: read and dropped up to 1 MiB), then the sender resets.
    let sent = 0
    let failed = false
    const body = new ReadableStream<Uint8Array>({
      pull: (controller) => {
        if (sent < 1536 * 1024) {
          sent += 64 * 1024
          return controller.enqueue(new Uint8Array(64 * 1024))
        }
        failed = true
        controller.error(new Error("the sender reset the connection"))
      }
    })
    const refused = await agents.fetch(
      new Request("http://example.test/agents/webhooks/w/0000000000000000000000", { method: "POST", body, duplex: "half" } as RequestInit)
    )
    expect(refused.status).toBe(404)
    while (!failed) await new Promise((resolve) => setTimeout(resolve, 10))
    // An error nobody listens to would surface here, as an uncaught exception failing the run.
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect((await agents.fetch(new Request("http://example.test/agents/healthz"))).status).toBe(200)
  })
})

describe("standalone (Listen)", () => {
  it("serves the service on its own port until the scope closes", async () => {
    const service = await startLocalService({ name: "listen" })
    try {
      const run = await service.api.runToEnd("Say hello")
      expect(run.state).toBe("SUCCEEDED")
      expect((await json(await fetch(`${service.base}/openapi.json`))).servers).toEqual([{ url: "/" }])
    } finally {
      await service.close()
    }
    await expect(fetch(`${service.base}/healthz`)).rejects.toThrow()
  })
})

describe("start-up problems", () => {
  it("is a type error to leave out a required adapter", () => {
    const { storage: _storage, ...withoutStorage } = optionsFor(tmpdir(), "http://127.0.0.1:1")
    // @ts-expect-error: `storage` is required
    const check = () => mount(withoutStorage)
    expect(typeof check).toBe("function")
  })

  it("refuses options without a required piece, in one line naming it", async () => {
    const { storage: _storage, ...withoutStorage } = optionsFor(tmpdir(), "http://127.0.0.1:1/agents")
    const refused = await mount(withoutStorage as AgentRuns.AgentRunsOptions<unknown, unknown, never>).catch((e: Error) => e)
    expect(refused).toBeInstanceOf(Mount.InvalidOptions)
    expect((refused as Error).message).toMatch(/^Agent Runs: options\.storage is required: a storage layer/)
    const shortKey = await mount({ ...optionsFor(tmpdir(), "http://127.0.0.1:1"), secretKey: new Uint8Array(8) })
      .catch((e: Error) => e)
    expect((shortKey as Error).message).toBe("Agent Runs: options.secretKey must be 32 bytes, not 8")
    const hexKey = await mount({ ...optionsFor(tmpdir(), "http://127.0.0.1:1"), secretKey: "00".repeat(32) as unknown as Uint8Array })
      .catch((e: Error) => e)
    expect((hexKey as Error).message).toMatch(/^Agent Runs: options\.secretKey must be 32 bytes in a Uint8Array/)
    const relative = await mount(optionsFor(tmpdir(), "/agents")).catch((e: Error) => e)
    expect((relative as Error).message).toMatch(/^Agent Runs: options\.publicUrl must be an absolute URL such as http/)
  })

  it("names options.adminToken when the admin token is unusable", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agent-runs-mount-"))
    try {
      const failed = await mount({ ...optionsFor(dir, "http://127.0.0.1:1"), adminToken: "short" }).catch((e: Error) => e)
      expect((failed as Error).message).toMatch(/^Agent Runs could not start: .*options\.adminToken.*must be ar_ followed by/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("says in one line that storage is unreachable", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agent-runs-mount-"))
    try {
      const failed = await mount({
        ...optionsFor(dir, "http://127.0.0.1:1"),
        storage: PgStorage.layer({ url: Redacted.make("postgres://postgres@127.0.0.1:1/none"), secretKey: Redacted.make(secretKey) })
      }).catch((e: Error) => e)
      expect(failed).toBeInstanceOf(Error)
      expect((failed as Error).message).toMatch(/^Agent Runs could not start: /)
      expect((failed as Error).message).not.toContain("\n")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
