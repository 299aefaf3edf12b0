import { describe, expect, it } from "@effect/vitest"
import { Effect, Encoding, Option } from "effect"
import * as fc from "fast-check"
import type { RejectionReason, VerifyInput } from "../src/domain/Signatures.js"
import { sign, TIMESTAMP_TOLERANCE_MS, timingSafeEqual, verify } from "../src/domain/Signatures.js"
import { SignatureScheme as SignatureSchemes } from "../src/domain/Webhook.js"
import type { SignatureScheme } from "../src/domain/Webhook.js"

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

/** Verifies and returns the rejection reason (and header), failing the test if it verified. */
const rejection = (scheme: SignatureScheme, input: VerifyInput) =>
  verify(scheme, input).pipe(
    Effect.flip,
    Effect.map((e) => {
      expect(e._tag).toBe("SignatureRejected")
      expect(e.scheme).toBe(scheme)
      if (input.secret !== "") expect(e.message).not.toContain(input.secret)
      return { reason: e.reason, header: e.header } as { reason: RejectionReason; header?: string | undefined }
    })
  )


const OTHER_HEX = "0".repeat(64)
const SCHEMES = SignatureSchemes.literals

// --- published vectors -------------------------------------------------------------------------

const STANDARD = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: bytes(`{"test": 2432232314}`),
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
}
const standardHeaders = (signature = STANDARD.signature, prefix = "webhook") => ({
  [`${prefix}-id`]: STANDARD.id,
  [`${prefix}-timestamp`]: String(STANDARD.timestamp),
  [`${prefix}-signature`]: signature
})

const GITHUB = {
  secret: "It's a Secret to Everybody",
  body: bytes("Hello, World!"),
  signature: "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
}

const SLACK_BODY = bytes(
  "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
const SLACK = {
  secret: "8f742231b10e8888abcd99yyyzzz85a5",
  timestamp: 1531420618,
  body: SLACK_BODY,
  /** The worked example of Slack's "Verifying requests from Slack" (body, secret, timestamp and digest). */
  signature: "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
}

const SHOPIFY = {
  secret: "test_secret_key",
  body: bytes(`{"foo": "bar"}`),
  signature: "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g="
}

// --- vectors computed once with node:crypto from the documented algorithms -----------------------

/** node -e 'console.log(require("crypto").createHmac("sha256","whsec_test_stripe_secret")
 *   .update("1700000000.{\"id\":\"evt_1\",\"object\":\"event\"}").digest("hex"))' */
const STRIPE = {
  secret: "whsec_test_stripe_secret",
  timestamp: 1700000000,
  body: bytes(`{"id":"evt_1","object":"event"}`),
  v1: "a3f7577b5518684477bd9612ead24a821d41229f67ec05caf431fdba6938f2cf"
}

/** node -e 'console.log(require("crypto").createHmac("sha256","lin_wh_test_secret")
 *   .update("{\"action\":\"create\",\"type\":\"Issue\",\"webhookTimestamp\":1700000000000}").digest("hex"))' */
const LINEAR = {
  secret: "lin_wh_test_secret",
  body: bytes(`{"action":"create","type":"Issue","webhookTimestamp":1700000000000}`),
  webhookTimestamp: 1700000000000,
  signature: "bc8166452d75bb104f41b0c8b0f168b4d57cd224618779163f15a1f93cc87b30"
}

/** node -e 'console.log(require("crypto").createHmac("sha256","pd_test_secret")
 *   .update("{\"event\":{\"id\":\"01ABC\"}}").digest("hex"))' */
const PAGERDUTY = {
  secret: "pd_test_secret",
  body: bytes(`{"event":{"id":"01ABC"}}`),
  v1: "411e3454762152113d7f20b124e9b4e4a5ada385d272bd8bb8497013c93769b9"
}

/** GitLab sends the secret token itself. */
const GITLAB = { secret: "glpat-like-webhook-token", body: bytes(`{"object_kind":"push"}`) }


describe("Signatures", () => {
  describe("published vectors", () => {
    it.effect("Standard Webhooks", () =>
      Effect.gen(function*() {
        const result = yield* verify("standard_webhooks", {
          secret: STANDARD.secret,
          headers: standardHeaders(),
          body: STANDARD.body,
          now: STANDARD.timestamp * 1000 + 1000
        })
        expect(result.deliveryId).toEqual(Option.some(STANDARD.id))
      }))

    it.effect("Standard Webhooks with the svix-* headers", () =>
      Effect.gen(function*() {
        const result = yield* verify("standard_webhooks", {
          secret: STANDARD.secret,
          headers: standardHeaders(STANDARD.signature, "svix"),
          body: STANDARD.body,
          now: STANDARD.timestamp * 1000
        })
        expect(result.deliveryId).toEqual(Option.some(STANDARD.id))
      }))

    it.effect("GitHub", () =>
      Effect.gen(function*() {
        const result = yield* verify("github", {
          secret: GITHUB.secret,
          headers: { "x-hub-signature-256": GITHUB.signature, "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958" },
          body: GITHUB.body,
          now: 0
        })
        expect(result.deliveryId).toEqual(Option.some("72d3162e-cc78-11e3-81ab-4c9367dc0958"))
      }))

    it.effect("Slack: the published example", () =>
      Effect.gen(function*() {
        const result = yield* verify("slack", {
          secret: SLACK.secret,
          headers: { "x-slack-signature": SLACK.signature, "x-slack-request-timestamp": String(SLACK.timestamp) },
          body: SLACK.body,
          now: SLACK.timestamp * 1000 + 2000
        })
        expect(result.deliveryId).toEqual(Option.none())
      }))

    it.effect("Shopify", () =>
      Effect.gen(function*() {
        const result = yield* verify("shopify", {
          secret: SHOPIFY.secret,
          headers: { "x-shopify-hmac-sha256": SHOPIFY.signature, "x-shopify-webhook-id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043" },
          body: SHOPIFY.body,
          now: 0
        })
        expect(result.deliveryId).toEqual(Option.some("b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"))
      }))
  })

  describe("computed vectors", () => {
    it.effect("Stripe", () =>
      Effect.gen(function*() {
        const result = yield* verify("stripe", {
          secret: STRIPE.secret,
          headers: { "stripe-signature": `t=${STRIPE.timestamp},v1=${STRIPE.v1}` },
          body: STRIPE.body,
          now: STRIPE.timestamp * 1000
        })
        expect(result.deliveryId).toEqual(Option.none())
      }))

    it.effect("Linear", () =>
      Effect.gen(function*() {
        const result = yield* verify("linear", {
          secret: LINEAR.secret,
          headers: { "linear-signature": LINEAR.signature, "linear-delivery": "d-1" },
          body: LINEAR.body,
          now: LINEAR.webhookTimestamp + 1000
        })
        expect(result.deliveryId).toEqual(Option.some("d-1"))
      }))

    it.effect("PagerDuty", () =>
      Effect.gen(function*() {
        const result = yield* verify("pagerduty", {
          secret: PAGERDUTY.secret,
          headers: { "x-pagerduty-signature": `v1=${PAGERDUTY.v1}` },
          body: PAGERDUTY.body,
          now: 0
        })
        expect(result.deliveryId).toEqual(Option.none())
      }))

    it.effect("GitLab", () =>
      Effect.gen(function*() {
        const result = yield* verify("gitlab_token", {
          secret: GITLAB.secret,
          headers: { "x-gitlab-token": GITLAB.secret, "idempotency-key": "idem-1" },
          body: GITLAB.body,
          now: 0
        })
        expect(result.deliveryId).toEqual(Option.some("idem-1"))
        expect(
          yield* rejection("gitlab_token", {
            secret: GITLAB.secret,
            headers: { "x-gitlab-token": `${GITLAB.secret}x` },
            body: GITLAB.body,
            now: 0
          })
        ).toEqual({ reason: "no_signature_matches", header: "x-gitlab-token" })
      }))
  })
  describe("timestamp windows (inclusive, ±5 minutes)", () => {
    const windows: ReadonlyArray<{
      readonly scheme: SignatureScheme
      readonly input: (now: number) => VerifyInput
      readonly signedAt: number
      readonly header: string
    }> = [
      {
        scheme: "standard_webhooks",
        input: (now) => ({ secret: STANDARD.secret, headers: standardHeaders(), body: STANDARD.body, now }),
        signedAt: STANDARD.timestamp * 1000,
        header: "webhook-timestamp"
      },
      {
        scheme: "stripe",
        input: (now) => ({
          secret: STRIPE.secret,
          headers: { "stripe-signature": `t=${STRIPE.timestamp},v1=${STRIPE.v1}` },
          body: STRIPE.body,
          now
        }),
        signedAt: STRIPE.timestamp * 1000,
        header: "stripe-signature"
      },
      {
        scheme: "slack",
        input: (now) => ({
          secret: SLACK.secret,
          headers: { "x-slack-signature": SLACK.signature, "x-slack-request-timestamp": String(SLACK.timestamp) },
          body: SLACK.body,
          now
        }),
        signedAt: SLACK.timestamp * 1000,
        header: "x-slack-request-timestamp"
      },
      {
        scheme: "linear",
        input: (now) => ({ secret: LINEAR.secret, headers: { "linear-signature": LINEAR.signature }, body: LINEAR.body, now }),
        signedAt: LINEAR.webhookTimestamp,
        header: "webhookTimestamp"
      }
    ]
    for (const { header, input, scheme, signedAt } of windows) {
      it.effect(`${scheme}: accepted just inside, refused just outside`, () =>
        Effect.gen(function*() {
          yield* verify(scheme, input(signedAt + TIMESTAMP_TOLERANCE_MS))
          yield* verify(scheme, input(signedAt - TIMESTAMP_TOLERANCE_MS))
          expect(yield* rejection(scheme, input(signedAt + TIMESTAMP_TOLERANCE_MS + 1))).toEqual({
            reason: "timestamp_outside_window",
            header
          })
          expect(yield* rejection(scheme, input(signedAt - TIMESTAMP_TOLERANCE_MS - 1))).toEqual({
            reason: "timestamp_outside_window",
            header
          })
        }))
    }

    it.effect("a malformed timestamp is refused before any signature is computed", () =>
      Effect.gen(function*() {
        expect(
          yield* rejection("standard_webhooks", {
            secret: STANDARD.secret,
            headers: { ...standardHeaders(), "webhook-timestamp": "16142653.30" },
            body: STANDARD.body,
            now: STANDARD.timestamp * 1000
          })
        ).toEqual({ reason: "malformed_header", header: "webhook-timestamp" })
      }))
  })

  describe("unsigned and mis-signed requests", () => {
    it.effect("a missing signature header is refused for every scheme", () =>
      Effect.gen(function*() {
        for (const scheme of SCHEMES) {
          const { reason } = yield* rejection(scheme, { secret: "whsec_c2VjcmV0", headers: {}, body: bytes("{}"), now: 0 })
          expect(reason, scheme).toBe("missing_header")
        }
      }))

    it.effect("a blank header counts as absent", () =>
      Effect.gen(function*() {
        expect(
          yield* rejection("github", { secret: GITHUB.secret, headers: { "x-hub-signature-256": "  " }, body: GITHUB.body, now: 0 })
        ).toEqual({ reason: "missing_header", header: "x-hub-signature-256" })
      }))

    it.effect("Standard Webhooks without an id or timestamp is refused", () =>
      Effect.gen(function*() {
        const { "webhook-id": _, ...noId } = standardHeaders()
        expect(
          yield* rejection("standard_webhooks", {
            secret: STANDARD.secret,
            headers: noId,
            body: STANDARD.body,
            now: STANDARD.timestamp * 1000
          })
        ).toEqual({ reason: "missing_header", header: "webhook-id" })
      }))

    it.effect("a valid signature for another body is refused", () =>
      Effect.gen(function*() {
        const other = bytes("Hello, World?")
        expect(
          yield* rejection("github", { secret: GITHUB.secret, headers: { "x-hub-signature-256": GITHUB.signature }, body: other, now: 0 })
        ).toEqual({ reason: "no_signature_matches", header: "x-hub-signature-256" })
        expect(
          yield* rejection("shopify", { secret: SHOPIFY.secret, headers: { "x-shopify-hmac-sha256": SHOPIFY.signature }, body: other, now: 0 })
        ).toEqual({ reason: "no_signature_matches", header: "x-shopify-hmac-sha256" })
        expect(
          yield* rejection("standard_webhooks", {
            secret: STANDARD.secret,
            headers: standardHeaders(),
            body: other,
            now: STANDARD.timestamp * 1000
          })
        ).toEqual({ reason: "no_signature_matches", header: "webhook-signature" })
      }))

    it.effect("the right signature under another secret is refused", () =>
      Effect.gen(function*() {
        expect(
          yield* rejection("pagerduty", {
            secret: "another secret",
            headers: { "x-pagerduty-signature": `v1=${PAGERDUTY.v1}` },
            body: PAGERDUTY.body,
            now: 0
          })
        ).toEqual({ reason: "no_signature_matches", header: "x-pagerduty-signature" })
      }))

    it.effect("malformed headers and secrets", () =>
      Effect.gen(function*() {
        expect(
          yield* rejection("github", {
            secret: GITHUB.secret,
            headers: { "x-hub-signature-256": GITHUB.signature.replace("sha256=", "sha1=") },
            body: GITHUB.body,
            now: 0
          })
        ).toEqual({ reason: "malformed_header", header: "x-hub-signature-256" })
        expect(
          yield* rejection("stripe", {
            secret: STRIPE.secret,
            headers: { "stripe-signature": `v1=${STRIPE.v1}` },
            body: STRIPE.body,
            now: STRIPE.timestamp * 1000
          })
        ).toEqual({ reason: "malformed_header", header: "stripe-signature" })
        expect(
          yield* rejection("stripe", {
            secret: STRIPE.secret,
            headers: { "stripe-signature": `t=${STRIPE.timestamp},v0=${STRIPE.v1}` },
            body: STRIPE.body,
            now: STRIPE.timestamp * 1000
          })
        ).toEqual({ reason: "malformed_header", header: "stripe-signature" })
        expect(
          yield* rejection("standard_webhooks", {
            secret: "whsec_not base64!",
            headers: standardHeaders(),
            body: STANDARD.body,
            now: STANDARD.timestamp * 1000
          })
        ).toEqual({ reason: "malformed_secret" })
        expect(
          yield* rejection("shopify", { secret: "", headers: { "x-shopify-hmac-sha256": SHOPIFY.signature }, body: SHOPIFY.body, now: 0 })
        ).toEqual({ reason: "malformed_secret" })
      }))

    it.effect("a rejection never shows the secret or a signature", () =>
      Effect.gen(function*() {
        const error = yield* verify("standard_webhooks", {
          secret: STANDARD.secret,
          headers: standardHeaders(),
          body: bytes("tampered"),
          now: STANDARD.timestamp * 1000
        }).pipe(Effect.flip)
        const shown = `${error.message} ${JSON.stringify(error)} ${String(error)}`
        expect(shown).not.toContain("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        expect(shown).not.toContain("g0hM9SsE")
        expect(shown).toContain("no signature matches")
      }))
  })

  describe("several signatures in one header", () => {
    it.effect("Standard Webhooks: only the second matches", () =>
      Effect.gen(function*() {
        yield* verify("standard_webhooks", {
          secret: STANDARD.secret,
          headers: standardHeaders(`v1,${btoa("x".repeat(32))} v1a,ignored ${STANDARD.signature}`),
          body: STANDARD.body,
          now: STANDARD.timestamp * 1000
        })
      }))

    it.effect("Stripe: only the second v1 matches (v0 ignored)", () =>
      Effect.gen(function*() {
        yield* verify("stripe", {
          secret: STRIPE.secret,
          headers: { "stripe-signature": `t=${STRIPE.timestamp},v1=${OTHER_HEX},v1=${STRIPE.v1},v0=${OTHER_HEX}` },
          body: STRIPE.body,
          now: STRIPE.timestamp * 1000
        })
      }))

    it.effect("PagerDuty: only the second matches; none matching is refused", () =>
      Effect.gen(function*() {
        yield* verify("pagerduty", {
          secret: PAGERDUTY.secret,
          headers: { "x-pagerduty-signature": `v1=${OTHER_HEX},v1=${PAGERDUTY.v1}` },
          body: PAGERDUTY.body,
          now: 0
        })
        expect(
          yield* rejection("pagerduty", {
            secret: PAGERDUTY.secret,
            headers: { "x-pagerduty-signature": `v1=${OTHER_HEX},v1=not-hex` },
            body: PAGERDUTY.body,
            now: 0
          })
        ).toEqual({ reason: "no_signature_matches", header: "x-pagerduty-signature" })
      }))
  })

  describe("encodings of signatures and secrets", () => {
    const shopify = (signature: string) => ({ secret: SHOPIFY.secret, headers: { "x-shopify-hmac-sha256": signature }, body: SHOPIFY.body, now: 0 })
    const github = (hex: string) => ({ secret: GITHUB.secret, headers: { "x-hub-signature-256": `sha256=${hex}` }, body: GITHUB.body, now: 0 })
    const standard = (secret: string) => ({ secret, headers: standardHeaders(), body: STANDARD.body, now: STANDARD.timestamp * 1000 })

    it.effect("base64 is read padded or not; hex in either case", () =>
      Effect.gen(function*() {
        yield* verify("shopify", shopify(SHOPIFY.signature.replace(/=+$/, "")))
        yield* verify("github", github(GITHUB.signature.slice("sha256=".length).toUpperCase()))
        // A 32-byte key: its base64 ends with one `=`, which the secret may omit.
        const key = Encoding.encodeBase64(new Uint8Array(32).fill(7))
        expect(key.endsWith("=")).toBe(true)
        const headers = yield* sign("standard_webhooks", { secret: `whsec_${key}`, body: STANDARD.body, now: 0, id: "msg_1" })
        yield* verify("standard_webhooks", { secret: `whsec_${key.replace(/=$/, "")}`, headers, body: STANDARD.body, now: 0 })
      }))

    it.effect("a candidate that is not valid base64 or hex matches nothing", () =>
      Effect.gen(function*() {
        const padded = SHOPIFY.signature
        const inside = `${padded.slice(0, 20)}\n${padded.slice(20)}`
        for (const bad of [`${padded}=`, padded.replace("=", "=A"), `${padded.slice(0, 41)}=`, padded.replace(/.{4}$/, "-_-_"), inside]) {
          expect(yield* rejection("shopify", shopify(bad)), bad).toEqual({ reason: "no_signature_matches", header: "x-shopify-hmac-sha256" })
        }
        const hex = GITHUB.signature.slice("sha256=".length)
        for (const bad of [hex.slice(1), `${hex.slice(2)}zz`, `${hex}0`, `${hex.slice(2)}é`]) {
          expect(yield* rejection("github", github(bad)), bad).toEqual({ reason: "no_signature_matches", header: "x-hub-signature-256" })
        }
      }))

    it.effect("a Standard Webhooks secret that is not base64 of a non-empty key is malformed", () =>
      Effect.gen(function*() {
        for (const secret of ["whsec_", "whsec_A", "whsec_AAA=A", "whsec_AA=", "whsec_AA\nAA", "whsec_AA-_"]) {
          expect(yield* rejection("standard_webhooks", standard(secret)), secret).toEqual({ reason: "malformed_secret" })
        }
      }))
  })

  describe("timingSafeEqual", () => {
    it("compares contents and lengths", () => {
      expect(timingSafeEqual(bytes("abc"), bytes("abc"))).toBe(true)
      expect(timingSafeEqual(bytes("abc"), bytes("abd"))).toBe(false)
      expect(timingSafeEqual(bytes("abc"), bytes("abcd"))).toBe(false)
    })
  })

  describe("sign", () => {
    it.effect("reproduces the published Standard Webhooks and GitHub signatures", () =>
      Effect.gen(function*() {
        const standard = yield* sign("standard_webhooks", {
          secret: STANDARD.secret,
          body: STANDARD.body,
          now: STANDARD.timestamp * 1000 + 999,
          id: STANDARD.id
        })
        expect(standard).toEqual(standardHeaders())
        const github = yield* sign("github", { secret: GITHUB.secret, body: GITHUB.body, now: 0, id: "g-1" })
        expect(github).toEqual({ "x-hub-signature-256": GITHUB.signature, "x-github-delivery": "g-1" })
      }))

    const secrets: Record<SignatureScheme, string> = {
      standard_webhooks: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      stripe: STRIPE.secret,
      github: GITHUB.secret,
      slack: SLACK.secret,
      linear: LINEAR.secret,
      shopify: SHOPIFY.secret,
      gitlab_token: GITLAB.secret,
      pagerduty: PAGERDUTY.secret
    }

    it.effect.prop(
      "sign then verify succeeds for every scheme; flipping a body byte fails (except GitLab's token)",
      [
        fc.constantFrom(...SCHEMES),
        fc.uint8Array({ minLength: 1, maxLength: 256 }),
        fc.integer({ min: 0, max: 4_000_000_000_000 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 })
      ],
      ([scheme, body, now, position, flip]) =>
        Effect.gen(function*() {
          const secret = secrets[scheme]
          const headers = yield* sign(scheme, { secret, body, now, id: "delivery-1" })
          const result = yield* verify(scheme, { secret, headers, body, now })
          expect(result.scheme).toBe(scheme)
          const flipped = Uint8Array.from(body)
          flipped[position % body.length] = flipped[position % body.length]! ^ flip
          const outcome = yield* Effect.exit(verify(scheme, { secret, headers, body: flipped, now }))
          // GitLab's token does not depend on the body; every other scheme signs it.
          expect(outcome._tag).toBe(scheme === "gitlab_token" ? "Success" : "Failure")
        }),
      { fastCheck: { numRuns: 200 } }
    )
  })
})

