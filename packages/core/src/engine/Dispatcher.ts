/**
 * The server's execution engine, composed (docs/execution.md, docs/architecture.md): the execution
 * loop (engine/ExecutionLoop.ts) over the local host (engine/LocalHost.ts: storage, the server's
 * repositories and secrets), with the server-only parts beside it: the lease sweep with admission
 * (engine/LeaseSweep.ts), the debug windows of failed setups (engine/DebugWindows.ts, which also
 * takes back an earlier life's sandboxes before anything is claimed), and the reaper of sandboxes
 * whose run no longer needs them, for executors whose place servers share (engine/SandboxReaper.ts). A self-hosted worker runs
 * the same loop over its remote host (`@agent-runs/worker`).
 *
 * Several replicas on one database share the work through `RunStore.claim`, which never gives one
 * run to two claimers; every state change is written guarded by the state and lease holder
 * (engine/RunExecutions.ts).
 */
import { Layer } from "effect"
import * as DebugWindows from "./DebugWindows.js"
import * as ExecutionLoop from "./ExecutionLoop.js"
import * as LeaseSweep from "./LeaseSweep.js"
import * as LocalHost from "./LocalHost.js"
import * as SandboxReaper from "./SandboxReaper.js"

export {
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_DRAIN_MS,
  DEFAULT_WORKER_WAIT_MS,
  defaultSettings,
  DispatcherConfig,
  type DispatcherSettings
} from "./Settings.js"

/**
 * The loop, the sweep, the debug windows and the reaper, for the scope of the layer, over the
 * `LiveExecutions` of the process (one for the loop, the sweep, the drain and readiness).
 */
export const layer = Layer.mergeAll(
  ExecutionLoop.layer.pipe(Layer.provide(LocalHost.layer)),
  LeaseSweep.layer,
  DebugWindows.loop,
  SandboxReaper.loop
).pipe(Layer.provide(DebugWindows.DebugWindows.Default))

/** Begins draining and waits for it (LiveExecutions.ts): a host calls it before it stops serving. */
export const drain = ExecutionLoop.drain

/**
 * A service that executes nothing itself (no executor: runs go to other replicas or self-hosted
 * workers) still sweeps: expired leases, teams' waiting runs admitted, runs failed whose worker
 * stayed away.
 */
export const sweepOnly = LeaseSweep.layer
