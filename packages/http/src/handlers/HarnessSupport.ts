/** The harness support group: agents call it with their run token. */
import { HttpApiBuilder } from "@effect/platform"
import { Errors, Runs, RunTokens } from "@agent-runs/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { Api } from "@agent-runs/api/Api"
import { CurrentRun, RunAuthentication } from "@agent-runs/api/Security"

/** Resolves the bearer run token into the run and execution it was issued for (401 otherwise). */
export const RunAuthenticationLive = Layer.effect(
  RunAuthentication,
  Effect.map(RunTokens.RunTokens, (tokens) => ({
    runToken: (token) =>
      Effect.flatMap(
        tokens.verify(Redacted.value(token)),
        Option.match({
          onNone: () => Effect.fail(new Errors.AuthenticationRequired({ message: "missing or invalid run token" })),
          onSome: Effect.succeed
        })
      )
  }))
)

export const HarnessSupportLive = HttpApiBuilder.group(Api, "harnessSupport", (handlers) =>
  Effect.map(Runs.Runs, (runs) =>
    handlers.handle("reportArtifact", ({ payload }) =>
      Effect.flatMap(CurrentRun, (credential) => runs.reportArtifact(credential, payload)))))
