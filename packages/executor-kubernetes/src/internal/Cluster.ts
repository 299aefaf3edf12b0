/**
 * The API server as the executor uses it: the clients of one kubeconfig and namespace, and calls
 * whose failures are `ExecutorError`s that say what was being done and what the server answered.
 */
import { BatchV1Api, CoreV1Api, KubeConfig } from "@kubernetes/client-node"
import { ExecutorError } from "@agent-runs/core/ports/Executor"
import { Effect, Option } from "effect"
import { existsSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"

export interface Cluster {
  readonly config: KubeConfig
  readonly namespace: string
  readonly batch: BatchV1Api
  readonly core: CoreV1Api
}

/**
 * Where the cluster is: `default` reads `KUBECONFIG` (or `~/.kube/config`), else the pod's service
 * account when the server runs in a cluster; an object is a kubeconfig's content (tests).
 */
export type ClusterSource = "default" | { readonly options: object }

/** The clients of `source`; the namespace is `namespace`, else the context's, else `default`. */
export const connect = (source: ClusterSource, namespace: string | undefined): Effect.Effect<Cluster, ExecutorError> =>
  Effect.try({
    try: () => {
      const config = new KubeConfig()
      if (source === "default") {
        if (!hasDefaultConfig()) throw new Error("no KUBECONFIG, no ~/.kube/config, and not in a cluster")
        config.loadFromDefault()
      } else {
        config.loadFromOptions(source.options)
      }
      const cluster = config.getCurrentCluster()
      if (cluster === null) throw new Error("no cluster in the kubeconfig (set KUBECONFIG, or run the server in a cluster)")
      const context = config.getContextObject(config.getCurrentContext())
      return {
        config,
        namespace: namespace ?? context?.namespace ?? "default",
        batch: config.makeApiClient(BatchV1Api),
        core: config.makeApiClient(CoreV1Api)
      }
    },
    // No cause: the message is the whole story (start-up prints the innermost one).
    catch: (cause) =>
      new ExecutorError({
        message: `cannot load the Kubernetes configuration: ${messageOf(cause)}: set KUBECONFIG to a kubeconfig file, or run the server in a cluster with a service account`
      })
  })

/**
 * Whether `loadFromDefault` has something to load: without any, it would make up a cluster at
 * localhost:8080 that no one configured.
 */
const hasDefaultConfig = (): boolean =>
  (process.env["KUBECONFIG"] ?? "") !== "" ||
  existsSync(join(homedir(), ".kube", "config")) ||
  (process.env["KUBERNETES_SERVICE_HOST"] ?? "") !== ""

const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** The HTTP status of an API answer that was an error. */
export const statusOf = (cause: unknown): number | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "number" ? cause.code : undefined

/** What the API server said of a refusal (its Status's message), else the error's own message. */
const answerOf = (cause: unknown): string => {
  const body = typeof cause === "object" && cause !== null && "body" in cause ? cause.body : undefined
  const parsed = typeof body === "string" ? (() => {
    try {
      return JSON.parse(body) as unknown
    } catch {
      return undefined
    }
  })() : body
  const message = typeof parsed === "object" && parsed !== null && "message" in parsed && typeof parsed.message === "string"
    ? parsed.message
    : undefined
  const status = statusOf(cause)
  return message !== undefined ? `${status} ${message}` : status !== undefined ? `HTTP ${status}` : messageOf(cause)
}

/** An `ExecutorError` for a call that failed while trying to `what`. */
export const clusterError = (what: string, cause: unknown): ExecutorError =>
  new ExecutorError({
    message: statusOf(cause) === undefined
      ? `the Kubernetes API server is unreachable while trying to ${what}: ${messageOf(cause)}`
      : `Kubernetes API server refused to ${what}: ${answerOf(cause)}`,
    cause
  })

/** One call to the API server. */
export const call = <A>(what: string, f: () => Promise<A>): Effect.Effect<A, ExecutorError> =>
  Effect.tryPromise({ try: f, catch: (cause) => clusterError(what, cause) })

/** Like `call`, but an answer of one of `statuses` (404: not there; 409: changed meanwhile) is none. */
export const callUnless = <A>(what: string, statuses: ReadonlyArray<number>, f: () => Promise<A>): Effect.Effect<Option.Option<A>, ExecutorError> =>
  Effect.tryPromise({ try: f, catch: (cause) => cause }).pipe(
    Effect.map(Option.some),
    Effect.catchAll((cause) => statuses.includes(statusOf(cause) ?? 0) ? Effect.succeed(Option.none()) : Effect.fail(clusterError(what, cause)))
  )

/** Like `call`, but an object that is not there (404) is none. */
export const callOrGone = <A>(what: string, f: () => Promise<A>): Effect.Effect<Option.Option<A>, ExecutorError> => callUnless(what, [404], f)
