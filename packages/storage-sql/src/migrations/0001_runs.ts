/** Runs and what hangs off them. */
import { Effect } from "effect"

export default Effect.void
