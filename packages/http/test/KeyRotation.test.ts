/**
 * Run tokens and download URLs across a key rotation (docs/operations.md#rotating-the-secret-key):
 * what was signed under a key given as another key is still honoured, never once that key is gone;
 * new ones are signed under the current key.
 */
import type { Ids} from "@agent-runs/core";
import { RunTokens as CoreRunTokens } from "@agent-runs/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { DownloadUrls, layer as downloads, transcriptPath } from "../src/Downloads.js"
import { layer as runTokens } from "../src/RunTokens.js"

const key = () => Redacted.make(globalThis.crypto.getRandomValues(new Uint8Array(32)))
const RUN = "019a0000-0000-7000-8000-000000000001" as Ids.RunId
const EXECUTION = "019a0000-0000-7000-8000-000000000002" as Ids.ExecutionId

describe("key rotation of signatures", () => {
  it.effect("a run token signed under the old key verifies while it is given as another key, not after", () =>
    Effect.gen(function*() {
      const [a, b] = [key(), key()]
      const token = yield* Effect.flatMap(CoreRunTokens.RunTokens, (t) => t.issue({ run_id: RUN, execution_id: EXECUTION })).pipe(
        Effect.provide(runTokens(a))
      )
      const verify = (current: typeof a, others: ReadonlyArray<typeof a>) =>
        Effect.flatMap(CoreRunTokens.RunTokens, (t) => t.verify(token)).pipe(Effect.provide(runTokens(current, others)))
      expect(Option.isSome(yield* verify(b, [a]))).toBe(true)
      expect(Option.isSome(yield* verify(b, []))).toBe(false)
      const fresh = yield* Effect.flatMap(CoreRunTokens.RunTokens, (t) => t.issue({ run_id: RUN, execution_id: EXECUTION })).pipe(
        Effect.provide(runTokens(b, [a]))
      )
      const freshVerified = yield* Effect.flatMap(CoreRunTokens.RunTokens, (t) => t.verify(fresh)).pipe(Effect.provide(runTokens(b)))
      expect(Option.isSome(freshVerified)).toBe(true)
    }))

  it.effect("a download URL signed under the old key verifies while it is given as another key, not after", () =>
    Effect.gen(function*() {
      const [a, b] = [key(), key()]
      const publicUrl = "http://127.0.0.1:8080"
      const now = Date.UTC(2026, 11, 1)
      const url = new URL((yield* Effect.provide(DownloadUrls, downloads({ secretKey: a, publicUrl }))).transcript(RUN, now).url)
      const params = { expires: url.searchParams.get("expires") ?? undefined, signature: url.searchParams.get("signature") ?? undefined }
      const verify = (others: ReadonlyArray<typeof a>) =>
        Effect.map(Effect.provide(DownloadUrls, downloads({ secretKey: b, otherKeys: others, publicUrl })), (d) =>
          d.verify(transcriptPath(RUN), params, now))
      expect(yield* verify([a])).toBeUndefined()
      expect(yield* verify([])).toBe("invalid")
    }))
})
