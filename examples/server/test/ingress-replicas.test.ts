/**
 * The webhook ingress on a fleet: two built server processes on one PostgreSQL database receive
 * the same deliveries at once (each delivery starts its runs once), and a replica started after
 * one was stopped still knows them (duplicates across restarts).
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { postgresFleet } from "./fleet.js"
import { makeTeam } from "./harness.js"
import { call, type ServerProcess } from "./process.js"

describe("the webhook ingress on two server processes on one PostgreSQL", () => {
  const { adminToken, spawn } = postgresFleet()

  it("deliveries posted to both replicas at once start each run once, and stay duplicates after a restart", async () => {
    // One after the other: first starts on an empty database race on the bootstrap admin (docs/http.md).
    const a = await spawn()
    const b = await spawn()
    const team = await makeTeam({ url: a.url, adminToken }, "fleet hooks")
    const api = (server: ServerProcess, method: string, path: string, body?: unknown) =>
      call(server, method, `/api/v1${path}`, { token: team.tokens.admin, ...(body === undefined ? {} : { body }) })
    const hook = (await api(a, "POST", "/agent/webhooks", { name: "fleet" })).body
    expect((await api(a, "POST", "/agent/automations", {
      name: "on every delivery",
      prompt: "go",
      trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [hook.uid] } }
    })).status).toBe(201)

    const deliver = async (server: ServerProcess, i: number) => {
      const response = await fetch(`${server.url}/webhooks/w/${hook.uid}`, {
        method: "POST",
        headers: { authorization: `Bearer ${hook.secret}`, "content-type": "application/json", "x-service-delivery-id": `evt-${i}` },
        body: JSON.stringify({ event: i })
      })
      return response.status
    }
    const events = 12
    // Each delivery three times, to both replicas at once (two to B).
    const statuses = await Promise.all(
      Array.from({ length: events }, (_, i) => [deliver(a, i), deliver(b, i), deliver(b, i)]).flat()
    )
    expect(statuses.every((s) => s === 202)).toBe(true)

    // A replica started after the first one stopped still knows every delivery.
    await Effect.runPromise(a.stop)
    const c = await spawn()
    expect(await Promise.all(Array.from({ length: events }, (_, i) => deliver(c, i)))).toEqual(Array(events).fill(202))

    const log = (await api(c, "GET", `/agent/webhooks/${hook.uid}/deliveries?limit=100`)).body.deliveries as Array<
      { outcome: string; run_ids: Array<string>; identity: string }
    >
    const accepted = log.filter((d) => d.outcome === "ACCEPTED")
    expect(accepted.length).toBe(events)
    expect(new Set(accepted.map((d) => d.identity)).size).toBe(events)
    expect(log.filter((d) => d.outcome === "DUPLICATE").length).toBe(events * 3)
    const runs = (await api(b, "GET", "/agent/runs?source=WEBHOOK&limit=100")).body.runs as Array<
      { metadata: Record<string, string> }
    >
    expect(runs.length).toBe(events)
    expect(new Set(runs.map((r) => r.metadata["delivery_id"])).size).toBe(events)
  }, 120_000)
})
