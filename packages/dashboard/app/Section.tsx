/**
 * What the factory's pages share: an API read (`useApi`), a page's frame (its heading, the API's
 * error, a loading note, then its content) and a table's empty row.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"
import { messageOf, request } from "./api.js"

/** An API read: its answer, or the API's error text; `reload` reads it again. */
export const useApi = <A,>(path: string): { data: A | undefined; error: string | undefined; reload: () => void } =>
  useOptionalApi<A>(path)

/** `useApi` of a read that may not be made (`path` undefined: nothing is asked, nothing answered). */
export const useOptionalApi = <A,>(path: string | undefined): { data: A | undefined; error: string | undefined; reload: () => void } => {
  const [data, setData] = useState<A | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [tick, setTick] = useState(0)
  useEffect(() => {
    if (path === undefined) return
    const controller = new AbortController()
    request<A>(path, { signal: controller.signal }).then(
      (answer) => {
        setData(answer)
        setError(undefined)
      },
      (failure: unknown) => {
        if (!controller.signal.aborted) setError(messageOf(failure))
      }
    )
    return () => controller.abort()
  }, [path, tick])
  return { data, error, reload: () => setTick((n) => n + 1) }
}

/** A page of the factory: its heading, the API's error, a loading note, then its table. */
export const Section = <A,>(props: {
  readonly title: string
  readonly read: { data: A | undefined; error: string | undefined }
  readonly children: (data: A) => ComponentChildren
}) => (
  <>
    <h1>{props.title}</h1>
    {props.read.error === undefined ? null : <p class="error" role="alert">{props.read.error}</p>}
    {props.read.data === undefined
      ? (props.read.error === undefined ? <p aria-live="polite">Loading…</p> : null)
      : props.children(props.read.data)}
  </>
)

export const Empty = (props: { readonly columns: number; readonly text: string }) => (
  <tr><td colSpan={props.columns} class="muted">{props.text}</td></tr>
)
