/**
 * Environments through the bundled server (issue 7 item 2), on SQLite and PostgreSQL: the sharing
 * matrix (who lists, reads, uses in a run, changes and deletes a User-scope and a Team-scope
 * environment: its creator, another member, the team admin, a viewer, a guest from another team,
 * a member who reached it by link before and after opening it, after link sharing is turned off,
 * and another team's admin and member), the list's sort orders, guests that must exist, and how a
 * run refuses an environment id that is malformed (400), unknown (403) or deleted (403).
 */
import { beforeAll, describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, suiteServer, type TestServer } from "./harness.js"

type Team = Awaited<ReturnType<typeof makeTeam>>
type EnvScope = "User" | "Team"

/** The callers of the matrix: each row of the table is one of them. */
type Actor = "creator" | "member" | "admin" | "viewer" | "guest" | "linker" | "outsiderAdmin" | "outsiderMember"

/** What one caller gets on one environment. */
interface Cells {
  /** Listed by `GET /agent/environments`. */
  readonly listed: boolean
  /** `GET /agent/environments/{uid}`. */
  readonly get: number
  /** `POST /agent/runs` naming it in `config.environment_id`. */
  readonly run: number
  /** `PUT /agent/environments/{uid}`. */
  readonly put: number
  /** `DELETE /agent/environments/{uid}`. */
  readonly del: number
}

interface Row {
  readonly name: string
  readonly actor: Actor
  /** Link sharing on when the environment is created (else off: opening it by uid is no link). */
  readonly link?: true
  /** What the caller does (and then the creator) before the cells are checked. */
  readonly before?: "opens it by link" | "opens it by link, then link sharing is turned off"
  readonly cells: Record<EnvScope, Cells>
}

const owner: Cells = { listed: true, get: 200, run: 200, put: 200, del: 200 }
const hidden: Cells = { listed: false, get: 404, run: 403, put: 404, del: 404 }
/** Sees it but may only use it: guests and link holders. */
const user: Cells = { listed: true, get: 200, run: 200, put: 403, del: 403 }

/**
 * The matrix. Cells are checked in the order listed, run, put, get (a link holder's GET is what
 * records its access, so it comes after the other reads), and delete on a second environment
 * prepared the same way.
 */
const rows: ReadonlyArray<Row> = [
  { name: "its creator (a member)", actor: "creator", cells: { User: owner, Team: owner } },
  { name: "another member of its team", actor: "member", cells: { User: hidden, Team: owner } },
  { name: "the team admin", actor: "admin", cells: { User: owner, Team: owner } },
  {
    name: "a viewer of the team (reads Team scope; never runs or changes)",
    actor: "viewer",
    cells: { User: hidden, Team: { listed: true, get: 200, run: 403, put: 403, del: 403 } }
  },
  { name: "a guest from another team", actor: "guest", cells: { User: user, Team: user } },
  {
    name: "a member holding the link, before opening it (its GET then records the access)",
    actor: "linker",
    link: true,
    cells: { User: { listed: false, get: 200, run: 403, put: 404, del: 404 }, Team: owner }
  },
  { name: "a member holding the link, after opening it", actor: "linker", link: true, before: "opens it by link", cells: { User: user, Team: owner } },
  {
    name: "a viewer of the team holding the link, after opening it (reads, never runs or changes)",
    actor: "viewer",
    link: true,
    before: "opens it by link",
    cells: { User: { listed: true, get: 200, run: 403, put: 403, del: 403 }, Team: { listed: true, get: 200, run: 403, put: 403, del: 403 } }
  },
  {
    name: "a member who opened the link, after link sharing is turned off",
    actor: "linker",
    link: true,
    before: "opens it by link, then link sharing is turned off",
    cells: { User: hidden, Team: owner }
  },
  { name: "the admin of another team (link sharing on)", actor: "outsiderAdmin", link: true, cells: { User: hidden, Team: hidden } },
  { name: "a member of another team (link sharing on)", actor: "outsiderMember", link: true, cells: { User: hidden, Team: hidden } }
]

/** Creates a principal in a team with a role; returns its uid and a token. */
const principal = async (server: TestServer, team: Team, role: "admin" | "member" | "viewer", name: string) => {
  const created = await call(server, "POST", "/api/v1/admin/principals", {
    token: server.adminToken,
    body: { type: "user", display_name: name, memberships: [{ team_uid: team.uid, role }] }
  })
  expect(created.status).toBe(201)
  const token = await call(server, "POST", `/api/v1/admin/principals/${created.body.uid}/tokens`, {
    token: server.adminToken,
    body: {}
  })
  expect(token.status).toBe(201)
  return { uid: created.body.uid as string, token: token.body.token as string }
}

const listedUids = async (server: TestServer, token: string, query = "") => {
  const reply = await call(server, "GET", `/api/v1/agent/environments${query}`, { token })
  expect(reply.status, JSON.stringify(reply.body)).toBe(200)
  return (reply.body.environments as ReadonlyArray<{ uid: string }>).map((e) => e.uid)
}

const started = (kind: DatabaseKind) => suiteServer(kind)

describe.each(["sqlite", "postgres"] as const)("environments (%s)", (kind) => {
  const server = started(kind)
  let a: Team
  let b: Team
  const tokens = {} as Record<Actor, string>
  let guestUid = ""

  beforeAll(async () => {
    a = await makeTeam(server(), "A")
    b = await makeTeam(server(), "B")
    const guest = await principal(server(), b, "member", "B guest")
    guestUid = guest.uid
    Object.assign(tokens, {
      creator: a.tokens.member,
      member: (await principal(server(), a, "member", "A member 2")).token,
      admin: a.tokens.admin,
      viewer: a.tokens.viewer,
      guest: guest.token,
      linker: (await principal(server(), a, "member", "A link holder")).token,
      outsiderAdmin: b.tokens.admin,
      outsiderMember: b.tokens.member
    } satisfies Record<Actor, string>)
  }, 60_000)

  const api = (method: string, path: string, token: string, body?: unknown) =>
    call(server(), method, `/api/v1${path}`, { token, ...(body === undefined ? {} : { body }) })

  /** A fresh environment of the creator with the guest (and link sharing per row), prepared for the row. */
  const prepared = async (scope: EnvScope, row: Row) => {
    const sharing = { guests: [guestUid], link_sharing: row.link === true }
    const created = await api("POST", "/agent/environments", tokens.creator, {
      config: { name: `${scope} ${row.name}` },
      sharing,
      team: scope === "Team"
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const uid = created.body.uid as string
    if (row.before !== undefined) {
      expect((await api("GET", `/agent/environments/${uid}`, tokens[row.actor])).status).toBe(200)
    }
    if (row.before === "opens it by link, then link sharing is turned off") {
      const off = await api("PUT", `/agent/environments/${uid}`, tokens.creator, {
        config: { name: `${scope} ${row.name}` },
        sharing: { ...sharing, link_sharing: false }
      })
      expect(off.status).toBe(200)
      expect(off.body.sharing).toEqual({ guests: [guestUid], link_sharing: false })
    }
    return uid
  }

  it.each(rows.flatMap((row) => (["User", "Team"] as const).map((scope) => [`${scope} scope, ${row.name}`, scope, row] as const)))(
    "sharing matrix: %s",
    async (_, scope, row) => {
      const token = tokens[row.actor]
      const expected = row.cells[scope]
      const uid = await prepared(scope, row)
      const doomed = await prepared(scope, row)
      const got = {
        listed: (await listedUids(server(), token)).includes(uid),
        run: (await api("POST", "/agent/runs", token, { prompt: "use it", config: { environment_id: uid } })).status,
        put: (await api("PUT", `/agent/environments/${uid}`, token, { config: { name: `${scope} ${row.name}` } })).status,
        get: (await api("GET", `/agent/environments/${uid}`, token)).status,
        del: (await api("DELETE", `/agent/environments/${doomed}`, token)).status
      }
      expect(got).toEqual({ ...expected })
      // A change the caller was refused left the environment as it was; its sharing survived a PUT.
      const now = await api("GET", `/agent/environments/${uid}`, tokens.creator)
      expect(now.status).toBe(200)
      expect(now.body.sharing.guests).toEqual([guestUid])
      expect((await api("GET", `/agent/environments/${doomed}`, tokens.creator)).status).toBe(expected.del === 200 ? 404 : 200)
    },
    30_000
  )

  it("a link holder reaches a User-scope environment again when link sharing is turned back on; another team's never", async () => {
    const linker = tokens.linker
    const uid = await prepared("User", { name: "toggled", actor: "linker", link: true, before: "opens it by link, then link sharing is turned off", cells: { User: hidden, Team: hidden } })
    expect((await api("GET", `/agent/environments/${uid}`, linker)).status).toBe(404)
    expect(await listedUids(server(), linker)).not.toContain(uid)
    const on = await api("PUT", `/agent/environments/${uid}`, tokens.creator, {
      config: { name: "toggled" },
      sharing: { guests: [guestUid], link_sharing: true }
    })
    expect(on.status).toBe(200)
    expect(await listedUids(server(), linker)).toContain(uid)
    // Another team's member opening the link while it is on is not recorded either.
    expect((await api("GET", `/agent/environments/${uid}`, tokens.outsiderMember)).status).toBe(404)
    expect(await listedUids(server(), tokens.outsiderMember)).not.toContain(uid)
    // A guest removed loses it at once.
    const removed = await api("PUT", `/agent/environments/${uid}`, tokens.creator, {
      config: { name: "toggled" },
      sharing: { guests: [], link_sharing: true }
    })
    expect(removed.status).toBe(200)
    expect((await api("GET", `/agent/environments/${uid}`, tokens.guest)).status).toBe(404)
    expect((await api("POST", "/agent/runs", tokens.guest, { prompt: "p", config: { environment_id: uid } })).status).toBe(403)
  })

  it("last_task_created shows the newest run of the environment's team, never a guest's run in another team", async () => {
    const created = await api("POST", "/agent/environments", tokens.creator, {
      config: { name: "summary" },
      sharing: { guests: [guestUid] },
      team: true
    })
    const uid = created.body.uid as string
    expect(created.body.last_task_created).toBeNull()
    const own = await api("POST", "/agent/runs", tokens.member, { prompt: "Team A's run", team: true, config: { environment_id: uid } })
    expect(own.status).toBe(200)
    const guests = await api("POST", "/agent/runs", tokens.guest, { prompt: "Team B's private plan", config: { environment_id: uid } })
    expect(guests.status).toBe(200)
    for (const token of [tokens.viewer, tokens.guest]) {
      const env = (await api("GET", `/agent/environments/${uid}`, token)).body
      expect(env.last_task_created).toMatchObject({ id: own.body.run_id, title: "Team A's run" })
    }
    // The guest's run is in its own team, naming the environment.
    const run = (await api("GET", `/agent/runs/${guests.body.run_id}`, tokens.guest)).body
    expect(run).toMatchObject({ environment_id: uid, scope: { type: "User" } })
    expect((await api("GET", `/agent/runs/${guests.body.run_id}`, tokens.admin)).status).toBe(404)
  })

  it("sorts the list by last_updated (default, newest first) or name; another sort_by is a 400 naming it", async () => {
    const team = await makeTeam(server(), "sorting")
    const token = team.tokens.member
    const uids: Record<string, string> = {}
    for (const name of ["bravo", "alpha", "charlie"]) {
      const created = await api("POST", "/agent/environments", token, { config: { name }, team: true })
      expect(created.status).toBe(201)
      uids[name] = created.body.uid
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    // Updating bravo makes it the most recently updated.
    expect((await api("PUT", `/agent/environments/${uids["bravo"]}`, token, { config: { name: "bravo", description: "x" } })).status).toBe(200)
    const byUpdate = [uids["bravo"], uids["charlie"], uids["alpha"]]
    expect(await listedUids(server(), token)).toEqual(byUpdate)
    expect(await listedUids(server(), token, "?sort_by=last_updated")).toEqual(byUpdate)
    expect(await listedUids(server(), token, "?sort_by=name")).toEqual([uids["alpha"], uids["bravo"], uids["charlie"]])
    // A run in an environment does not change its updated_at (only configuration changes do).
    expect((await api("POST", "/agent/runs", token, { prompt: "p", config: { environment_id: uids["alpha"] } })).status).toBe(200)
    expect(await listedUids(server(), token)).toEqual(byUpdate)
    for (const bad of ["created_at", "NAME", ""]) {
      const reply = await api("GET", `/agent/environments?sort_by=${bad}`, token)
      expect(reply.status, bad).toBe(400)
      expect(reply.body).toMatchObject({ error_code: "invalid_request" })
      expect(reply.body.error, bad).toContain("sort_by")
    }
  })

  it("guests must be principals that exist: 400 naming sharing.guests[i], on create and on replace", async () => {
    const nobody = "AAAAAAAAAAAAAAAAAAAAAA"
    const create = await api("POST", "/agent/environments", tokens.creator, {
      config: { name: "guests" },
      sharing: { guests: [guestUid, nobody] }
    })
    expect(create.status).toBe(400)
    expect(create.body.error).toContain("sharing.guests[1]")
    const malformed = await api("POST", "/agent/environments", tokens.creator, {
      config: { name: "guests" },
      sharing: { guests: ["not a uid"] }
    })
    expect(malformed.status).toBe(400)
    expect(malformed.body.error).toContain("guests")
    const ok = await api("POST", "/agent/environments", tokens.creator, { config: { name: "guests" }, sharing: { guests: [guestUid] } })
    expect(ok.status).toBe(201)
    expect(ok.body.sharing).toEqual({ guests: [guestUid], link_sharing: false })
    const replace = await api("PUT", `/agent/environments/${ok.body.uid}`, tokens.creator, {
      config: { name: "guests" },
      sharing: { guests: [nobody] }
    })
    expect(replace.status).toBe(400)
    expect(replace.body.error).toContain("sharing.guests[0]")
    expect((await api("GET", `/agent/environments/${ok.body.uid}`, tokens.creator)).body.sharing.guests).toEqual([guestUid])
  })

  it("a run naming a malformed environment id is a 400, an unknown or deleted one a 403", async () => {
    const token = tokens.creator
    const runWith = (environmentId: unknown) => api("POST", "/agent/runs", token, { prompt: "p", config: { environment_id: environmentId } })
    for (const malformed of ["not-an-id", "empty-environment", "AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAA-", 42]) {
      const reply = await runWith(malformed)
      expect(reply.status, String(malformed)).toBe(400)
      expect(reply.body).toMatchObject({ error_code: "invalid_request" })
      expect(reply.body.error).toContain("environment_id")
    }
    const unknown = await runWith("AAAAAAAAAAAAAAAAAAAAAA")
    expect(unknown.status).toBe(403)
    expect(unknown.body).toMatchObject({ error_code: "not_authorized" })
    expect(unknown.body.error).toContain("environment_id")
    const env = await api("POST", "/agent/environments", token, { config: { name: "short-lived" }, team: true })
    expect((await runWith(env.body.uid)).status).toBe(200)
    expect((await api("DELETE", `/agent/environments/${env.body.uid}`, token)).status).toBe(200)
    const deleted = await runWith(env.body.uid)
    expect(deleted.status).toBe(403)
    // The same answer as for an id that never existed: nothing about the deletion leaks.
    expect(deleted.body.error.replace(env.body.uid, "ID")).toBe(unknown.body.error.replace("AAAAAAAAAAAAAAAAAAAAAA", "ID"))
    expect((await api("GET", `/agent/environments/${env.body.uid}`, token)).status).toBe(404)
    expect((await api("DELETE", `/agent/environments/${env.body.uid}`, token)).status).toBe(404)
    // The deprecated route refuses it the same way.
    const old = await api("POST", "/agent/run", token, { prompt: "p", config: { environment_id: "not-an-id" } })
    expect(old.status).toBe(400)
  })
})
