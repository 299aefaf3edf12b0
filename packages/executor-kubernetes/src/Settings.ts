/**
 * How the Kubernetes executor makes its Jobs (the package's README): the namespace, the image of
 * environments without one, the sandbox's user, resources and scheduling. Every pod is confined the
 * same way whatever these say (Manifests.ts): not root, no privilege escalation, no capabilities,
 * the runtime's default seccomp profile, a read-only root file system, no service account token.
 */
import type { V1Toleration } from "@kubernetes/client-node"

/** CPU, memory and ephemeral storage, in Kubernetes quantities (`"500m"`, `"2Gi"`). */
export interface Quantities {
  readonly cpu: string
  readonly memory: string
  readonly ephemeralStorage: string
}

export interface KubernetesSettings {
  /** The namespace of every Job, pod and Secret (the kubeconfig context's, else `default`). */
  readonly namespace: string
  /**
   * Which server made an object (the label `agent-runs/instance`): a server restarting takes back
   * only its own sandboxes, never those of another replica in the same namespace.
   */
  readonly instance: string
  /** The image of environments that name none. */
  readonly image: string
  /**
   * When the kubelet pulls it: `IfNotPresent` by default (Kubernetes' own default for a `:latest`
   * tag is `Always`, which fails for an image loaded into the nodes without a registry).
   */
  readonly imagePullPolicy: "Always" | "IfNotPresent" | "Never"
  /** The uid and gid every process of a pod runs as; neither may be 0. */
  readonly runAsUser: number
  readonly runAsGroup: number
  /** What a pod asks for, and the most it may use. */
  readonly requests: Quantities
  readonly limits: Quantities
  /** The size of the work directory's and `/tmp`'s volumes (emptyDir `sizeLimit`). */
  readonly workDirSize: string
  readonly tmpSize: string
  /** How long a finished Job is kept before Kubernetes deletes it. */
  readonly ttlSecondsAfterFinished: number
  /**
   * The longest a pod may live (`activeDeadlineSeconds`): a backstop for a sandbox the server
   * forgot; runs end sooner by their own runtime limit.
   */
  readonly activeDeadlineSeconds: number
  /** How long a pod may take to start (scheduling, pulling its image) before its run fails. */
  readonly podStartTimeoutSeconds: number
  /** How long each setup command, and the copy of the work directory into the pod, may take. */
  readonly setupTimeoutSeconds: number
  /** A RuntimeClass for stronger isolation (gVisor, Kata); none: the cluster's default. */
  readonly runtimeClassName?: string | undefined
  readonly nodeSelector?: Readonly<Record<string, string>> | undefined
  readonly tolerations?: ReadonlyArray<V1Toleration> | undefined
  readonly priorityClassName?: string | undefined
  /** Secrets of the namespace the kubelet pulls the image with. */
  readonly imagePullSecrets?: ReadonlyArray<string> | undefined
}

export const defaultSettings: KubernetesSettings = {
  namespace: "default",
  instance: "agent-runs",
  image: "agent-runs-agent:latest",
  imagePullPolicy: "IfNotPresent",
  runAsUser: 65534,
  runAsGroup: 65534,
  requests: { cpu: "500m", memory: "1Gi", ephemeralStorage: "1Gi" },
  limits: { cpu: "2", memory: "4Gi", ephemeralStorage: "10Gi" },
  workDirSize: "8Gi",
  tmpSize: "1Gi",
  ttlSecondsAfterFinished: 300,
  activeDeadlineSeconds: 8 * 24 * 3600,
  podStartTimeoutSeconds: 600,
  setupTimeoutSeconds: 600
}
