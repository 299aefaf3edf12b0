/**
 * The Spend page (docs/budgets.md): what the team's runs spent by day over the last 30 days, and
 * the team's budgets (the defaults of its runs' `max_cost_usd` and `max_turns`, and the ceilings
 * over them), which its admins change here.
 */
import { useState } from "preact/hooks"
import { messageOf, request, type TeamBudgets, type TeamSpend } from "./api.js"
import { formatUsd } from "./format.js"
import { Empty, Section, useApi } from "./Section.js"

const DAYS = 30

const KEYS = [
  ["default_max_cost_usd", "Default max cost (USD)"],
  ["max_cost_usd", "Ceiling of max cost (USD)"],
  ["default_max_turns", "Default max turns"],
  ["max_turns", "Ceiling of max turns"]
] as const satisfies ReadonlyArray<readonly [keyof TeamBudgets, string]>

const SpendTable = (props: { readonly spend: TeamSpend }) => (
  <table class="list">
    <caption class="visually-hidden">Spend by day</caption>
    <thead><tr><th scope="col">Day (UTC)</th><th scope="col">Runs</th><th scope="col">Cost</th><th scope="col" class="wide">Tokens in / out</th></tr></thead>
    <tbody>
      {props.spend.days.length === 0 ? <Empty columns={4} text={`No runs in the last ${DAYS} days.`} /> : props.spend.days.map((day) => (
        <tr key={day.day}>
          <td>{day.day}</td>
          <td>{day.runs}</td>
          <td>{formatUsd(day.cost_usd)}</td>
          <td class="wide">{day.input_tokens.toLocaleString()} / {day.output_tokens.toLocaleString()}</td>
        </tr>
      ))}
    </tbody>
    <tfoot><tr><th scope="row">Total since {props.spend.since}</th><td /><td>{formatUsd(props.spend.total_cost_usd)}</td><td class="wide" /></tr></tfoot>
  </table>
)

/** The budgets as fields (the admins') or as a list (everyone else's). */
const BudgetsForm = (props: { readonly budgets: TeamBudgets; readonly admin: boolean; readonly onSaved: () => void }) => {
  const [values, setValues] = useState<Record<string, string>>(
    Object.fromEntries(KEYS.map(([key]) => [key, props.budgets[key] === undefined || props.budgets[key] === null ? "" : String(props.budgets[key])]))
  )
  const [status, setStatus] = useState<{ readonly error: boolean; readonly text: string } | undefined>(undefined)
  const save = async (event: Event) => {
    event.preventDefault()
    const body = Object.fromEntries(KEYS.flatMap(([key]) => (values[key]!.trim() === "" ? [] : [[key, Number(values[key])]])))
    try {
      await request("/agent/team/budgets", { method: "PUT", body })
      setStatus({ error: false, text: "Saved: runs created from now on get these budgets." })
      props.onSaved()
    } catch (failure) {
      setStatus({ error: true, text: messageOf(failure) })
    }
  }
  if (!props.admin) {
    return (
      <dl class="facts">
        {KEYS.map(([key, label]) => <div key={key}><dt>{label}</dt><dd>{props.budgets[key] ?? "none"}</dd></div>)}
      </dl>
    )
  }
  return (
    <form class="filters" aria-label="Team budgets" onSubmit={save}>
      {KEYS.map(([key, label]) => (
        <div class="field" key={key}>
          <label for={`budget-${key}`}>{label}</label>
          <input id={`budget-${key}`} inputMode="decimal" value={values[key]} placeholder="none"
            onInput={(e) => setValues({ ...values, [key]: e.currentTarget.value })} />
        </div>
      ))}
      <div class="actions"><button type="submit">Save budgets</button></div>
      {status === undefined ? null : <p class={status.error ? "error" : "muted"} role={status.error ? "alert" : "status"}>{status.text}</p>}
    </form>
  )
}

export const SpendPage = (props: { readonly admin: boolean }) => {
  const spend = useApi<TeamSpend>(`/agent/team/spend?days=${DAYS}`)
  const budgets = useApi<TeamBudgets>("/agent/team/budgets")
  return (
    <>
      <Section title="Spend" read={spend}>{(data) => <SpendTable spend={data} />}</Section>
      <h2>Budgets</h2>
      <p class="muted">A run gets its own <code>max_cost_usd</code> and <code>max_turns</code>, else its environment's, else these defaults; never more than the ceilings.</p>
      {budgets.error === undefined ? null : <p class="error" role="alert">{budgets.error}</p>}
      {budgets.data === undefined ? null : <BudgetsForm budgets={budgets.data} admin={props.admin} onSaved={budgets.reload} />}
    </>
  )
}
