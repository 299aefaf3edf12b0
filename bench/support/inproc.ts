/**
 * Profiling aid (not a benchmark): the service mounted in this process on SQLite (concurrency 0),
 * 20,000 seeded runs, then N sequential requests through its fetch handler: prints the CPU time per
 * request of GET /agent/runs?limit=20 and POST /agent/runs. Run under `node --cpu-prof` to see where
 * a request's time goes without a load generator on the same CPUs:
 *   node --cpu-prof --cpu-prof-dir=bench/profiles node_modules/.bin/vite-node --config bench/vite.config.ts bench/support/inproc.ts
 */
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { RunStore, Signatures } from "@agent-runs/core"
import { mount } from "@agent-runs/server"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { tmpdir } from "node:os"
import { createRequire } from "node:module"
import { join } from "node:path"
import { storedRun } from "./runs.js"

const N = Number(process.env.N ?? 2000)

// SQL_STATS=1: the time of each SQL statement (summed), printed at the end.
const sqlStats = new Map<string, { n: number; us: number }>()
if (process.env.SQL_STATS === "1") {
  const Database = createRequire(import.meta.url)("better-sqlite3")
  const prepare = Database.prototype.prepare
  Database.prototype.prepare = function(this: unknown, sql: string) {
    const statement = prepare.call(this, sql)
    for (const method of ["all", "run", "get"]) {
      const original = statement[method]
      statement[method] = function(this: unknown, ...args: Array<unknown>) {
        const start = performance.now()
        try {
          return original.apply(this, args)
        } finally {
          const entry = sqlStats.get(sql) ?? { n: 0, us: 0 }
          entry.n++
          entry.us += (performance.now() - start) * 1000
          sqlStats.set(sql, entry)
        }
      }
    }
    return statement
  }
}
const dir = mkdtempSync(join(tmpdir(), "agent-runs-inproc-"))
const secretKey = new Uint8Array(randomBytes(32))
const adminToken = `ar_${randomBytes(32).toString("base64url")}`
const filename = join(dir, "agent-runs.db")
const storage = SqliteStorage.layer({ filename, secretKey: Redacted.make(secretKey) })
const agents = await mount({
  publicUrl: "http://127.0.0.1:1/",
  secretKey,
  adminToken,
  storage,
  blobs: FileBlobStore.layer({ root: join(dir, "blobs") }),
  execution: { concurrency: 0 },
  quotas: { runsPerMinute: 100_000_000 },
  ingress: { deliveries: { max: 100_000_000, windowMs: 60_000 } }
})
const call = async (method: string, path: string, token: string, body?: unknown) => {
  const response = await agents.fetch(
    new Request(`http://127.0.0.1:1/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  )
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`)
  return JSON.parse(text)
}
const team = await call("POST", "/admin/teams", adminToken, { name: "bench" })
const principal = await call("POST", "/admin/principals", adminToken, {
  type: "user",
  display_name: "bench",
  memberships: [{ team_uid: team.uid, role: "member" }]
})
const { token } = await call("POST", `/admin/principals/${principal.uid}/tokens`, adminToken, {})
await Effect.runPromise(
  Effect.gen(function*() {
    const store = yield* RunStore.RunStore
    const base = Date.now() - 20_000_000
    for (let from = 0; from < 20_000; from += 1000) {
      const runs = []
      for (let i = from; i < from + 1000; i++) {
        runs.push({
          run: storedRun(base + i * 1000, team.uid, principal.uid, { title: `Benchmark run ${i}`, agent_config: { model_id: "m" } }),
          events: []
        })
      }
      yield* store.create(runs)
    }
  }).pipe(Effect.provide(Layer.orDie(storage)))
)
// PROFILE=1: a CPU profile of each case's measured loop only, in bench/profiles/<case>.cpuprofile.
const session = new Session()
session.connect()
const post = (method: string, params: object = {}) =>
  new Promise<unknown>((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))))
const time = async (label: string, f: () => Promise<unknown>) => {
  for (let i = 0; i < 200; i++) await f()
  if (process.env.PROFILE === "1") {
    await post("Profiler.enable")
    await post("Profiler.setSamplingInterval", { interval: 100 })
    await post("Profiler.start")
  }
  const cpu = process.cpuUsage()
  const start = performance.now()
  // CONCURRENCY=C: C loops at once share the N requests (as C connections would).
  let next = 0
  const loop = async () => {
    while (next++ < N) await f()
  }
  await Promise.all(Array.from({ length: Number(process.env.CONCURRENCY ?? 1) }, loop))
  const used = process.cpuUsage(cpu)
  if (process.env.PROFILE === "1") {
    const { profile } = (await post("Profiler.stop")) as { profile: unknown }
    mkdirSync("bench/profiles", { recursive: true })
    writeFileSync(`bench/profiles/${label}.cpuprofile`, JSON.stringify(profile))
  }
  console.log(
    `${label}: ${((performance.now() - start) * 1000 / N).toFixed(0)} µs wall, ${((used.user + used.system) / N).toFixed(0)} µs CPU per request`
  )
}
const one = await call("GET", "/agent/runs?limit=1", token)
// A Standard Webhooks webhook of an admin of the team, without and with an automation.
const admin = await call("POST", "/admin/principals", adminToken, {
  type: "user",
  display_name: "bench admin",
  memberships: [{ team_uid: team.uid, role: "admin" }]
})
const adminKey = (await call("POST", `/admin/principals/${admin.uid}/tokens`, adminToken, {})).token
const hook = await call("POST", "/agent/webhooks", adminKey, { name: "plain", auth_mode: "signature", signature_scheme: "standard_webhooks" })
const automated = await call("POST", "/agent/webhooks", adminKey, { name: "auto", auth_mode: "signature", signature_scheme: "standard_webhooks" })
await call("POST", "/agent/automations", adminKey, {
  name: "bench triage",
  prompt: "Triage the issue.",
  trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [automated.uid] } }
})
let delivered = 0
const deliver = (target: { uid: string; secret: string }) => async () => {
  const id = `msg_${delivered++}_${randomBytes(6).toString("hex")}`
  const body = JSON.stringify({ type: "issue.opened", id, data: { number: delivered, title: "A bug", body: "x".repeat(400) } })
  const headers = await Effect.runPromise(
    Signatures.sign("standard_webhooks", { secret: target.secret, body: new TextEncoder().encode(body), now: Date.now(), id })
  )
  const response = await agents.fetch(
    new Request(`http://127.0.0.1:1/webhooks/w/${target.uid}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body })
  )
  if (response.status !== 202) throw new Error(`delivery: ${response.status} ${await response.text()}`)
  return response.text()
}
const cases: Record<string, () => Promise<unknown>> = {
  health: async () => (await agents.fetch(new Request("http://127.0.0.1:1/healthz"))).text(),
  get: () => call("GET", `/agent/runs/${one.runs[0].run_id}`, token),
  list1: () => call("GET", "/agent/runs?limit=1", token),
  list: () => call("GET", "/agent/runs?limit=20", token),
  create: () => call("POST", "/agent/runs", token, { prompt: "Fix the flaky test", metadata: { bench: "http" } }),
  ingress: deliver(hook),
  automation: deliver(automated)
}
for (const name of (process.env.CASES ?? "health,get,list1,list,create").split(",")) await time(name, cases[name]!)
for (const [sql, { n, us }] of [...sqlStats].sort((a, b) => b[1].us - a[1].us).slice(0, 15)) {
  console.log(`${(us / 1000).toFixed(0).padStart(6)} ms ${String(n).padStart(6)}× ${(us / n).toFixed(0).padStart(5)} µs  ${sql.replace(/\s+/g, " ").slice(0, 220)}`)
}
await agents.close()
rmSync(dir, { recursive: true, force: true })
process.exit(0)
