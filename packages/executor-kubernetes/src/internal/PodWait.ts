/**
 * Waiting for a Job's pod to run: a list, then a watch from the list's version, and a fresh list
 * whenever the watch ends or answers `410 Gone` (its version is older than the API server keeps).
 * A pod that cannot start (its image cannot be pulled, it ended, it was deleted) is an error that
 * says why, at once; one still pending when the time is up is an error that says what it waits for.
 */
import { type V1Pod, Watch } from "@kubernetes/client-node"
import { ExecutorError } from "@agent-runs/core/ports/Executor"
import { Duration, Effect, Option, Queue, type Scope } from "effect"
import { type Cluster, call } from "./Cluster.js"

/** Reasons of a waiting container that no wait will cure. */
const HOPELESS = new Set(["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerError"])

/** Where a pod is on its way to running: running (its name), hopeless (why), or still on its way (what it waits for). */
export type PodProgress =
  | { readonly _tag: "Running"; readonly pod: string }
  | { readonly _tag: "Hopeless"; readonly reason: string }
  | { readonly _tag: "Waiting"; readonly reason: string }

/** What a pod's status says (pure; test/PodWait.test.ts). */
export const progressOf = (pod: V1Pod): PodProgress => {
  const name = pod.metadata?.name ?? "?"
  const phase = pod.status?.phase ?? "Pending"
  const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting
  const described = waiting?.reason === undefined ? undefined : `${waiting.reason}${waiting.message === undefined ? "" : `: ${waiting.message}`}`
  if (pod.metadata?.deletionTimestamp !== undefined) return { _tag: "Hopeless", reason: `pod ${name} is being deleted` }
  if (phase === "Running") return { _tag: "Running", pod: name }
  if (phase === "Succeeded" || phase === "Failed") {
    return { _tag: "Hopeless", reason: `pod ${name} ended (${phase}${pod.status?.reason === undefined ? "" : `, ${pod.status.reason}`}) before it could run anything` }
  }
  if (waiting?.reason !== undefined && HOPELESS.has(waiting.reason)) return { _tag: "Hopeless", reason: `pod ${name} cannot start: ${described}` }
  const unschedulable = pod.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False")
  return {
    _tag: "Waiting",
    reason: described ?? (unschedulable === undefined ? `pod ${name} is ${phase}` : `pod ${name} is not scheduled: ${unschedulable.message ?? unschedulable.reason}`)
  }
}

type Seen = { readonly _tag: "Event"; readonly type: string; readonly object: unknown } | { readonly _tag: "End" }

const isExpired = (object: unknown) =>
  typeof object === "object" && object !== null && "code" in object && object.code === 410

/**
 * Waits until the pod of `job` runs: its name. `timeoutMs` bounds the wait; the error then names
 * what the pod last waited for.
 */
export const waitForPod = (cluster: Cluster, job: string, timeoutMs: number): Effect.Effect<string, ExecutorError> => {
  const labelSelector = `job-name=${job}`
  let last = `no pod of Job ${job} yet`
  type Outcome = Option.Option<Effect.Effect<string, ExecutorError>>
  const hopeless = (message: string): Outcome => Option.some(Effect.fail(new ExecutorError({ message })))
  const decide = (pod: V1Pod): Outcome => {
    const progress = progressOf(pod)
    if (progress._tag === "Running") return Option.some(Effect.succeed(progress.pod))
    if (progress._tag === "Hopeless") return hopeless(progress.reason)
    last = progress.reason
    return Option.none()
  }
  /** One list and the watch after it: the outcome, or none when the watch ended first (list again). */
  const round = Effect.gen(function*(): Effect.fn.Return<Outcome, ExecutorError, Scope.Scope> {
    const list = yield* call(`list the pods of Job ${job}`, () => cluster.core.listNamespacedPod({ namespace: cluster.namespace, labelSelector }))
    for (const pod of list.items) {
      const decided = decide(pod)
      if (Option.isSome(decided)) return decided
    }
    const seen = yield* Queue.unbounded<Seen>()
    const path = `/api/v1/namespaces/${cluster.namespace}/pods`
    yield* Effect.acquireRelease(
      call(`watch the pods of Job ${job}`, () =>
        new Watch(cluster.config).watch(
          path,
          { labelSelector, resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: true },
          (type, object) => Queue.unsafeOffer(seen, { _tag: "Event", type, object }),
          () => Queue.unsafeOffer(seen, { _tag: "End" })
        )),
      (controller) => Effect.sync(() => controller.abort())
    )
    for (;;) {
      const next = yield* Queue.take(seen)
      if (next._tag === "End" || (next.type === "ERROR" && isExpired(next.object))) return Option.none()
      if (next.type === "ERROR") return hopeless(`watching the pods of Job ${job} failed: ${JSON.stringify(next.object)}`)
      if (next.type === "DELETED") return hopeless(`the pod of Job ${job} was deleted before it ran`)
      if (next.type === "BOOKMARK") continue
      const decided = decide(next.object as V1Pod)
      if (Option.isSome(decided)) return decided
    }
  }).pipe(Effect.scoped)
  const rounds = Effect.gen(function*() {
    for (;;) {
      const outcome = yield* round
      if (Option.isSome(outcome)) return yield* outcome.value
      // A watch that ends at once is listed again, not in a tight loop.
      yield* Effect.sleep(Duration.millis(200))
    }
  })
  return rounds.pipe(
    Effect.timeoutFail({
      duration: Duration.millis(timeoutMs),
      onTimeout: () => new ExecutorError({ message: `the pod of Job ${job} did not start within ${Math.round(timeoutMs / 1000)} s (${last})` })
    })
  )
}
