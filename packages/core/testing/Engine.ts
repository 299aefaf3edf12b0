/**
 * The server's execution engine (`Dispatcher.layer`: the execution loop over the local host, the
 * lease sweep, the debug windows) over given stores, with fake run tokens: what a replica runs,
 * without HTTP. The executor, the blob store and the repositories are the caller's. Used by the
 * claim wake-up suite and bench/queue (so it imports nothing of vitest).
 */
import { Effect, Layer, Option } from "effect"
import { IdsLive } from "../src/domain/Ids.js"
import * as Dispatcher from "../src/engine/Dispatcher.js"
import * as Health from "../src/engine/Health.js"
import { LiveExecutions } from "../src/engine/LiveExecutions.js"
import { RunExecutions } from "../src/engine/RunExecutions.js"
import type { BlobStore } from "../src/ports/BlobStore.js"
import type { Executor } from "../src/ports/Executor.js"
import type { RepoSource } from "../src/ports/RepoSource.js"
import { RunTokens } from "../src/ports/RunTokens.js"
import type { Stores } from "./Stores.js"

export const fakeRunTokens = Layer.succeed(RunTokens, {
  issue: ({ execution_id }) => Effect.succeed(`rt_${execution_id}`),
  verify: () => Effect.succeed(Option.none())
})

/** The engine for the scope of the layer, with these settings over the defaults. */
export const engineLayer = (
  settings: Partial<Dispatcher.DispatcherSettings>,
  adapters: Layer.Layer<Executor | BlobStore | RepoSource>
): Layer.Layer<never, never, Stores> =>
  Dispatcher.layer.pipe(
    Layer.provide(RunExecutions.Default),
    Layer.provide(
      Layer.mergeAll(
        adapters,
        fakeRunTokens,
        IdsLive,
        Health.layer,
        LiveExecutions.Default,
        Layer.succeed(Dispatcher.DispatcherConfig, {
          ...Dispatcher.defaultSettings("agent", "http://127.0.0.1/api/v1"),
          ...settings
        })
      )
    )
  )
