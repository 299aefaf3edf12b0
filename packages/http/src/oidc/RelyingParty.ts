/**
 * The relying party of sign-in with OpenID Connect (docs/sign-in.md), on `openid-client`: the
 * provider's configuration (discovered on first use and kept; a failed discovery is tried again
 * on the next sign-in), the authorization code flow with PKCE, state and nonce, and the device
 * flow. `openid-client` checks the ID token (signature, issuer, audience, expiry, nonce); what it
 * verified becomes core's `VerifiedClaims`.
 *
 * Decisions:
 * - Plain http is accepted only for an issuer on loopback (tests, a provider on the same host).
 * - Scopes `openid email profile`, and the groups claim's name when groups are read.
 * - A device poll waits at most `DEVICE_POLL_MS` and then answers "pending": the CLI polls again.
 */
import { Context, Data, Effect, Layer, Option, Redacted } from "effect"
import * as client from "openid-client"
import type { SignInClaims } from "@agent-runs/core"

/** The settings of the relying party. */
export interface OidcSettings {
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: Redacted.Redacted<string>
  /** The claim holding the groups (`groups`); none: groups are not read. */
  readonly groupsClaim: string | undefined
}

/** The provider could not be reached, or refused, or answered what could not be verified. */
export class OidcFailure extends Data.TaggedError("OidcFailure")<{ readonly message: string; readonly unavailable: boolean }> {}

/** What a device authorization gives the CLI. */
export interface DeviceStart {
  readonly device_code: string
  readonly user_code: string
  readonly verification_uri: string
  readonly verification_uri_complete: string | undefined
  readonly expires_in: number
  readonly interval: number
}

/** How long one device poll may wait before it answers "pending". */
export const DEVICE_POLL_MS = 20_000

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"])

const failure = (unavailable: boolean) => (error: unknown) =>
  new OidcFailure({ message: error instanceof Error ? error.message : String(error), unavailable })

const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

/** The claims sign-in uses, from a checked ID token's claims. */
const verified = (claims: client.IDToken | undefined, groupsClaim: string | undefined): Effect.Effect<SignInClaims.VerifiedClaims, OidcFailure> => {
  if (claims === undefined) return Effect.fail(new OidcFailure({ message: "the provider answered no ID token", unavailable: false }))
  const groups = groupsClaim === undefined ? undefined : claims[groupsClaim]
  return Effect.succeed({
    issuer: claims.iss,
    subject: claims.sub,
    email: text(claims["email"]),
    email_verified: claims["email_verified"] === true,
    name: text(claims["name"]),
    groups: Array.isArray(groups) ? groups.filter((g): g is string => typeof g === "string") : undefined
  })
}

export class RelyingParty extends Context.Tag("@agent-runs/http/RelyingParty")<RelyingParty, {
  readonly authorizationUrl: (redirectUri: string, checks: { state: string; nonce: string; verifier: string }) => Effect.Effect<URL, OidcFailure>
  readonly exchange: (callback: URL, checks: { state: string; nonce: string; verifier: string }) => Effect.Effect<SignInClaims.VerifiedClaims, OidcFailure>
  readonly startDevice: Effect.Effect<DeviceStart, OidcFailure>
  /** The claims once the user approved; none while pending. */
  readonly pollDevice: (start: Pick<DeviceStart, "device_code" | "interval" | "expires_in">) => Effect.Effect<Option.Option<SignInClaims.VerifiedClaims>, OidcFailure>
}>() {}

/** Makes new random PKCE verifiers, states and nonces. */
export const randomChecks = () => ({ state: client.randomState(), nonce: client.randomNonce(), verifier: client.randomPKCECodeVerifier() })

export const layer = (settings: OidcSettings) =>
  Layer.sync(RelyingParty, () => {
    const issuer = new URL(settings.issuer)
    const insecure = issuer.protocol === "http:" && LOOPBACK.has(issuer.hostname)
    const scope = ["openid", "email", "profile", ...(settings.groupsClaim === undefined ? [] : [settings.groupsClaim])].join(" ")
    let discovered: Promise<client.Configuration> | undefined
    const configuration = Effect.tryPromise({
      try: () => {
        discovered ??= client.discovery(issuer, settings.clientId, Redacted.value(settings.clientSecret), undefined, insecure ? { execute: [client.allowInsecureRequests] } : {})
          .catch((error: unknown) => {
            discovered = undefined
            throw error
          })
        return discovered
      },
      catch: failure(true)
    })
    return {
      authorizationUrl: (redirectUri, checks) =>
        Effect.flatMap(configuration, (config) =>
          Effect.tryPromise({
            try: async () =>
              client.buildAuthorizationUrl(config, {
                redirect_uri: redirectUri,
                scope,
                state: checks.state,
                nonce: checks.nonce,
                code_challenge: await client.calculatePKCECodeChallenge(checks.verifier),
                code_challenge_method: "S256"
              }),
            catch: failure(false)
          })),
      exchange: (callback, checks) =>
        Effect.flatMap(configuration, (config) =>
          Effect.tryPromise({
            try: () => client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: checks.verifier, expectedState: checks.state, expectedNonce: checks.nonce }),
            catch: failure(false)
          })).pipe(Effect.flatMap((tokens) => verified(tokens.claims(), settings.groupsClaim))),
      startDevice: Effect.flatMap(configuration, (config) =>
        Effect.tryPromise({ try: () => client.initiateDeviceAuthorization(config, { scope }), catch: failure(false) })).pipe(
          Effect.map((answer) => ({
            device_code: answer.device_code,
            user_code: answer.user_code,
            verification_uri: answer.verification_uri,
            verification_uri_complete: answer.verification_uri_complete,
            expires_in: answer.expires_in,
            interval: answer.interval ?? 5
          }))
        ),
      pollDevice: (start) =>
        Effect.flatMap(configuration, (config) =>
          Effect.tryPromise({
            try: async () => {
              const signal = AbortSignal.timeout(DEVICE_POLL_MS)
              try {
                const tokens = await client.pollDeviceAuthorizationGrant(config, { ...start, user_code: "", verification_uri: "" }, undefined, { signal })
                return tokens.claims()
              } catch (error) {
                if (signal.aborted) return "pending" as const
                throw error
              }
            },
            catch: failure(false)
          })).pipe(
          Effect.flatMap((claims) => (claims === "pending" ? Effect.succeed(Option.none()) : Effect.map(verified(claims, settings.groupsClaim), Option.some)))
        )
    }
  })
