/**
 * Connected self-hosted workers (CONTRACT §4, `GET /agent/connected-self-hosted-workers`):
 * presence from heartbeats, scoped to the caller's team. `worker_id` is what a run's
 * `agent_config.worker_host` names; `labels` are free-form tags the worker advertises;
 * `capacity` is how many runs it takes at once and `active_runs` how many it holds now.
 */
import { Schema } from "effect"
import { NonBlankString, Timestamp } from "./Common.js"

/** A self-hosted worker that is connected now. */
export const ConnectedWorker = Schema.Struct({
  worker_id: NonBlankString,
  display_name: Schema.String,
  connected_at: Timestamp,
  last_heartbeat_at: Timestamp,
  labels: Schema.Array(Schema.String),
  capacity: Schema.NonNegativeInt,
  active_runs: Schema.NonNegativeInt
}).annotations({ identifier: "ConnectedWorker" })
export type ConnectedWorker = typeof ConnectedWorker.Type

/** ListConnectedSelfHostedWorkersResponse. */
export class ListConnectedWorkersResponse extends Schema.Class<ListConnectedWorkersResponse>(
  "ListConnectedWorkersResponse"
)({
  workers: Schema.Array(ConnectedWorker)
}) {}
