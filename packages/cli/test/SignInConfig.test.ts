import { ConfigProvider, Effect, Either, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { SignInConfig } from "../src/serve/SignInConfig.js"

const load = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(Effect.withConfigProvider(SignInConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))))

const TEAM = "AAAAAAAAAAAAAAAAAAAAAA"
const BASE = { AGENT_RUNS_OIDC_ISSUER: "https://id.example.com", AGENT_RUNS_OIDC_CLIENT_ID: "agent-runs", AGENT_RUNS_OIDC_CLIENT_SECRET: "s3cret" }

describe("the sign-in settings", () => {
  it("are off without an issuer, and have their defaults with one", () => {
    expect(load({})).toEqual(Either.right(undefined))
    const on = Either.getOrThrow(load(BASE))!
    expect({ ...on, clientSecret: Redacted.value(on.clientSecret) }).toEqual({
      issuer: "https://id.example.com",
      clientId: "agent-runs",
      clientSecret: "s3cret",
      groupsClaim: undefined,
      groupRoles: [],
      sessionHours: 12,
      createUsers: true
    })
  })

  it("read the groups mapping, and refuse what cannot work naming the variable", () => {
    const mapped = Either.getOrThrow(load({ ...BASE, AGENT_RUNS_OIDC_GROUPS_CLAIM: "groups", AGENT_RUNS_OIDC_GROUP_ROLES: `devs=${TEAM}:member` }))!
    expect(mapped.groupRoles).toEqual([{ group: "devs", team_uid: TEAM, role: "member" }])
    const problems: Array<[Record<string, string>, string]> = [
      [{ AGENT_RUNS_OIDC_ISSUER: "https://id.example.com" }, "AGENT_RUNS_OIDC_CLIENT_ID"],
      [{ ...BASE, AGENT_RUNS_OIDC_CLIENT_SECRET: "" }, "AGENT_RUNS_OIDC_CLIENT_SECRET"],
      [{ ...BASE, AGENT_RUNS_OIDC_ISSUER: "not a url" }, "AGENT_RUNS_OIDC_ISSUER"],
      [{ ...BASE, AGENT_RUNS_OIDC_GROUP_ROLES: `devs=${TEAM}:member` }, "AGENT_RUNS_OIDC_GROUPS_CLAIM"],
      [{ ...BASE, AGENT_RUNS_OIDC_GROUPS_CLAIM: "groups", AGENT_RUNS_OIDC_GROUP_ROLES: "devs=team:owner" }, "AGENT_RUNS_OIDC_GROUP_ROLES"],
      [{ ...BASE, AGENT_RUNS_OIDC_SESSION_HOURS: "0" }, "AGENT_RUNS_OIDC_SESSION_HOURS"]
    ]
    for (const [env, named] of problems) {
      const result = load(env)
      expect(Either.isLeft(result), named).toBe(true)
      expect(String(Either.isLeft(result) ? result.left : ""), named).toContain(named)
    }
  })
})
