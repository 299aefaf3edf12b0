/**
 * `GET /api/v1/agent/me` on the service (SQLite, no executor), attacked as a caller would: each
 * principal sees its own principal and exactly the teams it is a member of (names and roles),
 * whichever team it acts in; a member of team A learns nothing of team B (its uid, its name, its
 * members), not even by naming B in the TEAM header (403, without B's name); a missing, unknown or
 * revoked token is a 401.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LocalService, startLocalService } from "./support/LocalService.js"

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("GET /agent/me", () => {
  let service: LocalService
  let base: string
  let adminToken: string

  const call = async (path: string, options: { token?: string; method?: string; body?: unknown; team?: string } = {}) => {
    const headers: Record<string, string> = { "content-type": "application/json" }
    if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`
    if (options.team !== undefined) headers["x-team-uid"] = options.team
    const response = await fetch(`${base}/api/v1${path}`, {
      method: options.method ?? "GET",
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
    })
    const text = await response.text()
    return { status: response.status, text, body: (text === "" ? undefined : JSON.parse(text)) as Json }
  }
  const admin = async (path: string, body?: unknown) => {
    const answer = await call(path, { token: adminToken, method: body === undefined ? "DELETE" : "POST", body })
    expect(answer.status, answer.text).toBeLessThan(300)
    return answer.body
  }
  const principal = (name: string, memberships: Array<{ team_uid: string; role: string }>) => service.api.principal(name, memberships)

  beforeAll(async () => {
    service = await startLocalService({ name: "me", executor: false })
    base = service.base
    adminToken = service.adminToken
  }, 60_000)

  afterAll(() => service?.close())

  it("answers each principal its own teams, and nothing of a team it is not in", async () => {
    const alpha = await admin("/admin/teams", { name: "Alpha squad" })
    const beta = await admin("/admin/teams", { name: "Beta secret squad" })
    const both = await principal("Both Teams", [{ team_uid: beta.uid, role: "viewer" }, { team_uid: alpha.uid, role: "member" }])
    const alphaOnly = await principal("Alpha Only", [{ team_uid: alpha.uid, role: "admin" }])
    const betaOnly = await principal("Beta Insider", [{ team_uid: beta.uid, role: "admin" }])

    const expected = {
      principal: { type: "user", uid: both.uid, display_name: "Both Teams" },
      token: { token_id: both.tokenId, name: null, expires_at: null, team_uid: null, max_role: null },
      instance_admin: false,
      teams: [
        { uid: beta.uid, name: "Beta secret squad", role: "viewer" },
        { uid: alpha.uid, name: "Alpha squad", role: "member" }
      ],
      teams_truncated: false,
      default_team_uid: beta.uid
    }
    // No TEAM header needed; with one, the same answer.
    for (const team of [undefined, alpha.uid, beta.uid]) {
      const answer = await call("/agent/me", { token: both.token, ...(team === undefined ? {} : { team }) })
      expect(answer.status).toBe(200)
      expect(answer.body).toStrictEqual(expected)
    }

    // A member of Alpha only: Alpha, and not a trace of Beta or its people.
    const mine = await call("/agent/me", { token: alphaOnly.token })
    expect(mine.status).toBe(200)
    expect(mine.body).toStrictEqual({
      principal: { type: "user", uid: alphaOnly.uid, display_name: "Alpha Only" },
      token: { token_id: alphaOnly.tokenId, name: null, expires_at: null, team_uid: null, max_role: null },
      instance_admin: false,
      teams: [{ uid: alpha.uid, name: "Alpha squad", role: "admin" }],
      teams_truncated: false,
      default_team_uid: alpha.uid
    })
    for (const secret of [beta.uid, "Beta", betaOnly.uid, "Insider", both.uid, "Both Teams"]) {
      expect(mine.text).not.toContain(secret)
    }
    // Naming Beta in the TEAM header: 403, and Beta's name is not in the answer.
    const prying = await call("/agent/me", { token: alphaOnly.token, team: beta.uid })
    expect(prying.status).toBe(403)
    expect(prying.body.error_code).toBe("not_authorized")
    expect(prying.text).not.toContain("Beta")
    expect(prying.text).not.toContain(betaOnly.uid)

    // The instance administrator: its bootstrap team, and the flag.
    const root = await call("/agent/me", { token: adminToken })
    expect(root.status).toBe(200)
    expect(root.body.instance_admin).toBe(true)
    expect(root.body.teams.map((t: Json) => t.name)).toEqual(["default"])
    expect(root.text).not.toContain("Alpha")
  })

  it("a missing, unknown or revoked token is a 401", async () => {
    const team = await admin("/admin/teams", { name: "Gamma" })
    const someone = await principal("Soon Revoked", [{ team_uid: team.uid, role: "member" }])
    expect((await call("/agent/me", { token: someone.token })).status).toBe(200)
    await admin(`/admin/tokens/${someone.tokenId}`)
    for (const token of [someone.token, undefined, "ar_unknown", "not-a-token"]) {
      const refused = await call("/agent/me", token === undefined ? {} : { token })
      expect(refused.status, String(token)).toBe(401)
      expect(refused.body.error_code).toBe("authentication_required")
      expect(refused.text).not.toContain("Soon Revoked")
      expect(refused.text).not.toContain(team.uid)
    }
  })
})
