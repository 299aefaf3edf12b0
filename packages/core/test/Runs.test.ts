import { describe, expect, it } from "@effect/vitest"
import type { Context } from "effect"
import { Effect, Layer } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import { IdsLive, type PrincipalUid, type TeamUid } from "../src/domain/Ids.js"
import { AuditLog } from "../src/ports/AuditLog.js"
import { EnvironmentStore } from "../src/ports/EnvironmentStore.js"
import { IdentityStore } from "../src/ports/IdentityStore.js"
import { RunStore } from "../src/ports/RunStore.js"
import { SecretStore } from "../src/ports/SecretStore.js"
import { StorageError } from "../src/ports/Storage.js"
import { RunAgentRequest } from "../src/domain/Run.js"
import { defaultTitle, MAX_DEFAULT_TITLE_LENGTH, Runs } from "../src/services/Runs.js"

/** A store whose every operation fails as an unreachable database would. */
const down = <I, S>(tag: Context.Tag<I, S>): Layer.Layer<I> =>
  Layer.succeed(
    tag,
    new Proxy({}, {
      get: (_, operation) => {
        const failed = Effect.fail(new StorageError({ operation: String(operation), cause: new Error("connection refused") }))
        return Object.assign(() => failed, failed)
      }
    }) as S
  )

const unreachable = Runs.Default.pipe(
  Layer.provide([down(RunStore), down(EnvironmentStore), down(IdentityStore), down(SecretStore), down(AuditLog), IdsLive])
)

const viewer: Viewer = {
  principal_uid: "P".repeat(22) as PrincipalUid,
  team_uid: "T".repeat(22) as TeamUid,
  role: "member",
  instance_admin: false
}

describe("Runs", () => {
  it.effect("a storage failure is a retryable resource_unavailable that does not carry the cause", () =>
    Effect.gen(function* () {
      const runs = yield* Runs
      const failures = [
        yield* Effect.flip(runs.create(viewer, new RunAgentRequest({ prompt: "x" }))),
        yield* Effect.flip(runs.get(viewer, "01a201d1-b198-773f-9550-24a9185d1f67")),
        yield* Effect.flip(runs.list(viewer, {})),
        yield* Effect.flip(runs.cancel(viewer, "01a201d1-b198-773f-9550-24a9185d1f67")),
        yield* Effect.flip(runs.timeline(viewer, "01a201d1-b198-773f-9550-24a9185d1f67"))
      ]
      for (const failure of failures) {
        expect(failure._tag).toBe("ResourceUnavailable")
        expect(failure.retryable).toBe(true)
        expect(failure.message).not.toContain("connection refused")
      }
    }).pipe(Effect.provide(unreachable)))

  it.effect("validation comes before storage: a bad id or query is a 400 even when storage is down", () =>
    Effect.gen(function* () {
      const runs = yield* Runs
      expect((yield* Effect.flip(runs.get(viewer, "x")))._tag).toBe("InvalidRequest")
      expect((yield* Effect.flip(runs.list(viewer, { limit: "x" })))._tag).toBe("InvalidRequest")
    }).pipe(Effect.provide(unreachable)))

  it("defaultTitle takes the first non-blank line, trimmed, and cuts it to the limit", () => {
    expect(defaultTitle("\r\n   \r\n  Fix it  \r\nthen more")).toBe("Fix it")
    const exact = "a".repeat(MAX_DEFAULT_TITLE_LENGTH)
    expect(defaultTitle(exact)).toBe(exact)
    const cut = defaultTitle(`${"😀".repeat(MAX_DEFAULT_TITLE_LENGTH)}x`)
    expect(Array.from(cut)).toHaveLength(MAX_DEFAULT_TITLE_LENGTH)
    expect(cut).toBe(`${"😀".repeat(MAX_DEFAULT_TITLE_LENGTH - 1)}…`)
  })
})
