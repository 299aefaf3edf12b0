/**
 * The objects of one execution, as pure functions of the settings and the execution (tested in
 * test/Manifests.test.ts, by property too): a `batch/v1` Job whose one pod is the sandbox, and the
 * Secret that carries the execution's credentials.
 *
 * Decisions (the package's README):
 * - The pod runs a keeper process that waits to be stopped; the setup commands and the agent run
 *   in it as further processes (the executor execs them), in the work directory `/work`.
 * - Every pod: not root (the settings' uid and gid, never 0), `allowPrivilegeEscalation: false`,
 *   every capability dropped, the runtime's default seccomp profile, a read-only root file system
 *   with the work directory and `/tmp` as size-limited `emptyDir` volumes, no service account
 *   token, no service links in its environment, requests and limits of CPU, memory and ephemeral
 *   storage; `restartPolicy: Never`, `backoffLimit: 0` (a lost pod is the run's failure, never a
 *   second run), `activeDeadlineSeconds`, `ttlSecondsAfterFinished`.
 * - Credentials are never plain values of the pod's spec: they are keys of the execution's Secret,
 *   which the pod reads as `secretKeyRef` variables; the Secret is owned by the Job (and deleted
 *   with it) once the Job exists.
 * - Plain values reach the processes as given: `$` is written `$$`, so Kubernetes does not expand
 *   `$(NAME)` in them as it would.
 * - A uid or gid of 0 is refused (a defect: settings are checked when they are read).
 */
import type { V1Job, V1Secret } from "@kubernetes/client-node"
import { ATTACHMENTS_ANNOTATION, type ExecutionRef, jobName, labelsOf, secretName } from "./Names.js"
import type { KubernetesSettings } from "./Settings.js"

/** The sandbox's work directory in the pod. */
export const WORK_DIR = "/work"

/** The keeper: waits until it is stopped (SIGTERM when the Job is deleted). */
export const KEEPER_COMMAND: ReadonlyArray<string> = ["/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]

/** The container of the pod. */
export const CONTAINER = "sandbox"

/** What one execution's Job needs beyond the settings. */
export interface JobInput {
  readonly execution: ExecutionRef
  /** The environment's image; null: the settings'. */
  readonly image: string | null
  /** Plain variables of the sandbox (the environment's `env`). */
  readonly env: Readonly<Record<string, string>>
  /** The variables read from the execution's Secret (its keys). */
  readonly secretVariables: ReadonlyArray<string>
  /** What the sandbox's attachments are (kept as an annotation of the Job). */
  readonly attachments: ReadonlyArray<{ readonly name: string; readonly media_type: string; readonly path: string }>
}

/** The execution's Job. */
export const jobOf = (settings: KubernetesSettings, input: JobInput): V1Job => {
  if (settings.runAsUser === 0 || settings.runAsGroup === 0) throw new Error("a sandbox's uid and gid may not be 0")
  const labels = labelsOf(input.execution, settings.instance)
  const secrets = [...new Set(input.secretVariables)].filter((name) => name !== "HOME")
  const secret = secretName(input.execution)
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: jobName(input.execution),
      namespace: settings.namespace,
      labels,
      annotations: { [ATTACHMENTS_ANNOTATION]: JSON.stringify(input.attachments) }
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: Math.max(1, Math.ceil(settings.activeDeadlineSeconds)),
      ttlSecondsAfterFinished: settings.ttlSecondsAfterFinished,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: "Never",
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: settings.runAsUser,
            runAsGroup: settings.runAsGroup,
            fsGroup: settings.runAsGroup,
            seccompProfile: { type: "RuntimeDefault" }
          },
          ...(settings.runtimeClassName === undefined ? {} : { runtimeClassName: settings.runtimeClassName }),
          ...(settings.nodeSelector === undefined ? {} : { nodeSelector: { ...settings.nodeSelector } }),
          ...(settings.tolerations === undefined ? {} : { tolerations: [...settings.tolerations] }),
          ...(settings.priorityClassName === undefined ? {} : { priorityClassName: settings.priorityClassName }),
          ...(settings.imagePullSecrets === undefined ? {} : { imagePullSecrets: settings.imagePullSecrets.map((name) => ({ name })) }),
          volumes: [
            { name: "work", emptyDir: { sizeLimit: settings.workDirSize } },
            { name: "tmp", emptyDir: { sizeLimit: settings.tmpSize } }
          ],
          containers: [{
            name: CONTAINER,
            image: input.image ?? settings.image,
            imagePullPolicy: settings.imagePullPolicy,
            command: [...KEEPER_COMMAND],
            workingDir: WORK_DIR,
            env: [
              { name: "HOME", value: WORK_DIR },
              // A plain variable never takes HOME's or a credential's name.
              ...Object.entries(input.env)
                .filter(([name]) => name !== "HOME" && !secrets.includes(name))
                .map(([name, value]) => ({ name, value: value.replaceAll("$", "$$$$") })),
              ...secrets.map((name) => ({ name, valueFrom: { secretKeyRef: { name: secret, key: name } } }))
            ],
            securityContext: {
              runAsNonRoot: true,
              runAsUser: settings.runAsUser,
              runAsGroup: settings.runAsGroup,
              allowPrivilegeEscalation: false,
              privileged: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ["ALL"] }
            },
            resources: {
              requests: { cpu: settings.requests.cpu, memory: settings.requests.memory, "ephemeral-storage": settings.requests.ephemeralStorage },
              limits: { cpu: settings.limits.cpu, memory: settings.limits.memory, "ephemeral-storage": settings.limits.ephemeralStorage }
            },
            volumeMounts: [
              { name: "work", mountPath: WORK_DIR },
              { name: "tmp", mountPath: "/tmp" }
            ]
          }]
        }
      }
    }
  }
}

/** The execution's Secret of `data` (variable names to values); owned by its Job once `owner` is given. */
export const secretOf = (
  settings: KubernetesSettings,
  execution: ExecutionRef,
  data: Readonly<Record<string, string>>,
  owner?: { readonly name: string; readonly uid: string }
): V1Secret => ({
  apiVersion: "v1",
  kind: "Secret",
  type: "Opaque",
  metadata: {
    name: secretName(execution),
    namespace: settings.namespace,
    labels: labelsOf(execution, settings.instance),
    ...(owner === undefined
      ? {}
      : { ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: owner.name, uid: owner.uid, blockOwnerDeletion: true }] })
  },
  stringData: { ...data }
})
