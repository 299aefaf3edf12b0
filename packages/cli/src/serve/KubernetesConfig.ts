/**
 * The Kubernetes executor's settings (docs/reference/configuration.md), from the environment; read
 * with `AGENT_RUNS_EXECUTOR=kubernetes`. The cluster is the standard `KUBECONFIG` (its current
 * context, and its namespace), else the pod's service account when the server runs in a cluster.
 *
 * `AGENT_RUNS_KUBERNETES_NAMESPACE` (the context's; in a pod, the service account's; else
 * `default`), `AGENT_RUNS_KUBERNETES_IMAGE` (`agent-runs-agent:latest`),
 * `AGENT_RUNS_KUBERNETES_IMAGE_PULL_POLICY` (`IfNotPresent`), `AGENT_RUNS_KUBERNETES_INSTANCE` (this
 * host's name: which server's sandboxes are whose; give each replica its own, a pod's name), `AGENT_RUNS_KUBERNETES_USER` (`65534:65534`), `AGENT_RUNS_KUBERNETES_CPU_REQUEST` (500m),
 * `AGENT_RUNS_KUBERNETES_CPU_LIMIT` (2), `AGENT_RUNS_KUBERNETES_MEMORY_REQUEST` (1Gi),
 * `AGENT_RUNS_KUBERNETES_MEMORY_LIMIT` (4Gi), `AGENT_RUNS_KUBERNETES_STORAGE_REQUEST` (1Gi),
 * `AGENT_RUNS_KUBERNETES_STORAGE_LIMIT` (10Gi), `AGENT_RUNS_KUBERNETES_WORK_SIZE` (8Gi),
 * `AGENT_RUNS_KUBERNETES_TMP_SIZE` (1Gi), `AGENT_RUNS_KUBERNETES_RUNTIME_CLASS`,
 * `AGENT_RUNS_KUBERNETES_PRIORITY_CLASS`, `AGENT_RUNS_KUBERNETES_NODE_SELECTOR` (`key=value,…`),
 * `AGENT_RUNS_KUBERNETES_TOLERATIONS` (a JSON array of tolerations),
 * `AGENT_RUNS_KUBERNETES_IMAGE_PULL_SECRETS` (names, comma separated),
 * `AGENT_RUNS_KUBERNETES_POD_START_SECONDS` (600), `AGENT_RUNS_KUBERNETES_SETUP_SECONDS` (600: each
 * setup command, and the copy of the work directory) and `AGENT_RUNS_KUBERNETES_TTL_SECONDS` (300).
 */
import { KubernetesSettings } from "@agent-runs/executor-kubernetes"
import { Config, Option } from "effect"
import { hostname } from "node:os"
import { parseUser } from "./DockerSandboxConfig.js"

type Settings = KubernetesSettings.KubernetesSettings
type Toleration = NonNullable<Settings["tolerations"]>[number]

/** What the server passes to the executor: the settings, the namespace absent when the context's. */
export type KubernetesConfig = Omit<Settings, "namespace"> & { readonly namespace: string | undefined }

const defaults = KubernetesSettings.defaultSettings

/** A Kubernetes quantity: `500m`, `2`, `1.5`, `4Gi`, `512Mi`, `10G`. */
const QUANTITY = /^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/

const quantity = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.validate({ message: "must be a Kubernetes quantity, such as 500m, 2, 512Mi or 4Gi", validation: (text) => QUANTITY.test(text) }),
    Config.withDefault(fallback)
  )

const optionalName = (name: string) => Config.option(Config.nonEmptyString(name)).pipe(Config.map(Option.getOrUndefined))

const seconds = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "must be a whole number of seconds, at least 1", validation: (n) => n >= 1 }),
    Config.withDefault(fallback)
  )

/** `key=value,…` as a record; undefined when malformed. */
export const parseNodeSelector = (text: string): Record<string, string> | undefined => {
  const entries = text.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "").map((entry) => {
    const match = /^([A-Za-z0-9][A-Za-z0-9._/-]*)=([A-Za-z0-9._-]*)$/.exec(entry)
    return match === null ? undefined : [match[1]!, match[2]!] as const
  })
  return entries.every((entry) => entry !== undefined) ? Object.fromEntries(entries) : undefined
}

/** A JSON array of tolerations (objects); undefined otherwise. */
export const parseTolerations = (text: string): ReadonlyArray<Toleration> | undefined => {
  try {
    const parsed: unknown = JSON.parse(text)
    return Array.isArray(parsed) && parsed.every((t) => typeof t === "object" && t !== null && !Array.isArray(t))
      ? parsed as Array<Toleration>
      : undefined
  } catch {
    return undefined
  }
}

const parsed = <A>(name: string, message: string, parse: (text: string) => A | undefined) =>
  Config.option(Config.string(name).pipe(
    Config.validate({ message, validation: (text) => parse(text) !== undefined }),
    Config.map((text) => parse(text)!)
  )).pipe(Config.map(Option.getOrUndefined))

export const KubernetesConfig: Config.Config<KubernetesConfig> = Config.all({
  namespace: optionalName("AGENT_RUNS_KUBERNETES_NAMESPACE"),
  image: Config.nonEmptyString("AGENT_RUNS_KUBERNETES_IMAGE").pipe(Config.withDefault(defaults.image)),
  imagePullPolicy: Config.literal("Always", "IfNotPresent", "Never")("AGENT_RUNS_KUBERNETES_IMAGE_PULL_POLICY").pipe(
    Config.withDefault(defaults.imagePullPolicy)
  ),
  instance: Config.nonEmptyString("AGENT_RUNS_KUBERNETES_INSTANCE").pipe(Config.withDefault(hostname())),
  user: Config.string("AGENT_RUNS_KUBERNETES_USER").pipe(
    Config.validate({ message: "must be uid:gid, two numbers other than 0 (root)", validation: (text) => parseUser(text) !== undefined }),
    Config.map((text) => parseUser(text)!),
    Config.withDefault({ uid: defaults.runAsUser, gid: defaults.runAsGroup })
  ),
  cpuRequest: quantity("AGENT_RUNS_KUBERNETES_CPU_REQUEST", defaults.requests.cpu),
  cpuLimit: quantity("AGENT_RUNS_KUBERNETES_CPU_LIMIT", defaults.limits.cpu),
  memoryRequest: quantity("AGENT_RUNS_KUBERNETES_MEMORY_REQUEST", defaults.requests.memory),
  memoryLimit: quantity("AGENT_RUNS_KUBERNETES_MEMORY_LIMIT", defaults.limits.memory),
  storageRequest: quantity("AGENT_RUNS_KUBERNETES_STORAGE_REQUEST", defaults.requests.ephemeralStorage),
  storageLimit: quantity("AGENT_RUNS_KUBERNETES_STORAGE_LIMIT", defaults.limits.ephemeralStorage),
  workDirSize: quantity("AGENT_RUNS_KUBERNETES_WORK_SIZE", defaults.workDirSize),
  tmpSize: quantity("AGENT_RUNS_KUBERNETES_TMP_SIZE", defaults.tmpSize),
  runtimeClassName: optionalName("AGENT_RUNS_KUBERNETES_RUNTIME_CLASS"),
  priorityClassName: optionalName("AGENT_RUNS_KUBERNETES_PRIORITY_CLASS"),
  nodeSelector: parsed("AGENT_RUNS_KUBERNETES_NODE_SELECTOR", "must be key=value pairs, comma separated", parseNodeSelector),
  tolerations: parsed("AGENT_RUNS_KUBERNETES_TOLERATIONS", "must be a JSON array of tolerations", parseTolerations),
  imagePullSecrets: Config.option(Config.string("AGENT_RUNS_KUBERNETES_IMAGE_PULL_SECRETS")).pipe(
    Config.map((text) => Option.getOrUndefined(Option.map(text, (t) => t.split(",").map((n) => n.trim()).filter((n) => n !== ""))))
  ),
  podStartTimeoutSeconds: seconds("AGENT_RUNS_KUBERNETES_POD_START_SECONDS", defaults.podStartTimeoutSeconds),
  setupTimeoutSeconds: seconds("AGENT_RUNS_KUBERNETES_SETUP_SECONDS", defaults.setupTimeoutSeconds),
  ttlSecondsAfterFinished: seconds("AGENT_RUNS_KUBERNETES_TTL_SECONDS", defaults.ttlSecondsAfterFinished)
}).pipe(
  Config.map((raw): KubernetesConfig => ({
      namespace: raw.namespace,
      image: raw.image,
      imagePullPolicy: raw.imagePullPolicy,
      instance: raw.instance,
      runAsUser: raw.user.uid,
      runAsGroup: raw.user.gid,
      requests: { cpu: raw.cpuRequest, memory: raw.memoryRequest, ephemeralStorage: raw.storageRequest },
      limits: { cpu: raw.cpuLimit, memory: raw.memoryLimit, ephemeralStorage: raw.storageLimit },
      workDirSize: raw.workDirSize,
      tmpSize: raw.tmpSize,
      ttlSecondsAfterFinished: raw.ttlSecondsAfterFinished,
      activeDeadlineSeconds: defaults.activeDeadlineSeconds,
      podStartTimeoutSeconds: raw.podStartTimeoutSeconds,
      setupTimeoutSeconds: raw.setupTimeoutSeconds,
      runtimeClassName: raw.runtimeClassName,
      priorityClassName: raw.priorityClassName,
      nodeSelector: raw.nodeSelector,
      tolerations: raw.tolerations,
      imagePullSecrets: raw.imagePullSecrets
  }))
)
