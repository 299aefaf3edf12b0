/**
 * Every storage port of @agent-runs/core over an `SqlClient`, for SQLite and PostgreSQL alike.
 * The dialect packages provide the client, the wake-ups and the key, and run `migrate` first.
 */
import { Layer } from "effect"

/** The stores, needing `SqlClient`, `Wakeups` and `StorageKey`. */
export const layer = Layer.mergeAll(
  Layer.empty
)
