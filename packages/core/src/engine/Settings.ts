/**
 * How the execution engine runs (the server reads it from its configuration; a self-hosted worker
 * from its options and the server's heartbeat answer), and how the scheduler runs (also read by
 * the schedules service: run now keeps the recent runs the scheduler keeps).
 */
import { Context } from "effect"
import { DEFAULT_MAX_RUNTIME_SECONDS } from "../domain/MaxRuntime.js"
import { DEFAULT_RECENT_RUNS } from "../domain/Schedule.js"
import { DEFAULT_MAX_DUE_TICKS } from "../domain/ScheduleStateMachine.js"

export interface DispatcherSettings {
  /** The default harness command (a shell command), when the environment names none. */
  readonly harness: string
  /** The API base URL agents call, e.g. `http://127.0.0.1:8080/api/v1`. */
  readonly apiBaseUrl: string
  /** How many runs this replica executes at once. */
  readonly concurrency: number
  /** Lease length; renewed every third of it. */
  readonly leaseMs: number
  /** Claim poll when no wake-up comes. */
  readonly pollMs: number
  /** How often a live run is checked for cancel and follow-ups. */
  readonly watchMs: number
  /** How often expired leases and waiting teams are swept. */
  readonly sweepMs: number
  /** How long an agent has to exit after the cancel message, and then after SIGTERM. */
  readonly cancelGraceMs: number
  /** How often the conversation is saved while the agent runs. */
  readonly flushMs: number
  /**
   * The most a run's agents may print (its transcript, over all its executions), in bytes: past
   * it the agent is stopped and the run FAILED `agent_failed`. Default 50 MiB.
   */
  readonly maxOutputBytes?: number | undefined
  /**
   * How long a QUEUED run waits for its self-hosted worker: once the run is this old and the
   * worker has sent no heartbeat for as long, the sweep fails it (`resource_unavailable`).
   */
  readonly workerWaitMs?: number | undefined
  /**
   * The server's ceiling of a run's `max_runtime_seconds` (MaxRuntime.ts), and its limit when
   * neither the run nor its environment sets one. Default one day.
   */
  readonly maxRuntimeSeconds?: number | undefined
  /**
   * How long a stopping loop lets its running agents finish before it stops them and hands their
   * runs back to the queue (LiveExecutions.ts). Default `DEFAULT_DRAIN_MS`.
   */
  readonly drainMs?: number | undefined
  /**
   * Whether a stopping loop leaves the agents that can outlive it running for the next process of
   * the service to adopt, instead of stopping them and handing their runs back once the grace
   * period is over (Execution.ts; docs/deployment.md#adopting-agents-across-a-restart): the agents
   * of our own protocol, started by an executor that has lasting agents (`Sandbox.startLasting`),
   * on a host that keeps them (`ExecutionHost.adoption`). Default false.
   */
  readonly adoptAgents?: boolean | undefined
}

/**
 * How long a stopping loop lets running agents finish by default: not at all (they are stopped and
 * handed over at once). The bundled server waits 20 seconds (`AGENT_RUNS_DRAIN_SECONDS`).
 */
export const DEFAULT_DRAIN_MS = 0

/** The most a run's agents may print by default: 50 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 50 * 1024 * 1024

/** How long a run waits for an absent self-hosted worker by default: 10 minutes. */
export const DEFAULT_WORKER_WAIT_MS = 10 * 60_000

export const defaultSettings = (harness: string, apiBaseUrl: string): DispatcherSettings => ({
  harness,
  apiBaseUrl,
  concurrency: 16,
  leaseMs: 30_000,
  pollMs: 1_000,
  watchMs: 250,
  sweepMs: 1_000,
  cancelGraceMs: 5_000,
  flushMs: 250,
  maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES,
  workerWaitMs: DEFAULT_WORKER_WAIT_MS,
  maxRuntimeSeconds: DEFAULT_MAX_RUNTIME_SECONDS,
  drainMs: DEFAULT_DRAIN_MS
})

export class DispatcherConfig extends Context.Tag("@agent-runs/core/DispatcherConfig")<DispatcherConfig, DispatcherSettings>() {}

/** How the scheduler runs; the server reads it from its configuration. */
export interface SchedulerSettings {
  /** Longest sleep between passes: new and changed schedules are seen within it. */
  readonly pollMs: number
  /** How old a tick may be at the start of a pass (and no older than the replica's previous pass) and still be on time. */
  readonly catchUpGraceMs: number
  /**
   * Due schedules fired together: read in one query, their runs created in one transaction, their
   * records written in one more.
   */
  readonly batchSize: number
  /** Batches being fired at once. */
  readonly concurrency: number
  /** How many runs `history.recent_runs` keeps: the scheduler's records and run now alike. */
  readonly recentRuns: number
  /** On-time ticks of one schedule started in one pass at most (the latest ones). */
  readonly maxTicks: number
}

export const defaultSchedulerSettings: SchedulerSettings = {
  pollMs: 1_000,
  catchUpGraceMs: 2_000,
  batchSize: 250,
  concurrency: 2,
  recentRuns: DEFAULT_RECENT_RUNS,
  maxTicks: DEFAULT_MAX_DUE_TICKS
}

/** The scheduler's settings: read by the scheduler and by the schedules service (run now). */
export class SchedulerConfig extends Context.Tag("@agent-runs/core/SchedulerConfig")<SchedulerConfig, SchedulerSettings>() {}
