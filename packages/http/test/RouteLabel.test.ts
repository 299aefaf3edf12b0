import { describe, expect, it } from "vitest"
import { redactUrl } from "../src/RequestSpans.js"
import { makeRouteLabel, MAX_ROUTES } from "../src/RouteLabel.js"

describe("the route label of the request metrics", () => {
  it("replaces ids and names, keeps no webhook token, and folds the dashboard's files", () => {
    const route = makeRouteLabel()
    expect(route("/api/v1/agent/runs/01a22e56-7b2f-72d1-b6ec-747e65cca211/timeline?x=1", 200)).toBe("/api/v1/agent/runs/{id}/timeline")
    expect(route("/api/v1/agent/environments/AAAAAAAAAAAAAAAAAAAAAA", 200)).toBe("/api/v1/agent/environments/{id}")
    expect(route("/api/v1/workers/build-box-7/claim", 200)).toBe("/api/v1/workers/{name}/claim")
    expect(route("/api/v1/agent/secrets/OPENAI_KEY", 200)).toBe("/api/v1/agent/secrets/{name}")
    expect(route("/webhooks/w/AAAAAAAAAAAAAAAAAAAAAA/s3cret", 202)).toBe("/webhooks/w/{id}")
    expect(route("/app/assets/index-abc.js", 200)).toBe("/app/*")
  })

  it("learns a route only from an answer under 400, and stops at MAX_ROUTES", () => {
    const route = makeRouteLabel()
    expect(route("/made-up", 400)).toBe("unmatched")
    expect(route("/made-up", 404)).toBe("unmatched")
    expect(route("/api/v1/agent/runs", 200)).toBe("/api/v1/agent/runs")
    // A learnt route keeps its label whatever it answers.
    expect(route("/api/v1/agent/runs", 503)).toBe("/api/v1/agent/runs")
    for (let i = 0; i < MAX_ROUTES * 2; i++) route(`/r${i}`, 200)
    expect(route("/one-more", 200)).toBe("other")
    expect(route("/api/v1/agent/runs", 200)).toBe("/api/v1/agent/runs")
  })
})

describe("redactUrl", () => {
  it("redacts a webhook's URL token and credentials in query parameters, first or not, in any case", () => {
    expect(redactUrl("/WEBHOOKS/w/AAAAAAAAAAAAAAAAAAAAAA/t0ken?x=1")).toBe("/WEBHOOKS/w/AAAAAAAAAAAAAAAAAAAAAA/REDACTED?x=1")
    expect(redactUrl("signature=abc&expires=1")).toBe("signature=REDACTED&expires=1")
    expect(redactUrl("http://h/a?expires=1&Signature=abc#f")).toBe("http://h/a?expires=1&Signature=REDACTED#f")
    expect(redactUrl("/auth/oidc/callback?code=c0de&state=st4te")).toBe("/auth/oidc/callback?code=REDACTED&state=REDACTED")
    expect(redactUrl("/api/v1/agent/runs?limit=20&q=token")).toBe("/api/v1/agent/runs?limit=20&q=token")
  })
})
