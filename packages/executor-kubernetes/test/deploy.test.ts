/**
 * The example deployment (deploy/kubernetes), checked offline: no cluster can run here and
 * `kubectl apply --dry-run=client` needs an API server for discovery. Each object is checked
 * field by field against the Kubernetes API's own models (the OpenAPI-generated classes of
 * `@kubernetes/client-node`: every field known, every value of its type), the Role against what
 * the executor calls, the server's settings against the configuration reference, and the
 * kustomization against the files.
 */
import * as k8s from "@kubernetes/client-node"
import { loadAllYaml } from "@kubernetes/client-node"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../../../", import.meta.url))
const dir = join(root, "deploy", "kubernetes")

/** The model class of each kind the deployment has. */
const MODELS: Record<string, string> = {
  Namespace: "V1Namespace",
  ServiceAccount: "V1ServiceAccount",
  Role: "V1Role",
  RoleBinding: "V1RoleBinding",
  Deployment: "V1Deployment",
  Service: "V1Service",
  NetworkPolicy: "V1NetworkPolicy"
}

interface Attribute {
  readonly baseName: string
  readonly type: string
}
const modelOf = (name: string): ReadonlyArray<Attribute> | undefined =>
  (k8s as unknown as Record<string, { attributeTypeMap?: ReadonlyArray<Attribute> } | undefined>)[name]?.attributeTypeMap

/** What is wrong with `value` as a `type` at `path` (none when it fits). */
const problems = (value: unknown, type: string, path: string): Array<string> => {
  const array = /^Array<(.+)>$/.exec(type)
  if (array !== null) {
    return Array.isArray(value) ? value.flatMap((item, i) => problems(item, array[1]!, `${path}[${i}]`)) : [`${path}: not a list`]
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type)
  if (map !== null) {
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? Object.entries(value).flatMap(([key, item]) => problems(item, map[1]!, `${path}.${key}`))
      : [`${path}: not a map`]
  }
  switch (type.toLowerCase()) {
    case "string":
    case "date":
      return typeof value === "string" ? [] : [`${path}: not a string (${JSON.stringify(value)})`]
    case "number":
      return typeof value === "number" ? [] : [`${path}: not a number (${JSON.stringify(value)})`]
    case "boolean":
      return typeof value === "boolean" ? [] : [`${path}: not a boolean`]
    case "intorstring":
      return typeof value === "string" || typeof value === "number" ? [] : [`${path}: not an int or string`]
    case "any":
    case "object":
      return []
  }
  const model = modelOf(type)
  if (model === undefined) return [`${path}: unknown type ${type}`]
  if (typeof value !== "object" || value === null || Array.isArray(value)) return [`${path}: not an object`]
  return Object.entries(value).flatMap(([key, item]) => {
    const attribute = model.find((a) => a.baseName === key)
    return attribute === undefined ? [`${path}.${key}: no such field of ${type}`] : problems(item, attribute.type, `${path}.${key}`)
  })
}

const files = readdirSync(dir).filter((name) => name.endsWith(".yaml") && name !== "kustomization.yaml").sort()
const objects = files.flatMap((file) =>
  loadAllYaml(readFileSync(join(dir, file), "utf8")).map((object: { kind: string; metadata: { name: string } }) => ({ file, object }))
)
const ofKind = (kind: string) => objects.filter(({ object }) => object.kind === kind).map(({ object }) => object as never)

describe("the example deployment on Kubernetes", () => {
  it("every object is what the Kubernetes API takes: known kinds, known fields, values of their types", () => {
    expect(objects.length).toBeGreaterThan(0)
    for (const { file, object } of objects) {
      const model = MODELS[object.kind]
      expect(model, `${file}: kind ${object.kind}`).toBeDefined()
      expect(problems(object, model!, `${file}:${object.kind}/${object.metadata?.name}`)).toEqual([])
      expect(object.metadata?.name, file).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
    }
  })

  it("the check itself catches a misspelt field and a value of the wrong type", () => {
    expect(problems({ spec: { replicas: "two", selektor: {} } }, "V1Deployment", "d")).toEqual([
      "d.spec.replicas: not a number (\"two\")",
      "d.spec.selektor: no such field of V1DeploymentSpec"
    ])
  })

  it("the Role grants exactly what the executor calls, in the sandboxes' namespace only, to the server's service account", () => {
    const [role] = ofKind("Role") as Array<k8s.V1Role>
    const grants = role!.rules!.flatMap((rule) => rule.resources!.flatMap((resource) => rule.verbs.map((verb) => `${resource}:${verb}`)))
    // create/list/patch/delete Jobs (prepare, leftovers and shared, an agent left and taken, release), update jobs/finalizers (the
    // Secret's owner reference), list/watch/get pods (the wait, a lost pod), exec (setup, agents,
    // signals, the upload), create/list/patch/delete Secrets.
    expect(grants.sort()).toEqual([
      "jobs:create", "jobs:list", "jobs:patch", "jobs:delete", "jobs/finalizers:update",
      "pods:get", "pods:list", "pods:watch", "pods/exec:create", "pods/exec:get",
      "secrets:create", "secrets:list", "secrets:patch", "secrets:delete"
    ].sort())
    expect(ofKind("ClusterRole")).toEqual([])
    const [binding] = ofKind("RoleBinding") as Array<k8s.V1RoleBinding>
    const [deployment] = ofKind("Deployment") as Array<k8s.V1Deployment>
    const sandboxes = deployment!.spec!.template.spec!.containers[0]!.env!.find((e) => e.name === "AGENT_RUNS_KUBERNETES_NAMESPACE")?.value
    expect(role!.metadata!.namespace).toBe(sandboxes)
    expect(sandboxes).not.toBe(deployment!.metadata!.namespace)
    expect(binding!.metadata!.namespace).toBe(sandboxes)
    expect(binding!.roleRef).toMatchObject({ kind: "Role", name: role!.metadata!.name })
    expect(binding!.subjects).toEqual([
      { kind: "ServiceAccount", name: deployment!.spec!.template.spec!.serviceAccountName, namespace: deployment!.metadata!.namespace }
    ])
    const [policy] = ofKind("NetworkPolicy") as Array<k8s.V1NetworkPolicy>
    expect(policy!.metadata!.namespace).toBe(sandboxes)
  })

  it("the server runs the Kubernetes executor, not as root, with settings the configuration reference documents", () => {
    const [deployment] = ofKind("Deployment") as Array<k8s.V1Deployment>
    const pod = deployment!.spec!.template.spec!
    const container = pod.containers[0]!
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]))
    expect(env["AGENT_RUNS_EXECUTOR"]).toBe("kubernetes")
    expect(pod.securityContext?.runAsNonRoot).toBe(true)
    expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true })
    const reference = readFileSync(join(root, "docs", "reference", "configuration.md"), "utf8")
    for (const name of Object.keys(env).filter((n) => n.startsWith("AGENT_RUNS_"))) expect(reference, name).toContain(name)
  })

  it("the kustomization lists every file", () => {
    const kustomization = loadAllYaml(readFileSync(join(dir, "kustomization.yaml"), "utf8"))[0] as { resources: Array<string> }
    expect([...kustomization.resources].sort()).toEqual(files)
  })
})
