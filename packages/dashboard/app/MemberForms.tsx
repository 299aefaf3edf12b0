/**
 * The Members page's two forms: adding an existing principal to the team by uid, and creating a
 * service account of the team. Each says what it sends; the page makes the call (`onSubmit`
 * answers whether it was made, and the form empties only then, keeping what was typed otherwise).
 */
import { useState } from "preact/hooks"
import { ROLES, type Role } from "./team.js"

/** A labelled select of the three roles. */
export const RoleField = (props: { readonly id: string; readonly label: string; readonly value: Role; readonly onChange: (role: Role) => void }) => (
  <div class="field">
    <label for={props.id}>{props.label}</label>
    <select id={props.id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value as Role)}>
      {ROLES.map((role) => <option key={role} value={role}>{role}</option>)}
    </select>
  </div>
)

/** A form of a text and a role, emptied once `onSubmit` says it was done. */
const TextAndRole = (props: {
  readonly name: string
  readonly id: string
  readonly label: string
  readonly button: string
  readonly onSubmit: (text: string, role: Role) => Promise<boolean>
}) => {
  const [text, setText] = useState("")
  const [role, setRole] = useState<Role>("member")
  const submit = async (event: Event) => {
    event.preventDefault()
    if (await props.onSubmit(text.trim(), role)) setText("")
  }
  return (
    <form class="filters" aria-label={props.name} onSubmit={submit}>
      <div class="field">
        <label for={props.id}>{props.label}</label>
        <input id={props.id} value={text} required onInput={(e) => setText(e.currentTarget.value)} />
      </div>
      <RoleField id={`${props.id}-role`} label="Role" value={role} onChange={setRole} />
      <div class="actions"><button type="submit">{props.button}</button></div>
    </form>
  )
}

export const AddMemberForm = (props: { readonly onAdd: (uid: string, role: Role) => Promise<boolean> }) => (
  <TextAndRole name="Add a member" id="add-member" label="Principal uid" button="Add member" onSubmit={props.onAdd} />
)

export const NewServiceAccountForm = (props: { readonly onCreate: (name: string, role: Role) => Promise<boolean> }) => (
  <TextAndRole
    name="New service account"
    id="new-service-account"
    label="Service account name"
    button="Create service account"
    onSubmit={props.onCreate}
  />
)
