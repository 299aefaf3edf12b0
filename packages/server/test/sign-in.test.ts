/**
 * Sign-in with OpenID Connect against a real provider on loopback (`oidc-provider`, from the
 * testing package): the browser flow (login, the provider's pages, the callback, the session in
 * the dashboard URL's fragment) and the CLI's device flow each give a session token that works,
 * expires, is listed with the principal's tokens and can be revoked; a verified email links a
 * principal an administrator made, an unverified one does not; a disabled principal cannot sign
 * in; a forged or missing sign-in state is refused. Every sign-in is in the audit log.
 */
import { completeDeviceLogin, completeLogin, type OidcProviderServer, startOidcProvider } from "@agent-runs/testing"
import { Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LocalService, startLocalService } from "./support/LocalService.js"

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("sign-in with OpenID Connect", () => {
  let provider: OidcProviderServer
  let service: LocalService

  beforeAll(async () => {
    provider = await startOidcProvider({
      users: [
        { sub: "ada", email: "Ada@Example.com", email_verified: true, name: "Ada Lovelace" },
        { sub: "mallory", email: "boss@example.com", email_verified: false, name: "Mallory" },
        { sub: "newbie", email: "newbie@example.com", email_verified: true }
      ],
      redirectUris: ["http://127.0.0.1/auth/oidc/callback"]
    })
    service = await startLocalService({
      name: "sign-in",
      executor: false,
      signIn: { issuer: provider.issuer, clientId: provider.clientId, clientSecret: Redacted.make(provider.clientSecret), sessionHours: 2 }
    })
  }, 60_000)
  afterAll(async () => {
    await service?.close()
    await provider?.close()
  })

  const api = async (path: string, token: string, init: { method?: string; body?: unknown } = {}) => {
    const response = await fetch(`${service.base}/api/v1${path}`, {
      method: init.method ?? "GET",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
    })
    const text = await response.text()
    return { status: response.status, body: (text === "" ? undefined : JSON.parse(text)) as Json }
  }

  const newTeam = async (name: string): Promise<{ uid: string }> =>
    (await api("/admin/teams", service.adminToken, { method: "POST", body: { name } })).body

  /** The browser flow without a browser: the session token the dashboard would receive. */
  const browserSignIn = async (username: string, clientState = "") => {
    const start = await fetch(`${service.base}/auth/oidc/login${clientState === "" ? "" : `?client_state=${clientState}`}`, { redirect: "manual" })
    expect(start.status).toBe(302)
    const cookie = start.headers.get("set-cookie")!.split(";")[0]!
    const back = await completeLogin(start.headers.get("location")!, username)
    const callback = await fetch(back, { redirect: "manual", headers: { cookie } })
    expect(callback.status).toBe(302)
    return callback.headers.get("location")
  }
  const fragmentOf = (location: string | null) => {
    expect(location).toMatch(/^\/app\/#/)
    return new URLSearchParams(location!.slice("/app/#".length))
  }
  const sessionOf = (location: string | null) => fragmentOf(location).get("session")!
  const errorOf = (location: string | null) => fragmentOf(location).get("sign_in_error")!

  it("the browser flow links a principal an administrator made by its verified email, and gives a session that expires", async () => {
    const team = await newTeam("Analytical engines")
    const ada = await api("/admin/principals", service.adminToken, {
      method: "POST",
      body: { type: "user", display_name: "Ada", email: "ada@example.com", memberships: [{ team_uid: team.uid, role: "member" }] }
    })
    expect(ada.status).toBe(201)
    const back = fragmentOf(await browserSignIn("ada", "tab-state-0123456789"))
    const session = back.get("session")!
    expect(session).toMatch(/^ar_/)
    expect(back.get("client_state")).toBe("tab-state-0123456789")
    const me = await api("/agent/me", session)
    expect(me.body.principal.uid).toBe(ada.body.uid)
    expect(me.body.teams).toEqual([{ uid: team.uid, name: "Analytical engines", role: "member" }])
    const expires = Date.parse(me.body.token.expires_at)
    expect(expires - Date.now()).toBeGreaterThan(2 * 3_600_000 - 60_000)
    expect(expires - Date.now()).toBeLessThanOrEqual(2 * 3_600_000)
    expect(me.body.token.name).toBe("sign-in (dashboard)")
    // Signing in again finds the same principal by its subject; the session is revocable.
    const again = sessionOf(await browserSignIn("ada"))
    expect((await api("/agent/me", again)).body.principal.uid).toBe(ada.body.uid)
    expect((await api(`/admin/tokens/${me.body.token.token_id}`, service.adminToken, { method: "DELETE" })).status).toBe(200)
    expect((await api("/agent/me", session)).status).toBe(401)
    const log = await api(`/admin/audit-log?action=session.create&principal_uid=${ada.body.uid}`, service.adminToken)
    expect(log.body.entries).toHaveLength(2)
  })

  it("an unverified email links nobody: a new user with no team is made; a disabled principal cannot sign in", async () => {
    const team = await newTeam("Bosses")
    const boss = await api("/admin/principals", service.adminToken, {
      method: "POST",
      body: { type: "user", display_name: "The boss", email: "boss@example.com", memberships: [{ team_uid: team.uid, role: "admin" }] }
    })
    const mallory = sessionOf(await browserSignIn("mallory"))
    const refused = await api("/agent/runs", mallory)
    expect(refused.status).toBe(403)
    const tokens = await api(`/admin/principals/${boss.body.uid}/tokens`, service.adminToken)
    expect(tokens.body.tokens).toEqual([])
    expect((await api(`/admin/principals/${boss.body.uid}`, service.adminToken, { method: "PATCH", body: { disabled: true } })).status).toBe(200)
    const list = await api("/admin/principals?limit=500", service.adminToken)
    const created = list.body.principals.find((p: Json) => p.display_name === "Mallory")
    expect(created).toMatchObject({ type: "user", memberships: [], email: null })
    expect((await api(`/admin/principals/${created.uid}`, service.adminToken, { method: "PATCH", body: { disabled: true } })).status).toBe(200)
    expect(errorOf(await browserSignIn("mallory"))).toBe("this principal is disabled")
  })

  it("the CLI's device flow gives a session token", async () => {
    const started = await fetch(`${service.base}/auth/oidc/device`, { method: "POST" })
    expect(started.status).toBe(200)
    const device = (await started.json()) as Json
    expect(device.user_code).toEqual(expect.any(String))
    await completeDeviceLogin(device.verification_uri, device.user_code, "newbie")
    let answer: Json
    for (let i = 0; i < 10; i++) {
      const poll = await fetch(`${service.base}/auth/oidc/device/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ device_code: device.device_code, interval: device.interval, expires_in: device.expires_in })
      })
      answer = await poll.json()
      if (poll.status === 200) break
      expect(poll.status).toBe(202)
    }
    expect(answer.token).toMatch(/^ar_/)
    expect(answer.principal.display_name).toBe("newbie@example.com")
    const me = await api("/agent/me", answer.token)
    expect(me.status).toBe(403) // a new user in no team yet: its team admins add it by uid
    expect(me.body.error).toContain("not a member of any team")
  }, 60_000)

  it("attack: the device flow cannot be used to flood the provider: a client address starts ten a minute, then 429", async () => {
    // The device test above started one; nine more pass, then refused with Retry-After.
    const answers = []
    for (let i = 0; i < 10; i++) answers.push(await fetch(`${service.base}/auth/oidc/device`, { method: "POST" }))
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 429])
    const refused = answers[9]!
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    expect(((await refused.json()) as Json).error_code).toBe("rate_limited")
  })

  it("a callback without the sign-in's cookie, or with a forged one, is refused", async () => {
    const start = await fetch(`${service.base}/auth/oidc/login`, { redirect: "manual" })
    const back = await completeLogin(start.headers.get("location")!, "ada")
    for (const cookie of [undefined, "agent_runs_sign_in=eyJzdGF0ZSI6IngifQ.AAAA"]) {
      const callback = await fetch(back, { redirect: "manual", ...(cookie === undefined ? {} : { headers: { cookie } }) })
      expect(callback.status).toBe(302)
      expect(errorOf(callback.headers.get("location"))).toContain("this sign-in expired or was started elsewhere")
    }
    expect(await (await fetch(`${service.base}/auth/oidc`)).json()).toEqual({ issuer: provider.issuer })
    const badState = await fetch(`${service.base}/auth/oidc/login?client_state=short`, { redirect: "manual" })
    expect(badState.status).toBe(400)
  })
})
