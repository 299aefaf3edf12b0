/**
 * Single sign-on on the dashboard, in Chromium against the service (SQLite) and a real OpenID
 * Connect provider on loopback (`oidc-provider`): the sign-in page offers it, the provider's login
 * page signs the user in, and the dashboard opens signed in as the principal the provider's
 * verified email linked, with no token left in the URL; a refused sign-in comes back to the
 * sign-in page with the reason.
 */
import { type OidcProviderServer, startOidcProvider } from "@agent-runs/testing"
import { Redacted } from "effect"
import { type Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, openLocalPage, shoot } from "./support/LocalBrowser.js"
import { type LocalService, startLocalService } from "./support/LocalService.js"

describe("the dashboard's single sign-on", () => {
  let provider: OidcProviderServer
  let service: LocalService
  let browser: Browser
  let grace: string

  beforeAll(async () => {
    provider = await startOidcProvider({
      users: [
        { sub: "grace", email: "grace@example.com", email_verified: true, name: "Grace Hopper" },
        { sub: "locked", email: "locked@example.com", email_verified: true }
      ],
      redirectUris: ["http://127.0.0.1/auth/oidc/callback"]
    })
    service = await startLocalService({
      name: "dashboard-sign-in",
      executor: false,
      signIn: { issuer: provider.issuer, clientId: provider.clientId, clientSecret: Redacted.make(provider.clientSecret) }
    })
    const me = await service.api.json<{ default_team_uid: string }>(await service.api.call("GET", "/agent/me"))
    const created = await service.api.json<{ uid: string }>(await service.api.call("POST", "/admin/principals", {
      type: "user",
      display_name: "Grace",
      email: "grace@example.com",
      memberships: [{ team_uid: me.default_team_uid, role: "member" }]
    }))
    grace = created.uid
    const locked = await service.api.json<{ uid: string }>(await service.api.call("POST", "/admin/principals", {
      type: "user",
      display_name: "Locked out",
      email: "locked@example.com",
      memberships: [{ team_uid: me.default_team_uid, role: "viewer" }]
    }))
    expect((await service.api.call("PATCH", `/admin/principals/${locked.uid}`, { disabled: true })).status).toBe(200)
    browser = await launchBrowser()
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    await service?.close()
    await provider?.close()
  })

  it("signs in through the provider's page and opens the dashboard as the linked principal, no token in the URL", async () => {
    const { elsewhere, errors, page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/`)
    await shoot(page, "sign-in-sso")
    await page.getByRole("button", { name: "Sign in with single sign-on" }).click()
    await page.getByLabel("Username").fill("grace")
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await page.waitForURL(`${service.base}/app/`)
    await expect.poll(() => page.getByText("Grace").first().isVisible()).toBe(true)
    expect(page.url()).not.toContain("session")
    const token = await page.evaluate("sessionStorage.getItem('agent-runs.token')")
    const me = await fetch(`${service.base}/api/v1/agent/me`, { headers: { authorization: `Bearer ${token}` } })
    const body = (await me.json()) as { principal: { uid: string }; token: { name: string; expires_at: string } }
    expect(body.principal.uid).toBe(grace)
    expect(body.token.name).toBe("sign-in (dashboard)")
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  })

  it("attack: a link carrying someone else's session or a made-up error signs nobody in and shows nothing", async () => {
    // Any working token stands for the attacker's own session here.
    const token = service.adminToken
    const { page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/#session=${token}&client_state=guessed-state-123456`)
    await expect.poll(() => page.getByRole("button", { name: "Sign in with single sign-on" }).isVisible()).toBe(true)
    expect(page.url()).toBe(`${service.base}/app/`)
    expect(await page.evaluate("sessionStorage.getItem('agent-runs.token')")).toBeNull()
    await page.goto(`${service.base}/app/#sign_in_error=Call+0800+for+help`)
    await expect.poll(() => page.getByRole("button", { name: "Sign in with single sign-on" }).isVisible()).toBe(true)
    expect(await page.getByText("0800").count()).toBe(0)
    await page.close()
  })

  it("a refused sign-in comes back to the sign-in page with the reason", async () => {
    const { page } = await openLocalPage(browser)
    await page.goto(`${service.base}/app/`)
    await page.getByRole("button", { name: "Sign in with single sign-on" }).click()
    await page.getByLabel("Username").fill("locked")
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("Single sign-on failed: this principal is disabled")
    expect(page.url()).toBe(`${service.base}/app/`)
    expect(await page.evaluate("sessionStorage.getItem('agent-runs.token')")).toBeNull()
    await page.close()
  })
})
