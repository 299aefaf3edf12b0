/**
 * Sign-in with OpenID Connect (docs/sign-in.md): from the claims a relying party verified to a
 * session, a short-lived API token of the principal. The protocol itself (redirects, codes, the
 * device flow, checking the ID token) is the HTTP adapter's; this service decides who signs in.
 *
 * Decisions:
 * - The principal linked to the token's subject signs in. Else a user not linked yet whose email
 *   is the token's verified email is linked to it — never an instance administrator nor a service
 *   account (an email is not enough for those rights: such a principal signs in as a new user, to
 *   which an administrator gives them); two such users: refused (409), an administrator must tell
 *   them apart; a principal linked meanwhile to another subject: refused (409). Else, when
 *   `createUsers` is on, a new user is made (named after the token's name, else email, else
 *   subject). Else the sign-in is refused (403). Links and new users are audited
 *   (`principal.link`, `principal.create`, by the principal itself).
 * - A disabled or deleted principal is refused (403).
 * - When a groups mapping is configured and the token carries the groups claim, the memberships of
 *   the mapped teams are set to what the groups say at each sign-in (SignIn.mappedRoles); other
 *   teams are left to their admins. Without the claim nothing changes. A change that would leave
 *   a team without an admin is skipped (and logged), as the team's admins' own changes are refused.
 * - The session is a token like any other (`name` "sign-in (dashboard)" or "sign-in (CLI)"),
 *   expiring after `sessionHours`: it is listed with the principal's tokens and revoked the same
 *   way. Each sign-in is audited (`session.create`) by the principal itself, with the membership
 *   changes it made (`membership.set`, `membership.remove`).
 */
import { Clock, Context, DateTime, Effect, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import type { RequestOrigin } from "../domain/Audit.js"
import { Conflict, NotAuthorized } from "../domain/Errors.js"
import { Ids, type PrincipalUid, type TeamUid } from "../domain/Ids.js"
import { Principal } from "../domain/Identity.js"
import { displayNameOf, type GroupRole, mappedRoles, subjectKey, type VerifiedClaims, verifiedEmail } from "../domain/SignIn.js"
import { storageUnavailable } from "../internal/Services.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { Audit } from "./Audit.js"
import { issueToken, UNLIMITED } from "./Tokens.js"

/** How sign-in behaves (the host's settings). */
export interface SignInSettings {
  /** How long a session lasts. */
  readonly sessionHours: number
  /** Whether a new user is made for an account no principal matches. */
  readonly createUsers: boolean
  /** Which groups grant which role in which team. */
  readonly groupRoles: ReadonlyArray<GroupRole>
}

export class SignInSettingsTag extends Context.Tag("@agent-runs/core/SignInSettings")<SignInSettingsTag, SignInSettings>() {}

/** Where the session is used: it names the token. */
export type SessionClient = "dashboard" | "CLI"

/** A new session: the token (shown once), when it expires, and whose it is. */
export interface Session {
  readonly token: string
  readonly expires_at: DateTime.Utc
  readonly principal: Principal
}

const refused = (message: string) => new NotAuthorized({ message })

export class SignIn extends Effect.Service<SignIn>()("@agent-runs/core/SignIn", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* IdentityStore
    const ids = yield* Ids
    const settings = yield* SignInSettingsTag

    /** The principal signing in, as the actor of its own audit entries. */
    const actorOf = (principal: Principal, origin: RequestOrigin | undefined): Viewer => ({
      principal_uid: principal.uid,
      team_uid: "" as TeamUid,
      role: "viewer",
      instance_admin: false,
      display_name: principal.display_name,
      ...(origin === undefined ? {} : { origin })
    })

    /** Links `principal` to the subject, audited; 409 when it was linked to another meanwhile. */
    const link = (principal: Principal, key: string, origin: RequestOrigin | undefined) =>
      audit.recording(
        actorOf(principal, origin),
        Effect.filterOrFail(store.linkSubject(principal.uid, key), (linked) => linked, () =>
          new Conflict({ message: `principal ${principal.uid} is linked to another account of the provider` })),
        () => ({ action: "principal.link", resource: { type: "principal", id: principal.uid }, team_uid: null })
      )

    /** A new user for the claims, linked to their subject, audited. */
    const created = (claims: VerifiedClaims, origin: RequestOrigin | undefined) =>
      Effect.gen(function*() {
        const email = verifiedEmail(claims)
        const principal = new Principal({
          uid: (yield* ids.uid22) as PrincipalUid,
          type: "user",
          display_name: displayNameOf(claims),
          instance_admin: false,
          memberships: [],
          created_at: DateTime.unsafeMake(yield* Clock.currentTimeMillis),
          email: email ?? null
        })
        const write = Effect.zipRight(store.createPrincipal(principal), store.linkSubject(principal.uid, subjectKey(claims)))
        yield* audit.recording(actorOf(principal, origin), write, () => ({
          action: "principal.create",
          resource: { type: "principal", id: principal.uid },
          team_uid: null
        }))
        return principal
      })

    /** The principal the claims stand for, linked or made (see the module's decisions). */
    const matched = (claims: VerifiedClaims, origin: RequestOrigin | undefined) =>
      Effect.gen(function*() {
        const key = subjectKey(claims)
        const linked = yield* store.findBySubject(key)
        if (Option.isSome(linked)) return linked.value
        const email = verifiedEmail(claims)
        const candidates = email === undefined
          ? []
          : (yield* store.findUnlinkedByEmail(email)).filter((p) => p.type === "user" && !p.instance_admin)
        if (candidates.length > 1) return yield* new Conflict({ message: `several principals have the email ${email}; an administrator must remove all but one` })
        const found = candidates[0]
        if (found !== undefined) {
          yield* link(found, key, origin)
          return found
        }
        if (!settings.createUsers) return yield* refused("no principal matches this account; ask an administrator to create one with your email")
        return yield* created(claims, origin)
      })

    /** Sets the mapped teams' memberships to what the groups say, each change audited with it. */
    const syncGroups = (actor: Viewer, principal: Principal, groups: ReadonlyArray<string>) =>
      Effect.forEach(mappedRoles(groups, settings.groupRoles), ([team, role]) => {
        const current = principal.memberships.find((m) => m.team_uid === team)?.role
        if (current === role) return Effect.void
        const write = role === undefined ? store.removeMembership(principal.uid, team) : store.setMembership(principal.uid, team, role)
        const recorded = audit.recording(actor, write, () => ({
          action: role === undefined ? "membership.remove" : "membership.set",
          resource: { type: "principal", id: principal.uid },
          team_uid: team
        }))
        if (current !== "admin" || principal.disabled_at !== null) return recorded
        return Effect.flatMap(store.countTeamAdmins(team), (admins) =>
          admins > 1
            ? recorded
            : Effect.logWarning(`sign-in: the groups of ${principal.uid} would leave team ${team} without an admin; its membership is kept`))
      }, { discard: true })

    /** A session for the account the claims stand for (see the module's decisions). */
    const signIn = Effect.fn("SignIn.signIn")(
      function*(claims: VerifiedClaims, client: SessionClient, origin: RequestOrigin | undefined) {
        const principal = yield* matched(claims, origin)
        if (principal.deleted_at !== null || principal.disabled_at !== null) return yield* refused("this principal is disabled")
        const actor = actorOf(principal, origin)
        if (claims.groups !== undefined) yield* syncGroups(actor, principal, claims.groups)
        const now = yield* Clock.currentTimeMillis
        const expires_at = DateTime.unsafeMake(now + settings.sessionHours * 3_600_000)
        const issued = yield* audit.recording(
          actor,
          issueToken(store, ids, principal.uid, { ...UNLIMITED, name: `sign-in (${client})`, expires_at }),
          ({ record }) => ({ action: "session.create", resource: { type: "token", id: record.token_id }, team_uid: null })
        )
        const current = Option.getOrElse(yield* store.getPrincipal(principal.uid), () => principal)
        return { token: issued.token, expires_at, principal: current } satisfies Session
      },
      storageUnavailable
    )

    return { signIn } as const
  })
}) {}
