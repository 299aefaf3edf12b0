/**
 * The team's members, service accounts and their tokens (`/agent/team/…`, for the team's admins;
 * docs/reference/access.md, "Team admins"): the wire shapes the Members page reads and the calls it
 * makes, in the team of the tab (the TEAM header `request` sends).
 */
import { request } from "./api.js"

export const ROLES = ["viewer", "member", "admin"] as const
export type Role = (typeof ROLES)[number]

/** A member of the team as its admins see it. */
export interface TeamMember {
  readonly uid: string
  readonly type: "user" | "service_account"
  readonly display_name: string
  readonly role: Role
  readonly disabled: boolean
}

/** `GET /agent/team/members`: a page in uid order; `next_cursor` is null on the last page. */
export interface MembersPage {
  readonly members: ReadonlyArray<TeamMember>
  readonly next_cursor: string | null
}

/** A token as listed: never the token itself. */
export interface TokenInfo {
  readonly token_id: string
  readonly name: string | null
  readonly created_at: string
  readonly revoked_at: string | null
  readonly expires_at: string | null
  readonly last_used_at: string | null
  readonly max_role: Role | null
}

/** What a new token is asked to be (it is always limited to the team). */
export interface NewToken {
  readonly name?: string
  readonly expires_at?: string
  readonly max_role?: Role
}

const member = (uid: string) => `/agent/team/members/${encodeURIComponent(uid)}`
const account = (uid: string) => `/agent/team/service-accounts/${encodeURIComponent(uid)}`

/** The path of a page of members (the first without a cursor). */
export const membersPath = (cursor: string | null): string =>
  cursor === null ? "/agent/team/members" : `/agent/team/members?cursor=${encodeURIComponent(cursor)}`

/** The path of a service account's tokens limited to the team. */
export const tokensPath = (uid: string): string => `${account(uid)}/tokens`

/** Adds a principal to the team, or changes its role there. */
export const setRole = (uid: string, role: Role): Promise<unknown> => request(member(uid), { method: "PUT", body: { role } })

/** Removes a member from the team. */
export const removeMember = (uid: string): Promise<unknown> => request(member(uid), { method: "DELETE" })

/** A new service account, a member of this team only. */
export const createServiceAccount = (display_name: string, role: Role): Promise<{ readonly uid: string; readonly display_name: string }> =>
  request("/agent/team/service-accounts", { method: "POST", body: { display_name, role } })

/** A new token of a service account: the token is in the answer, this once. */
export const createToken = (uid: string, body: NewToken): Promise<{ readonly token_id: string; readonly token: string }> =>
  request(tokensPath(uid), { method: "POST", body })

/** Revokes a token limited to the team, at once. */
export const revokeToken = (tokenId: string): Promise<unknown> =>
  request(`/agent/team/tokens/${encodeURIComponent(tokenId)}`, { method: "DELETE" })
