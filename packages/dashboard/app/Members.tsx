/**
 * The team's members, for its admins (`/agent/team/…`; docs/reference/access.md, "Team admins"):
 * each member's name, kind, role (a select that changes it) and whether it is disabled (said under
 * its name: a disabled member's tokens are refused until an instance administrator enables it), a page at
 * a time; removing a member; adding an existing principal by uid; creating a service account; and
 * a service account's tokens (ServiceAccountTokens.tsx); and the team's data retention (Retention.tsx).
 *
 * Decisions:
 * - The page's cursor is in the URL (`?cursor=`), as the audit log's: First page, Next page.
 * - Every change calls the API and then reads the page again: a refusal (the team's last admin, a
 *   principal that does not exist) is the API's `error` text in an alert, and the table shows what
 *   the API has (a refused role change goes back in its select).
 * - The navigation offers the page to the team's admins and instance administrators (App.tsx);
 *   anyone else who opens its URL sees the API's refusal.
 */
import { useState } from "preact/hooks"
import { AddMemberForm, NewServiceAccountForm } from "./MemberForms.js"
import { OutcomeLine, useChange } from "./Outcome.js"
import { RetentionSection } from "./Retention.js"
import { navigate } from "./router.js"
import { Empty, Section, useApi } from "./Section.js"
import { ServiceAccountTokens } from "./ServiceAccountTokens.js"
import { createServiceAccount, membersPath, type MembersPage as Page, removeMember, ROLES, type Role, setRole, type TeamMember } from "./team.js"

const MemberRow = (props: {
  readonly member: TeamMember
  readonly onRole: (role: Role) => void
  readonly onRemove: () => void
  readonly onTokens: () => void
}) => {
  const { member } = props
  const name = member.display_name
  return (
    <tr data-uid={member.uid}>
      <td>
        {name}
        <div class="muted"><code>{member.uid}</code></div>
        {member.disabled ? <div class="error">disabled</div> : null}
      </td>
      <td class="wide">{member.type === "service_account" ? "service account" : "user"}</td>
      <td>
        <select aria-label={`Role of ${name}`} value={member.role} onChange={(e) => props.onRole(e.currentTarget.value as Role)}>
          {ROLES.map((role) => <option key={role} value={role}>{role}</option>)}
        </select>
      </td>
      <td>
        <div class="buttons">
          {member.type === "service_account"
            ? <button type="button" class="secondary" aria-label={`Tokens of ${name}`} onClick={props.onTokens}>Tokens</button>
            : null}
          <button type="button" class="danger" aria-label={`Remove ${name}`} onClick={props.onRemove}>Remove</button>
        </div>
      </td>
    </tr>
  )
}

const Pager = (props: { readonly cursor: string | null; readonly next: string | null }) => (
  <nav class="pager" aria-label="Pages of the members">
    <button type="button" class="secondary" disabled={props.cursor === null} onClick={() => navigate("members")}>First page</button>
    <button
      type="button"
      disabled={props.next === null}
      onClick={() => navigate("members", new URLSearchParams({ cursor: props.next ?? "" }))}
    >
      Next page
    </button>
  </nav>
)

export const MembersPage = (props: { readonly query: URLSearchParams }) => {
  const cursor = props.query.get("cursor")
  const read = useApi<Page>(membersPath(cursor))
  const { change, outcome } = useChange(read.reload)
  const [tokensOf, setTokensOf] = useState<TeamMember | undefined>(undefined)
  const made = (answer: unknown) => answer !== undefined
  const actions = (member: TeamMember) => ({
    onRole: (role: Role) => void change(() => setRole(member.uid, role), () => `${member.display_name} is now ${role}.`),
    onRemove: () => void change(() => removeMember(member.uid), () => `Removed ${member.display_name} from the team.`),
    onTokens: () => setTokensOf(member)
  })
  return (
    <Section title="Members" read={read}>
      {(page) => (
        <>
          <p class="muted">The team's people and service accounts, and the role of each. Tokens you make are limited to this team.</p>
          <OutcomeLine outcome={outcome} />
          <table class="list members">
            <caption class="visually-hidden">The team's members</caption>
            <thead>
              <tr><th scope="col">Name</th><th scope="col" class="wide">Kind</th><th scope="col">Role</th><th scope="col">Actions</th></tr>
            </thead>
            <tbody>
              {page.members.length === 0
                ? <Empty columns={4} text="No members." />
                : page.members.map((member) => <MemberRow key={member.uid} member={member} {...actions(member)} />)}
            </tbody>
          </table>
          <Pager cursor={cursor} next={page.next_cursor} />
          {tokensOf === undefined ? null : <ServiceAccountTokens key={tokensOf.uid} account={tokensOf} onClose={() => setTokensOf(undefined)} />}
          <h2>Add a member</h2>
          <AddMemberForm onAdd={async (uid, role) => made(await change(() => setRole(uid, role), () => `Added ${uid} as ${role}.`))} />
          <h2>New service account</h2>
          <NewServiceAccountForm
            onCreate={async (name, role) =>
              made(await change(() => createServiceAccount(name, role), (account) => `Created service account ${account.display_name} (${account.uid}).`))}
          />
          <RetentionSection />
        </>
      )}
    </Section>
  )
}
