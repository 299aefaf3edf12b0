/**
 * The access matrix (docs/reference/access.md) through HTTP on the bundled server: two teams with an admin, a
 * member and a viewer each, and every endpoint that names a resource, called by each of the six
 * principals on team A's resources. Expected: team B gets 404 everywhere (no cross-team read or
 * write, no existence leak); in team A viewers read only, members also change runs, schedules and
 * environments, admins also manage webhooks, automations and secrets. Lists never show another
 * team's resources, and User-scoped resources are hidden from other members (404) but not from
 * admins.
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, startServer, type TestServer } from "./harness.js"

type Role = "admin" | "member" | "viewer"
type Team = Awaited<ReturnType<typeof makeTeam>>

/** Who may do it within the owning team. */
type Kind = "read" | "member" | "admin"

interface Resource {
  readonly kind: "run" | "schedule" | "environment" | "webhook" | "automation" | "secret"
  readonly id: string
}

interface Case {
  readonly name: string
  readonly resource: Resource["kind"]
  readonly method: string
  readonly path: (id: string) => string
  readonly body?: (id: string) => unknown
  readonly kind: Kind
  /** The success status for an allowed caller. */
  readonly ok: number
  /** Changes or removes the resource: each call gets a fresh one. */
  readonly destructive?: boolean
}

const schedule = { name: "nightly", cron_schedule: "0 3 * * *", prompt: "run the nightly job", enabled: true }
const environment = { config: { name: "env" } }

const automationHooks = new Map<string, Resource>()

const create = async (server: TestServer, team: Team, kind: Resource["kind"]): Promise<Resource> => {
  const token = team.tokens.admin
  const post = (path: string, body: unknown) => call(server, "POST", `/api/v1${path}`, { token, body })
  switch (kind) {
    case "run": {
      const reply = await post("/agent/runs", { prompt: "matrix", team: true })
      return { kind, id: reply.body.run_id }
    }
    case "schedule": {
      const reply = await post("/agent/schedules", { ...schedule, team: true })
      return { kind, id: reply.body.id }
    }
    case "environment": {
      const reply = await post("/agent/environments", { ...environment, team: true })
      return { kind, id: reply.body.uid }
    }
    case "webhook": {
      const reply = await post("/agent/webhooks", { name: `hook ${Math.random()}` })
      return { kind, id: reply.body.uid }
    }
    case "automation": {
      // One webhook per team serves every automation (a team has at most 20 webhooks).
      const hook = automationHooks.get(team.uid) ?? await create(server, team, "webhook")
      automationHooks.set(team.uid, hook)
      const reply = await post("/agent/automations", {
        name: `auto ${Math.random()}`,
        prompt: "act",
        trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [hook.id] } }
      })
      return { kind, id: reply.body.id }
    }
    case "secret": {
      const name = `S_${Math.random().toString(36).slice(2, 10).toUpperCase()}`
      const reply = await call(server, "PUT", `/api/v1/agent/secrets/${name}`, { token, body: { value: "v" } })
      expect(reply.status).toBe(200)
      return { kind, id: name }
    }
  }
}

const cases: ReadonlyArray<Case> = [
  { name: "get run", resource: "run", method: "GET", path: (id) => `/agent/runs/${id}`, kind: "read", ok: 200 },
  { name: "run timeline", resource: "run", method: "GET", path: (id) => `/agent/runs/${id}/timeline`, kind: "read", ok: 200 },
  {
    name: "follow up a run",
    resource: "run",
    method: "POST",
    path: (id) => `/agent/runs/${id}/followups`,
    body: () => ({ message: "also this" }),
    kind: "member",
    ok: 200,
    destructive: true
  },
  {
    name: "cancel run",
    resource: "run",
    method: "POST",
    path: (id) => `/agent/runs/${id}/cancel`,
    kind: "member",
    ok: 200,
    destructive: true
  },
  { name: "get schedule", resource: "schedule", method: "GET", path: (id) => `/agent/schedules/${id}`, kind: "read", ok: 200 },
  {
    name: "update schedule",
    resource: "schedule",
    method: "PUT",
    path: (id) => `/agent/schedules/${id}`,
    body: () => ({ ...schedule, name: "renamed" }),
    kind: "member",
    ok: 200,
    destructive: true
  },
  {
    name: "pause schedule",
    resource: "schedule",
    method: "POST",
    path: (id) => `/agent/schedules/${id}/pause`,
    kind: "member",
    ok: 200,
    destructive: true
  },
  {
    name: "resume schedule",
    resource: "schedule",
    method: "POST",
    path: (id) => `/agent/schedules/${id}/resume`,
    kind: "member",
    ok: 200,
    destructive: true
  },
  {
    name: "delete schedule",
    resource: "schedule",
    method: "DELETE",
    path: (id) => `/agent/schedules/${id}`,
    kind: "member",
    ok: 200,
    destructive: true
  },
  {
    name: "get environment",
    resource: "environment",
    method: "GET",
    path: (id) => `/agent/environments/${id}`,
    kind: "read",
    ok: 200
  },
  {
    name: "update environment",
    resource: "environment",
    method: "PUT",
    path: (id) => `/agent/environments/${id}`,
    body: () => ({ config: { name: "renamed" } }),
    kind: "member",
    ok: 200,
    destructive: true
  },
  {
    name: "delete environment",
    resource: "environment",
    method: "DELETE",
    path: (id) => `/agent/environments/${id}`,
    kind: "member",
    ok: 200,
    destructive: true
  },
  { name: "get webhook", resource: "webhook", method: "GET", path: (id) => `/agent/webhooks/${id}`, kind: "read", ok: 200 },
  {
    name: "webhook deliveries",
    resource: "webhook",
    method: "GET",
    path: (id) => `/agent/webhooks/${id}/deliveries`,
    kind: "read",
    ok: 200
  },
  {
    name: "patch webhook",
    resource: "webhook",
    method: "PATCH",
    path: (id) => `/agent/webhooks/${id}`,
    body: () => ({ enabled: false }),
    kind: "admin",
    ok: 200,
    destructive: true
  },
  {
    name: "rotate webhook secret",
    resource: "webhook",
    method: "POST",
    path: (id) => `/agent/webhooks/${id}/rotate-secret`,
    kind: "admin",
    ok: 200,
    destructive: true
  },
  {
    name: "delete webhook",
    resource: "webhook",
    method: "DELETE",
    path: (id) => `/agent/webhooks/${id}`,
    kind: "admin",
    ok: 200,
    destructive: true
  },
  {
    name: "get automation",
    resource: "automation",
    method: "GET",
    path: (id) => `/agent/automations/${id}`,
    kind: "read",
    ok: 200
  },
  {
    name: "delete automation",
    resource: "automation",
    method: "DELETE",
    path: (id) => `/agent/automations/${id}`,
    kind: "admin",
    ok: 200,
    destructive: true
  },
  {
    name: "replace secret",
    resource: "secret",
    method: "PUT",
    path: (id) => `/agent/secrets/${id}`,
    body: () => ({ value: "new value" }),
    kind: "admin",
    ok: 200,
    destructive: true
  },
  {
    name: "delete secret",
    resource: "secret",
    method: "DELETE",
    path: (id) => `/agent/secrets/${id}`,
    kind: "admin",
    ok: 200,
    destructive: true
  }
]

/** Secrets are named, not numbered: another team's "same name" is its own secret, so cross-team calls act on B's namespace. */
const crossTeamStatus = (c: Case, role: Role): number => {
  if (c.resource !== "secret") return 404
  // PUT of a name in one's own team creates it there (admins) and DELETE of an absent name is a 404.
  if (role !== "admin") return 403
  return c.method === "PUT" ? 200 : 404
}

const allowed = (kind: Kind, role: Role) => kind === "read" || role === "admin" || (kind === "member" && role === "member")

type Listed = Record<string, ReadonlyArray<Record<string, string>>>

const lists: ReadonlyArray<readonly [string, string, (body: Listed) => ReadonlyArray<string | undefined>, Kind]> = [
  ["/agent/runs?limit=500", "run", (b) => b["runs"]!.map((r) => r["run_id"]), "read"],
  ["/agent/schedules", "schedule", (b) => b["schedules"]!.map((s) => s["id"]), "read"],
  ["/agent/environments", "environment", (b) => b["environments"]!.map((e) => e["uid"]), "read"],
  ["/agent/webhooks", "webhook", (b) => b["webhooks"]!.map((w) => w["uid"]), "read"],
  ["/agent/automations", "automation", (b) => b["automations"]!.map((a) => a["id"]), "read"],
  ["/agent/secrets", "secret", (b) => b["secrets"]!.map((s) => s["name"]), "admin"]
]

const matrix = (kind: DatabaseKind) =>
  describe(`access matrix (${kind})`, () => {
    const scope = Effect.runSync(Scope.make())
    let server: TestServer
    let a: Team
    let b: Team
    const shared = new Map<Resource["kind"], Resource>()
    beforeAll(async () => {
      server = await Effect.runPromise(Scope.extend(startServer(kind), scope))
      a = await makeTeam(server, "A")
      b = await makeTeam(server, "B")
      for (const k of ["run", "schedule", "environment", "webhook", "automation", "secret"] as const) {
        shared.set(k, await create(server, a, k))
      }
    }, 120_000)
    afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

    it.each(cases.map((c) => [c.name, c] as const))("%s", async (_, c) => {
      for (const team of ["A", "B"] as const) {
        for (const role of ["admin", "member", "viewer"] as const) {
          const resource = c.destructive === true ? await create(server, a, c.resource) : shared.get(c.resource)!
          const caller = (team === "A" ? a : b).tokens[role]
          const reply = await call(server, c.method, `/api/v1${c.path(resource.id)}`, {
            token: caller,
            ...(c.body === undefined ? {} : { body: c.body(resource.id) })
          })
          const expected = team === "B" ? crossTeamStatus(c, role) : allowed(c.kind, role) ? c.ok : 403
          expect(reply.status, `${c.name} by ${team}.${role}: ${JSON.stringify(reply.body)}`).toBe(expected)
        }
      }
      // Nothing of team A changed through team B: the shared resource is still readable by A's viewer.
      const still = shared.get(c.resource)!
      if (c.resource !== "secret") {
        const read = cases.find((r) => r.resource === c.resource && r.kind === "read")!
        expect((await call(server, "GET", `/api/v1${read.path(still.id)}`, { token: a.tokens.viewer })).status).toBe(200)
      }
    }, 120_000)

    it("creating: members create runs, schedules and environments; only admins create the factory's parts", async () => {
      const creates: ReadonlyArray<readonly [string, string, () => unknown, Kind, number]> = [
        ["POST", "/agent/runs", () => ({ prompt: "p" }), "member", 200],
        ["POST", "/agent/run", () => ({ prompt: "p" }), "member", 200],
        ["POST", "/agent/schedules", () => ({ ...schedule, name: `s ${Math.random()}` }), "member", 201],
        ["POST", "/agent/environments", () => environment, "member", 201],
        ["POST", "/agent/webhooks", () => ({ name: `w ${Math.random()}` }), "admin", 201],
        ["PUT", `/agent/secrets/NEW_${Date.now()}`, () => ({ value: "v" }), "admin", 200]
      ]
      for (const [method, path, body, kind, ok] of creates) {
        for (const role of ["admin", "member", "viewer"] as const) {
          const reply = await call(server, method, `/api/v1${path}`, { token: a.tokens[role], body: body() })
          expect(reply.status, `${method} ${path} by ${role}: ${JSON.stringify(reply.body)}`).toBe(
            allowed(kind, role) && kind !== "read" ? ok : 403
          )
        }
      }
    }, 120_000)

    it("the admin API refuses every team role of both teams (instance administrators only)", async () => {
      const endpoints: ReadonlyArray<readonly [string, string, unknown]> = [
        ["POST", "/admin/teams", { name: "x" }],
        ["GET", "/admin/teams", undefined],
        ["PATCH", `/admin/teams/${a.uid}`, { max_concurrent_runs: 99 }],
        ["POST", "/admin/principals", { type: "user", display_name: "x", memberships: [{ team_uid: a.uid, role: "admin" }] }],
        ["DELETE", "/admin/tokens/AAAAAAAAAAAAAAAAAAAAAA", undefined]
      ]
      for (const [method, path, body] of endpoints) {
        for (const team of [a, b]) {
          for (const role of ["admin", "member", "viewer"] as const) {
            const reply = await call(server, method, `/api/v1${path}`, {
              token: team.tokens[role],
              ...(body === undefined ? {} : { body })
            })
            expect(reply.status, `${method} ${path} by ${role}`).toBe(403)
          }
        }
      }
      const teams = await call(server, "GET", "/api/v1/admin/teams", { token: server.adminToken })
      const stored = (teams.body.teams as ReadonlyArray<{ uid: string; max_concurrent_runs: number }>).find((t) => t.uid === a.uid)
      expect(stored?.max_concurrent_runs).toBe(8)
    }, 120_000)

    it("lists show each team only its own resources", async () => {
      for (const [path, resourceKind, ids, kindOfList] of lists) {
        const own = shared.get(resourceKind as Resource["kind"])!.id
        for (const role of ["admin", "member", "viewer"] as const) {
          const mine = await call(server, "GET", `/api/v1${path}`, { token: a.tokens[role] })
          const theirs = await call(server, "GET", `/api/v1${path}`, { token: b.tokens[role] })
          if (!allowed(kindOfList, role)) {
            expect(mine.status, `${path} by A.${role}`).toBe(403)
            expect(theirs.status, `${path} by B.${role}`).toBe(403)
            continue
          }
          expect(ids(mine.body), `${path} by A.${role}`).toContain(own)
          expect(ids(theirs.body), `${path} by B.${role}`).not.toContain(own)
        }
      }
    }, 120_000)

    it("User-scoped resources are hidden from other members (404) and visible to admins", async () => {
      const second = await call(server, "POST", "/api/v1/admin/principals", {
        token: server.adminToken,
        body: { type: "user", display_name: "A member 2", memberships: [{ team_uid: a.uid, role: "member" }] }
      })
      const token = await call(server, "POST", `/api/v1/admin/principals/${second.body.uid}/tokens`, {
        token: server.adminToken,
        body: {}
      })
      const other = token.body.token as string
      const mine = {
        run: (await call(server, "POST", "/api/v1/agent/runs", { token: a.tokens.member, body: { prompt: "mine" } })).body.run_id,
        schedule: (await call(server, "POST", "/api/v1/agent/schedules", { token: a.tokens.member, body: schedule })).body.id,
        environment: (await call(server, "POST", "/api/v1/agent/environments", { token: a.tokens.member, body: environment }))
          .body.uid
      }
      const paths = [`/agent/runs/${mine.run}`, `/agent/schedules/${mine.schedule}`, `/agent/environments/${mine.environment}`]
      for (const path of paths) {
        expect((await call(server, "GET", `/api/v1${path}`, { token: a.tokens.member })).status, path).toBe(200)
        expect((await call(server, "GET", `/api/v1${path}`, { token: a.tokens.admin })).status, path).toBe(200)
        expect((await call(server, "GET", `/api/v1${path}`, { token: other })).status, path).toBe(404)
        expect((await call(server, "GET", `/api/v1${path}`, { token: a.tokens.viewer })).status, path).toBe(404)
      }
      const cancel = await call(server, "POST", `/api/v1/agent/runs/${mine.run}/cancel`, { token: other })
      expect(cancel.status).toBe(404)
    }, 120_000)
  })

matrix("sqlite")
matrix("postgres")
