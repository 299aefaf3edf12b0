/**
 * The names and labels of an execution's objects: every Job, pod and Secret the executor makes is
 * labelled with its run, team and execution (and as ours), so that it is found by label, adopted
 * after a restart and reaped once its run has ended or is unknown. Names are DNS-1123 labels (at
 * most 63 characters of `[a-z0-9-]`), taken from the execution's id, which is unique.
 */

/** The labels of every object of the executor. */
export const Labels = {
  managedBy: "app.kubernetes.io/managed-by",
  runId: "agent-runs/run-id",
  team: "agent-runs/team",
  execution: "agent-runs/execution",
  instance: "agent-runs/instance",
  /** On a Job whose agent was left running for any server's next process (`true`). */
  left: "agent-runs/left"
} as const

/** The annotation of a Job that lists its sandbox's attachments (JSON), for a server that takes it back. */
export const ATTACHMENTS_ANNOTATION = "agent-runs/attachments"

/**
 * The annotation of a Job whose agent a stopping server left running (the agent's tag), with the
 * label `agent-runs/left`: the sandbox is then not a leftover but adoptable, by any server of the
 * namespace (the first to take it).
 */
export const LEFT_AGENT_ANNOTATION = "agent-runs/left-agent"

/** The annotation of a Job that keeps where each clone of its sandbox started, for the process that adopts its agent. */
export const CLONES_ANNOTATION = "agent-runs/clones"

/** The value of `app.kubernetes.io/managed-by` on our objects. */
export const MANAGER = "agent-runs"

/** The selector of every object of the executor. */
export const managedSelector = `${Labels.managedBy}=${MANAGER}`

/** The selector of the Jobs whose agents were left running, by any server. */
export const leftSelector = `${managedSelector},${Labels.left}=true`

/** The selector of the objects the server `instance` made. */
export const instanceSelector = (instance: string): string => `${managedSelector},${Labels.instance}=${labelValue(instance)}`

/** What names an execution's objects. */
export interface ExecutionRef {
  readonly run_id: string
  readonly team_uid: string
  readonly execution_id: string
}

/** A DNS-1123 label: lowercase letters, digits and `-`, starting and ending with a letter or digit, at most 63. */
export const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/

/** A label value: at most 63 of `[A-Za-z0-9._-]`, starting and ending with a letter or digit (or empty). */
export const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/

/** The lowercase letters, digits and dashes of an id (UUIDs and team uids stay readable and unique enough with the run id beside them). */
const slug = (id: string) => id.toLowerCase().replace(/[^a-z0-9-]/g, "").slice(0, 50).replace(/^-+|-+$/g, "")

/** The Job (and its pod's prefix) of an execution. */
export const jobName = (execution: ExecutionRef): string => `agent-run-${slug(execution.execution_id)}`

/** The Secret that carries an execution's credentials. */
export const secretName = (execution: ExecutionRef): string => `${jobName(execution)}-env`

/** A label value from any text: what a label may hold of it (a team uid, an id). */
export const labelValue = (text: string): string => text.replace(/[^A-Za-z0-9._-]/g, "").slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "")

/** The labels of an execution's objects, made by the server `instance`. */
export const labelsOf = (execution: ExecutionRef, instance: string): Record<string, string> => ({
  [Labels.managedBy]: MANAGER,
  [Labels.instance]: labelValue(instance),
  [Labels.runId]: labelValue(execution.run_id),
  [Labels.team]: labelValue(execution.team_uid),
  [Labels.execution]: labelValue(execution.execution_id)
})
