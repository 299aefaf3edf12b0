/**
 * Sign-in with OpenID Connect (docs/sign-in.md), the pure part: what a verified ID token says,
 * the key a principal is linked by, the name a new principal gets, and the team memberships the
 * configured groups grant.
 *
 * Decisions:
 * - A principal is linked to one subject of the issuer (`<issuer> <sub>`); a principal not linked
 *   yet is matched by its email only when the provider says the email is verified.
 * - Groups map to teams explicitly (`group=team_uid:role`, configured); a principal in several
 *   mapped groups of one team gets the highest of their roles. Only the teams the mapping names
 *   are managed by sign-in: there, each sign-in adds, changes or removes the membership to match
 *   the groups; every other team's memberships are left to its admins.
 */
import type { TeamUid } from "./Ids.js"
import type { Role } from "./Identity.js"

/** What the relying party verified: the ID token's claims that sign-in uses. */
export interface VerifiedClaims {
  readonly issuer: string
  readonly subject: string
  readonly email: string | undefined
  readonly email_verified: boolean
  readonly name: string | undefined
  /** The configured groups claim: undefined when the token has none. */
  readonly groups: ReadonlyArray<string> | undefined
}

/** One configured mapping: members of `group` get `role` in `team_uid`. */
export interface GroupRole {
  readonly group: string
  readonly team_uid: TeamUid
  readonly role: Role
}

/** The most characters a name or email taken from a token keeps. */
const MAX_CLAIM_CHARS = 200

/** The key a principal is linked to its provider's subject by. */
export const subjectKey = (claims: Pick<VerifiedClaims, "issuer" | "subject">): string => `${claims.issuer} ${claims.subject}`

/** The email a principal may be matched by: the verified one, in lower case; else undefined. */
export const verifiedEmail = (claims: VerifiedClaims): string | undefined =>
  claims.email_verified && claims.email !== undefined && claims.email.length <= MAX_CLAIM_CHARS
    ? claims.email.trim().toLowerCase()
    : undefined

/** The display name of a principal created at sign-in: its name, else its email, else its subject. */
export const displayNameOf = (claims: VerifiedClaims): string =>
  (claims.name?.trim() || claims.email?.trim() || claims.subject).slice(0, MAX_CLAIM_CHARS)

const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2 }

/**
 * The role sign-in gives in each team the mapping names: a role where a group of the principal
 * maps, undefined (no membership) where none does.
 */
export const mappedRoles = (groups: ReadonlyArray<string>, mapping: ReadonlyArray<GroupRole>): ReadonlyMap<TeamUid, Role | undefined> => {
  const held = new Set(groups)
  const roles = new Map<TeamUid, Role | undefined>()
  for (const entry of mapping) {
    const current = roles.get(entry.team_uid)
    if (!held.has(entry.group)) {
      if (!roles.has(entry.team_uid)) roles.set(entry.team_uid, undefined)
    } else if (current === undefined || RANK[entry.role] > RANK[current]) {
      roles.set(entry.team_uid, entry.role)
    }
  }
  return roles
}

/** Parses `group=team_uid:role` entries separated by commas or whitespace; a message naming the bad entry. */
export const parseGroupRoles = (text: string): { readonly mapping: ReadonlyArray<GroupRole> } | { readonly problem: string } => {
  const mapping: Array<GroupRole> = []
  for (const entry of text.split(/[\s,]+/).filter((e) => e !== "")) {
    const match = /^(.+)=([A-Za-z0-9]{22}):(admin|member|viewer)$/.exec(entry)
    if (match === null) return { problem: `${JSON.stringify(entry.slice(0, 80))} is not group=team_uid:role (role admin, member or viewer)` }
    mapping.push({ group: match[1]!, team_uid: match[2]! as TeamUid, role: match[3]! as Role })
  }
  return { mapping }
}
