/**
 * Port: run tokens, the credential an executor hands its agent (`api.run_token` of the harness
 * start message) for the harness support endpoints. A token names one execution of one run; it is
 * honoured only while that execution holds the run (checked by the service, not the token).
 */
import type { Effect, Option } from "effect"
import { Context } from "effect"
import type { ExecutionId, RunId } from "../domain/Ids.js"

/** What a run token stands for. */
export interface RunCredential {
  readonly run_id: RunId
  readonly execution_id: ExecutionId
}

export class RunTokens extends Context.Tag("@agent-runs/core/RunTokens")<RunTokens, {
  /** A token for this execution of the run. */
  readonly issue: (credential: RunCredential) => Effect.Effect<string>
  /** The credential a token stands for, or none when it is not a token this service issued. */
  readonly verify: (token: string) => Effect.Effect<Option.Option<RunCredential>>
}>() {}
