/**
 * The form with which a team's admins connect it to GitHub or change its connection
 * (`PUT /agent/github`): the host (github.com unless changed, or a GitHub Enterprise Server) and
 * the credential, named by the team secrets holding it: a personal access token's secret, or a
 * GitHub App's id, installation id and private key's secret. No secret value is typed here.
 *
 * Decisions:
 * - The API checks the secrets and asks the host before it stores anything: a refusal naming a
 *   field (`auth.token_secret: the team has no secret named …`, `base_url: …`) is shown beside
 *   that field, any other (the host refusing the credential: `auth: …`) beside the button; what
 *   was typed stays.
 * - A connected team's form starts from its connection, so a change is an edit of what is there.
 */
import { useState } from "preact/hooks"
import { ApiError, messageOf } from "./api.js"
import { type ConnectGitHub, connectGitHub, GITHUB_COM, type GitHubConnection, type GitHubState } from "./gitHubConnection.js"

/** What is typed, every field kept while the kind of credential changes. */
interface Draft {
  readonly kind: "token" | "app"
  readonly base_url: string
  readonly token_secret: string
  readonly app_id: string
  readonly installation_id: string
  readonly private_key_secret: string
}

type Field = Exclude<keyof Draft, "kind">
const FIELDS: ReadonlyArray<Field> = ["base_url", "token_secret", "app_id", "installation_id", "private_key_secret"]

/** A field as the API names it in its errors. */
const apiName = (field: Field): string => (field === "base_url" ? field : `auth.${field}`)

const draftOf = (connection: GitHubConnection | null): Draft => {
  const auth = connection?.auth
  return {
    kind: auth?.type ?? "token",
    base_url: connection?.base_url ?? GITHUB_COM,
    token_secret: auth?.type === "token" ? auth.token_secret : "",
    app_id: auth?.type === "app" ? String(auth.app_id) : "",
    installation_id: auth?.type === "app" ? String(auth.installation_id) : "",
    private_key_secret: auth?.type === "app" ? auth.private_key_secret : ""
  }
}

const bodyOf = (draft: Draft): ConnectGitHub => ({
  base_url: draft.base_url.trim(),
  auth: draft.kind === "token"
    ? { type: "token", token_secret: draft.token_secret.trim() }
    : {
      type: "app",
      app_id: Number(draft.app_id),
      installation_id: Number(draft.installation_id),
      private_key_secret: draft.private_key_secret.trim()
    }
})

/** A refusal, and the field it names (none: it is shown beside the button). */
interface Problem {
  readonly field: Field | undefined
  readonly text: string
}

const problemOf = (failure: unknown): Problem => ({
  field: failure instanceof ApiError
    ? FIELDS.find((f) => failure.field === apiName(f) || failure.message.startsWith(`${apiName(f)}:`))
    : undefined,
  text: messageOf(failure)
})

const Input = (props: {
  readonly field: Field
  readonly label: string
  readonly type: "text" | "url" | "number"
  readonly value: string
  readonly error: string | undefined
  readonly onInput: (value: string) => void
}) => {
  const id = `github-${props.field}`
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        type={props.type}
        required
        autocomplete="off"
        spellcheck={false}
        {...(props.type === "number" ? { min: 1, step: 1 } : {})}
        value={props.value}
        aria-invalid={props.error === undefined ? undefined : true}
        aria-describedby={props.error === undefined ? undefined : `${id}-error`}
        onInput={(e) => props.onInput(e.currentTarget.value)}
      />
      {props.error === undefined ? null : <span class="error" id={`${id}-error`} role="alert">{props.error}</span>}
    </div>
  )
}

export const GitHubForm = (props: { readonly connection: GitHubConnection | null; readonly onConnected: (state: GitHubState) => void }) => {
  const [draft, setDraft] = useState(() => draftOf(props.connection))
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const [sending, setSending] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    setSending(true)
    try {
      const state = await connectGitHub(bodyOf(draft))
      setProblem(undefined)
      props.onConnected(state)
    } catch (failure) {
      setProblem(problemOf(failure))
    } finally {
      setSending(false)
    }
  }
  const input = (field: Field, label: string, type: "text" | "url" | "number" = "text") => (
    <Input
      field={field}
      label={label}
      type={type}
      value={draft[field]}
      error={problem?.field === field ? problem.text : undefined}
      onInput={(value) => setDraft({ ...draft, [field]: value })}
    />
  )
  const general = problem !== undefined && problem.field === undefined ? problem.text : undefined
  return (
    <form class="filters" method="post" aria-label="GitHub connection" onSubmit={submit}>
      {input("base_url", "Host (base URL)", "url")}
      <div class="field">
        <label for="github-kind">Credential</label>
        <select id="github-kind" value={draft.kind} onChange={(e) => setDraft({ ...draft, kind: e.currentTarget.value as Draft["kind"] })}>
          <option value="token">Personal access token</option>
          <option value="app">GitHub App</option>
        </select>
      </div>
      {draft.kind === "token" ? input("token_secret", "Token secret name") : (
        <>
          {input("app_id", "App id", "number")}
          {input("installation_id", "Installation id", "number")}
          {input("private_key_secret", "Private key secret name")}
        </>
      )}
      <div class="actions">
        <button type="submit" disabled={sending} aria-describedby={general === undefined ? undefined : "github-connect-error"}>
          {props.connection === null ? "Connect" : "Save connection"}
        </button>
        {general === undefined ? null : <span class="error" id="github-connect-error" role="alert">{general}</span>}
      </div>
    </form>
  )
}
