/**
 * The team secrets of a worker's claim, both ways (docs/workers.md): what the server resolved
 * (`GivenSecrets`, ExecutionPlan.ts) as the protocol carries it (`Worker.WorkerSecrets`: each
 * `{value}` or `{failure}`), and back into the source the worker's plan reads them from.
 */
import { Either } from "effect"
import type { WorkerSecrets } from "../domain/Worker.js"
import { type GivenSecrets, type McpServers, noSecrets, type SecretSource, secretsGiven } from "./ExecutionPlan.js"

const toWire = <A>(either: Either.Either<A, string>) =>
  Either.match(either, { onLeft: (failure) => ({ failure }), onRight: (value) => ({ value }) })

const fromWire = <A>(wire: { readonly value: A } | { readonly failure: string }): Either.Either<A, string> =>
  "failure" in wire ? Either.left(wire.failure) : Either.right(wire.value)

/** The resolved secrets as a claim's answer carries them. */
export const toClaim = (secrets: GivenSecrets): WorkerSecrets => ({
  agent_auth: toWire(secrets.agentAuth),
  mcp_servers: toWire(secrets.mcpServers)
})

/** Where a worker's execution reads its secrets: the claim's (the server read them for it), else nowhere (an older server). */
export const fromClaim = (secrets: WorkerSecrets | undefined): SecretSource =>
  secrets === undefined
    ? noSecrets
    : secretsGiven({
      agentAuth: fromWire(secrets.agent_auth),
      // As the server resolved them from the run's checked configurations.
      mcpServers: fromWire(secrets.mcp_servers) as Either.Either<McpServers, string>
    })
