/** A GitHub connection's base URL and credential, as decoded from a request. */
import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { apiUrlOf, baseUrlProblem, ConnectGitHubRequest, repositoryUrlOf } from "../src/domain/GitHub.js"

const decode = Schema.decodeUnknownEither(ConnectGitHubRequest)

describe("GitHub connection", () => {
  it("a base URL is https (http on loopback only), the host alone", () => {
    expect(baseUrlProblem("https://github.com")).toBeUndefined()
    expect(baseUrlProblem("https://ghe.example.com/")).toBeUndefined()
    expect(baseUrlProblem("http://127.0.0.1:8080")).toBeUndefined()
    expect(baseUrlProblem("http://ghe.example.com")).toMatch(/https/)
    expect(baseUrlProblem("https://user:pw@ghe.example.com")).toMatch(/user name/)
    expect(baseUrlProblem("https://ghe.example.com/api/v3")).toMatch(/without a path/)
    expect(baseUrlProblem("https://ghe.example.com/?x=1")).toMatch(/query/)
    expect(baseUrlProblem("ghe.example.com")).toMatch(/absolute URL/)
  })

  it("the API and repository URLs of github.com and of an Enterprise Server", () => {
    expect(apiUrlOf("https://github.com")).toBe("https://api.github.com")
    expect(apiUrlOf("https://ghe.example.com")).toBe("https://ghe.example.com/api/v3")
    expect(repositoryUrlOf("https://ghe.example.com", "acme", "app")).toBe("https://ghe.example.com/acme/app.git")
  })

  it("a request: github.com by default, a token or an App named by secrets; errors name the field", () => {
    expect(Either.getOrThrow(decode({ auth: { type: "token", token_secret: "GH_TOKEN" } })).base_url).toBe("https://github.com")
    expect(Either.getOrThrow(decode({ base_url: "https://ghe.example.com/", auth: { type: "token", token_secret: "GH_TOKEN" } })).base_url)
      .toBe("https://ghe.example.com")
    expect(Either.isRight(decode({ auth: { type: "app", app_id: 1, installation_id: 2, private_key_secret: "GH_APP_KEY" } }))).toBe(true)
    const bad = decode({ base_url: "http://ghe.example.com", auth: { type: "token", token_secret: "GH_TOKEN" } })
    expect(Either.isLeft(bad) && String(bad.left)).toContain("base_url")
    expect(Either.isLeft(decode({ auth: { type: "app", app_id: 0, installation_id: 2, private_key_secret: "K" } }))).toBe(true)
    expect(Either.isLeft(decode({ auth: { type: "token", token_secret: "not a name" } }))).toBe(true)
  })
})
