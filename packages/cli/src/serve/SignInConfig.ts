/**
 * Sign-in with OpenID Connect (docs/sign-in.md), from the environment: on when
 * `AGENT_RUNS_OIDC_ISSUER` is set, which then needs `AGENT_RUNS_OIDC_CLIENT_ID` and
 * `AGENT_RUNS_OIDC_CLIENT_SECRET`. Optional: `AGENT_RUNS_OIDC_GROUPS_CLAIM` (the ID token claim
 * listing groups; none: groups are not read), `AGENT_RUNS_OIDC_GROUP_ROLES`
 * (`group=team_uid:role` entries, comma or space separated; requires the groups claim),
 * `AGENT_RUNS_OIDC_SESSION_HOURS` (12, from 1 to 720) and `AGENT_RUNS_OIDC_CREATE_USERS` (`true`).
 */
import type { AgentRuns } from "@agent-runs/server"
import { SignInClaims } from "@agent-runs/core"
import { Config, ConfigError, Either, Option } from "effect"

const GroupRoles = Config.string("AGENT_RUNS_OIDC_GROUP_ROLES").pipe(
  Config.withDefault(""),
  Config.mapOrFail((text) => {
    const parsed = SignInClaims.parseGroupRoles(text)
    return "problem" in parsed
      ? Either.left(ConfigError.InvalidData(["AGENT_RUNS_OIDC_GROUP_ROLES"], parsed.problem))
      : Either.right(parsed.mapping)
  })
)

const missing = (name: string) => Either.left(ConfigError.MissingData([name], "is required with AGENT_RUNS_OIDC_ISSUER"))

/** The sign-in settings; none without `AGENT_RUNS_OIDC_ISSUER`. */
export const SignInConfig: Config.Config<AgentRuns.SignInOptions | undefined> = Config.all({
  issuer: Config.option(Config.string("AGENT_RUNS_OIDC_ISSUER").pipe(
    Config.validate({ message: "must be the provider's issuer URL, https://… (http only on loopback)", validation: (text) => URL.canParse(text) })
  )),
  clientId: Config.option(Config.nonEmptyString("AGENT_RUNS_OIDC_CLIENT_ID")),
  clientSecret: Config.option(Config.redacted(Config.nonEmptyString("AGENT_RUNS_OIDC_CLIENT_SECRET"))),
  groupsClaim: Config.option(Config.nonEmptyString("AGENT_RUNS_OIDC_GROUPS_CLAIM")),
  groupRoles: GroupRoles,
  sessionHours: Config.integer("AGENT_RUNS_OIDC_SESSION_HOURS").pipe(
    Config.validate({ message: "must be a whole number of hours from 1 to 720", validation: (n) => n >= 1 && n <= 720 }),
    Config.withDefault(12)
  ),
  createUsers: Config.boolean("AGENT_RUNS_OIDC_CREATE_USERS").pipe(Config.withDefault(true))
}).pipe(
  Config.mapOrFail((raw): Either.Either<AgentRuns.SignInOptions | undefined, ConfigError.ConfigError> => {
    if (Option.isNone(raw.issuer)) return Either.right(undefined)
    if (Option.isNone(raw.clientId)) return missing("AGENT_RUNS_OIDC_CLIENT_ID")
    if (Option.isNone(raw.clientSecret)) return missing("AGENT_RUNS_OIDC_CLIENT_SECRET")
    if (raw.groupRoles.length > 0 && Option.isNone(raw.groupsClaim)) {
      return Either.left(ConfigError.InvalidData(["AGENT_RUNS_OIDC_GROUP_ROLES"], "needs AGENT_RUNS_OIDC_GROUPS_CLAIM, the claim the groups are read from"))
    }
    return Either.right({
      issuer: raw.issuer.value,
      clientId: raw.clientId.value,
      clientSecret: raw.clientSecret.value,
      groupsClaim: Option.getOrUndefined(raw.groupsClaim),
      groupRoles: raw.groupRoles,
      sessionHours: raw.sessionHours,
      createUsers: raw.createUsers
    })
  })
)
