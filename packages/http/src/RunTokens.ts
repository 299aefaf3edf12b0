/**
 * Run tokens signed with the server's secret key: `rt_<run_id>.<execution_id>.<hex HMAC-SHA256>`.
 * Stateless (any replica verifies them); a token is honoured only while its execution holds the
 * run, which core's `Runs.reportArtifact` checks. The signing key is derived from the secret key
 * for this purpose alone.
 */
import { Ids, RunTokens } from "@agent-runs/core"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"

const isRunId = Schema.is(Ids.RunId)
const isExecutionId = Schema.is(Ids.ExecutionId)

/**
 * Run tokens signed with a key derived from `secretKey`; while keys are rotated, tokens signed
 * under one of `otherKeys` are honoured too (an agent started before the rotation keeps working).
 */
export const layer = (secretKey: Redacted.Redacted<Uint8Array>, otherKeys: ReadonlyArray<Redacted.Redacted<Uint8Array>> = []) =>
  Layer.sync(RunTokens.RunTokens, () => {
    const derive = (k: Redacted.Redacted<Uint8Array>) => createHmac("sha256", Redacted.value(k)).update("agent-runs run tokens v1").digest()
    const keys = [secretKey, ...otherKeys].map(derive)
    const macWith = (key: Buffer, runId: string, executionId: string) => createHmac("sha256", key).update(`${runId}.${executionId}`).digest()
    const mac = (runId: string, executionId: string) => macWith(keys[0]!, runId, executionId)
    return {
      issue: ({ execution_id, run_id }) =>
        Effect.sync(() => `rt_${run_id}.${execution_id}.${mac(run_id, execution_id).toString("hex")}`),
      verify: (token) =>
        Effect.sync(() => {
          const match = /^rt_([^.]+)\.([^.]+)\.([0-9a-f]{64})$/.exec(token)
          if (match === null) return Option.none()
          const [, runId, executionId, signature] = match as unknown as [string, string, string, string]
          if (!isRunId(runId) || !isExecutionId(executionId)) return Option.none()
          const given = Buffer.from(signature, "hex")
          if (!keys.some((key) => timingSafeEqual(macWith(key, runId, executionId), given))) return Option.none()
          return Option.some({ run_id: runId, execution_id: executionId })
        })
    }
  })
