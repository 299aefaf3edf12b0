/**
 * Test support for a service mounted in a host: a free loopback port (the public URL names it
 * before the host listens), JSON calls to the mounted API with a bearer token, a run taken from
 * creation to its end, a user with a token, and the assistant's texts of a conversation.
 */
import { once } from "node:events"
import { createServer, type AddressInfo } from "node:net"

/** A port free on 127.0.0.1 a moment ago. */
export const freePort = async (): Promise<number> => {
  const probe = createServer().listen(0, "127.0.0.1")
  await once(probe, "listening")
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

/** A conversation's steps, as far as tests read them. */
export interface ConversationStep {
  readonly messages: ReadonlyArray<{ readonly role: string; readonly content: ReadonlyArray<{ readonly text?: string }> }>
  readonly steps: ReadonlyArray<ConversationStep>
}

/** Every text the assistant wrote in `steps` and their sub-steps, in order. */
export const assistantTexts = (steps: ReadonlyArray<ConversationStep>): Array<string> =>
  steps.flatMap((step) => [
    ...step.messages.filter((m) => m.role === "assistant").flatMap((m) => m.content.flatMap((part) => part.text ?? [])),
    ...assistantTexts(step.steps)
  ])

/** What `runToEnd` saw: the run's last state and its conversation. */
export interface FinishedRun {
  readonly runId: string
  readonly state: string
  readonly conversation: { readonly steps: ReadonlyArray<ConversationStep> }
}

/** The API under `apiUrl` (`…/api/v1`) as the holder of `token`. */
export const mountedApi = (apiUrl: string, token: string) => {
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${apiUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  const json = async <A>(response: Response): Promise<A> => {
    if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`)
    return (await response.json()) as A
  }
  /** Creates a run of `prompt`, waits (up to 30 s) until it has ended, and reads its conversation. */
  const runToEnd = async (prompt: string): Promise<FinishedRun> => {
    const { run_id } = await json<{ run_id: string }>(await call("POST", "/agent/runs", { prompt }))
    let state = ""
    for (let i = 0; i < 300 && !["SUCCEEDED", "FAILED", "ERROR", "CANCELLED", "BLOCKED"].includes(state); i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 100))
      state = (await json<{ state: string }>(await call("GET", `/agent/runs/${run_id}`))).state
    }
    const conversation = await json<FinishedRun["conversation"]>(await call("GET", `/agent/runs/${run_id}/conversation`))
    return { runId: run_id, state, conversation }
  }
  /** A new user with `memberships` and a token of theirs (the holder of `token` must be an instance admin). */
  const principal = async (
    displayName: string,
    memberships: ReadonlyArray<{ readonly team_uid: string; readonly role: string }>
  ): Promise<{ uid: string; token: string; tokenId: string }> => {
    const { uid } = await json<{ uid: string }>(
      await call("POST", "/admin/principals", { type: "user", display_name: displayName, memberships })
    )
    const created = await json<{ token: string; token_id: string }>(await call("POST", `/admin/principals/${uid}/tokens`, {}))
    return { uid, token: created.token, tokenId: created.token_id }
  }
  return { call, json, principal, runToEnd }
}
