/**
 * `agent-runs whoami` as text (`describe`): the principal, the token's expiry and limits, and the
 * teams with the default one marked. The command against a server (a limited token, its warning,
 * `--json`) is tested black-box in examples/server/test/cli.test.ts.
 */
import { Identity } from "@agent-runs/core"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { describe as describeMe } from "../src/commands/Whoami.js"

const TEAM = "T".repeat(22)
const OTHER = "O".repeat(22)
const PRINCIPAL = "P".repeat(22)
const TOKEN = "K".repeat(22)

/** `GET /agent/me` as the server answers it, with these fields changed. */
const me = (fields: Record<string, unknown> = {}) =>
  Schema.decodeUnknownSync(Identity.MeResponse)({
    principal: { type: "user", uid: PRINCIPAL, display_name: "Ada" },
    token: { token_id: TOKEN, name: null, expires_at: null, team_uid: null, max_role: null },
    instance_admin: false,
    teams: [{ uid: TEAM, name: "Core", role: "admin" }, { uid: OTHER, name: "Other", role: "viewer" }],
    teams_truncated: false,
    default_team_uid: TEAM,
    ...fields
  })

describe("whoami as text", () => {
  it("an unlimited token: never expires, not limited; the teams as a table, the default one marked", () => {
    expect(describeMe(me()).split("\n")).toEqual([
      `principal:              Ada (user ${PRINCIPAL})`,
      "instance administrator: no",
      `token:                  ${TOKEN}`,
      "expires:                never",
      "limited to team:        no",
      "max role:               none",
      "",
      "TEAM UID                NAME   ROLE    DEFAULT",
      `${TEAM}  Core   admin   yes`,
      `${OTHER}  Other  viewer`
    ])
  })

  it("a limited token: its name, expiry without milliseconds, the team by name, the role", () => {
    const text = describeMe(me({
      instance_admin: true,
      token: { token_id: TOKEN, name: "ci", expires_at: "2026-12-01T10:00:00.123Z", team_uid: TEAM, max_role: "viewer" }
    }))
    expect(text).toMatch(/^instance administrator: yes$/m)
    expect(text).toMatch(new RegExp(`^token: +ci \\(${TOKEN}\\)$`, "m"))
    expect(text).toMatch(/^expires: +2026-12-01T10:00:00Z$/m)
    expect(text).toMatch(new RegExp(`^limited to team: +Core \\(${TEAM}\\)$`, "m"))
    expect(text).toMatch(/^max role: +viewer$/m)
    // A team the caller is not in is named by its uid.
    const elsewhere = describeMe(me({ token: { token_id: TOKEN, name: null, expires_at: null, team_uid: "X".repeat(22), max_role: null } }))
    expect(elsewhere).toMatch(new RegExp(`^limited to team: +${"X".repeat(22)}$`, "m"))
  })

  it("an agent's run token, no team, and a truncated team list", () => {
    const run = describeMe(me({ token: null, teams: [], default_team_uid: null }))
    expect(run).toMatch(/^token: +a run token \(an agent's\)$/m)
    expect(run).not.toMatch(/^expires:/m)
    expect(run.endsWith("\n\nin no team")).toBe(true)
    expect(describeMe(me({ teams_truncated: true })).endsWith("\n(the first 2 teams)")).toBe(true)
  })
})
