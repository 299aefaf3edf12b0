/**
 * The team's data retention, on the Members page for its admins (`GET`/`PUT
 * /agent/team/retention`; docs/retention.md): how many days ended runs, and webhook deliveries
 * with their payloads, are kept; the server's ceilings beside each; what applies.
 *
 * Decisions:
 * - An empty field is no limit of the team's own (the server's ceiling, if any, applies).
 * - Saved as one `PUT` of both fields (the API replaces the whole setting); a refusal (above a
 *   ceiling, not a whole number of days) is the API's `error` text in an alert, and the form
 *   shows again what the API has.
 */
import { useState } from "preact/hooks"
import { request, type TeamRetention } from "./api.js"
import { OutcomeLine, useChange } from "./Outcome.js"
import { useApi } from "./Section.js"

/** Days per kind of data; an absent key: no limit. */
type Days = TeamRetention["team"]

const PATH = "/agent/team/retention"
const KINDS = [
  { key: "run_days", label: "Ended runs (days)", what: "ended runs with their timeline, conversation, transcript and artifacts" },
  { key: "webhook_delivery_days", label: "Webhook deliveries (days)", what: "webhook deliveries and their payloads" }
] as const

const limitOf = (days: number | null | undefined) => (days === undefined || days === null ? "no limit" : `${days} days`)

/** The fields' text as the setting to send: whole days, empty ones left out. */
const settingOf = (fields: Readonly<Record<keyof Days, string>>): Days =>
  Object.fromEntries(
    Object.entries(fields).filter(([, text]) => text.trim() !== "").map(([key, text]) => [key, Number(text.trim())])
  )

const RetentionForm = (props: { readonly current: TeamRetention; readonly onSave: (days: Days) => void }) => {
  const { current } = props
  const [fields, setFields] = useState<Record<keyof Days, string>>({
    run_days: current.team.run_days?.toString() ?? "",
    webhook_delivery_days: current.team.webhook_delivery_days?.toString() ?? ""
  })
  return (
    <form
      aria-label="Data retention"
      onSubmit={(event) => {
        event.preventDefault()
        props.onSave(settingOf(fields))
      }}
    >
      {KINDS.map((kind) => (
        <label key={kind.key}>
          {kind.label}
          <input
            type="number"
            min={1}
            step={1}
            value={fields[kind.key]}
            placeholder="no limit of the team's"
            onInput={(e) => setFields({ ...fields, [kind.key]: e.currentTarget.value })}
          />
          <span class="muted" data-kind={kind.key}>
            The server keeps {kind.what} for {limitOf(current.server[kind.key])} at most; now kept: {limitOf(current.effective[kind.key])}.
          </span>
        </label>
      ))}
      <button type="submit">Save retention</button>
    </form>
  )
}

export const RetentionSection = () => {
  const read = useApi<TeamRetention>(PATH)
  const { change, outcome } = useChange(read.reload)
  // Bumped at each save, made or refused: the form starts again from what the API has.
  const [saves, setSaves] = useState(0)
  return (
    <>
      <h2>Data retention</h2>
      <p class="muted">How long the team's data is kept after it ends; past that, it is removed for good.</p>
      <OutcomeLine outcome={outcome} />
      {read.error === undefined ? null : <p class="error" role="alert">{read.error}</p>}
      {read.data === undefined ? null : (
        <RetentionForm
          key={`${saves} ${JSON.stringify(read.data.team)}`}
          current={read.data}
          onSave={(days) =>
            void change(() => request(PATH, { method: "PUT", body: days }), () => "Retention saved.").finally(() => setSaves((n) => n + 1))}
        />
      )}
    </>
  )
}
