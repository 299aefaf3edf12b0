/**
 * The loopback OpenID provider against the relying-party library the service will use
 * (`openid-client` v6): the authorization code flow with PKCE, state and nonce, the refresh
 * token grant, and the device flow, each ending in an ID token with the user's email and groups.
 */
import * as client from "openid-client"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { completeDeviceLogin, completeLogin, type OidcProviderServer, startOidcProvider } from "../src/index.js"

const alice = { sub: "alice", email: "alice@example.com", email_verified: true, name: "Alice", groups: ["admins", "team-a"] }
const bob = { sub: "bob", email: "bob@example.com", email_verified: false, name: "Bob", groups: [] }
const scope = "openid email profile groups"

let op: OidcProviderServer
let config: client.Configuration

beforeAll(async () => {
  op = await startOidcProvider({ users: [alice, bob] })
  config = await client.discovery(new URL(op.issuer), op.clientId, op.clientSecret, undefined, {
    execute: [client.allowInsecureRequests]
  })
})

afterAll(() => op?.close())

/** An authorization URL with PKCE, state and nonce, and what the callback is checked against. */
const authorization = async (redirectUri: string) => {
  const pkceCodeVerifier = client.randomPKCECodeVerifier()
  const expectedState = client.randomState()
  const expectedNonce = client.randomNonce()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(pkceCodeVerifier),
    code_challenge_method: "S256",
    state: expectedState,
    nonce: expectedNonce
  })
  return { url, checks: { pkceCodeVerifier, expectedState, expectedNonce } }
}

describe("startOidcProvider", () => {
  it("serves discovery for its plain-http loopback issuer with the device endpoint and the groups claim", () => {
    const metadata = config.serverMetadata()
    expect(metadata.issuer).toBe(op.issuer)
    expect(op.issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(metadata.device_authorization_endpoint).toBe(`${op.issuer}/device/auth`)
    expect(metadata.grant_types_supported).toEqual(
      expect.arrayContaining(["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"])
    )
    expect(metadata.scopes_supported).toEqual(expect.arrayContaining(scope.split(" ")))
    expect(metadata.claims_supported).toEqual(expect.arrayContaining(["email", "email_verified", "groups"]))
  })

  it("completes the authorization code flow with PKCE, state and nonce, on any loopback port", async () => {
    const redirectUri = "http://127.0.0.1:54321/callback"
    const { url, checks } = await authorization(redirectUri)

    const callback = await completeLogin(url, "alice")
    expect(`${callback.origin}${callback.pathname}`).toBe(redirectUri)

    const tokens = await client.authorizationCodeGrant(config, callback, checks)
    expect(tokens.claims()).toMatchObject({
      iss: op.issuer,
      aud: op.clientId,
      sub: "alice",
      email: "alice@example.com",
      email_verified: true,
      name: "Alice",
      groups: ["admins", "team-a"]
    })
    expect(tokens.refresh_token).toEqual(expect.any(String))

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!)
    expect(refreshed.claims()).toMatchObject({ sub: "alice", groups: ["admins", "team-a"] })
  })

  it("refuses a redirect URI that is not registered", async () => {
    const { url } = await authorization("http://127.0.0.1:54321/elsewhere")
    await expect(completeLogin(url, "alice")).rejects.toThrow(/redirect_uri/)
  })

  it("refuses an unknown username on the login page", async () => {
    const { url } = await authorization("http://127.0.0.1:54321/callback")
    await expect(completeLogin(url, "mallory")).rejects.toThrow(/401.*Unknown user/s)
  })

  it("completes the device flow on the user-code page", async () => {
    const device = await client.initiateDeviceAuthorization(config, { scope })
    expect(device.verification_uri).toBe(`${op.issuer}/device`)

    await completeDeviceLogin(device.verification_uri, device.user_code, "bob")

    const tokens = await client.pollDeviceAuthorizationGrant(config, device)
    expect(tokens.claims()).toMatchObject({
      sub: "bob",
      email: "bob@example.com",
      email_verified: false,
      name: "Bob",
      groups: []
    })
    expect(tokens.refresh_token).toEqual(expect.any(String))
  })

  it("completes the device flow from verification_uri_complete", async () => {
    const device = await client.initiateDeviceAuthorization(config, { scope })
    await completeDeviceLogin(device.verification_uri_complete!, device.user_code, "alice")
    const tokens = await client.pollDeviceAuthorizationGrant(config, device)
    expect(tokens.claims()).toMatchObject({ sub: "alice", groups: ["admins", "team-a"] })
  })
})
