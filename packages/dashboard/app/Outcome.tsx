/**
 * A change a page makes through the API, and what it answered: the API's `error` text in an alert,
 * or a line saying what was done. After each change the page reads its data again (`reload`), so
 * what it shows is what the API has, whether the change was made or refused.
 */
import { useState } from "preact/hooks"
import { messageOf } from "./api.js"

/** What the last change answered. */
export type Outcome = { readonly error: string } | { readonly done: string } | undefined

export const OutcomeLine = (props: { readonly outcome: Outcome }) => {
  const { outcome } = props
  if (outcome === undefined) return null
  return "error" in outcome ? <p class="error" role="alert">{outcome.error}</p> : <p role="status">{outcome.done}</p>
}

/**
 * `change(call, done)`: makes the call, records its outcome, reads the page again; answers the
 * call's answer, or undefined when refused. `made(done)`: a change a form made and whose refusals
 * it shows itself, beside its fields: its line, and the page read again.
 */
export const useChange = (reload: () => void) => {
  const [outcome, setOutcome] = useState<Outcome>(undefined)
  const made = (done: string) => {
    setOutcome({ done })
    reload()
  }
  const change = async <A,>(call: () => Promise<A>, done: (answer: A) => string): Promise<A | undefined> => {
    try {
      const answer = await call()
      setOutcome({ done: done(answer) })
      return answer
    } catch (failure) {
      setOutcome({ error: messageOf(failure) })
      return undefined
    } finally {
      reload()
    }
  }
  return { outcome, change, made }
}
