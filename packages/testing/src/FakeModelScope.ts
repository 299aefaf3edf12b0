/** The fake model server for an Effect scope: started on acquire, closed on release. */
import { Effect } from "effect"
import type { Scope } from "effect"
import { type FakeModelServer, startFakeModel } from "./FakeModel.js"

export const fakeModel = (options: Parameters<typeof startFakeModel>[0] = {}): Effect.Effect<FakeModelServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => startFakeModel(options)),
    (server) => Effect.promise(() => server.close())
  )
