/** The Job and Secret of an execution: confined, limited and labelled whatever the settings and inputs. */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { jobOf, KEEPER_COMMAND, secretOf, WORK_DIR } from "../src/Manifests.js"
import { ATTACHMENTS_ANNOTATION, DNS_LABEL, jobName, LABEL_VALUE, Labels, MANAGER, secretName } from "../src/Names.js"
import { defaultSettings, type KubernetesSettings } from "../src/Settings.js"

const execution = {
  run_id: "01a22d03-534c-745e-b296-aa48b631c4d3",
  team_uid: "GsEpaweGJIodcylKbCkeiY",
  execution_id: "01a22d03-7cec-7591-8551-20998a671dde"
}

const input = {
  execution,
  image: null,
  env: { MODEL_URL: "http://127.0.0.1:9/v1" },
  secretVariables: ["AGENT_RUNS_RUN_TOKEN", "ANTHROPIC_API_KEY"],
  attachments: [{ name: "notes.md", media_type: "text/markdown", path: "/work/attachments/notes.md" }]
}

describe("an execution's Job", () => {
  it("one pod, never restarted, no retries, a deadline, removed after it ends; named and labelled from the execution", () => {
    const job = jobOf({ ...defaultSettings, activeDeadlineSeconds: 3_600, instance: "replica-1" }, input)
    expect(job.metadata?.name).toBe("agent-run-01a22d03-7cec-7591-8551-20998a671dde")
    expect(job.metadata?.namespace).toBe("default")
    expect(job.metadata?.labels).toEqual({
      [Labels.managedBy]: MANAGER,
      [Labels.instance]: "replica-1",
      [Labels.runId]: execution.run_id,
      [Labels.team]: execution.team_uid,
      [Labels.execution]: execution.execution_id
    })
    expect(job.spec).toMatchObject({ backoffLimit: 0, activeDeadlineSeconds: 3_600, ttlSecondsAfterFinished: 300 })
    expect(JSON.parse(job.metadata?.annotations?.[ATTACHMENTS_ANNOTATION] ?? "")).toEqual(input.attachments)
    const pod = job.spec!.template.spec!
    expect(job.spec!.template.metadata?.labels).toEqual(job.metadata?.labels)
    expect(pod).toMatchObject({ restartPolicy: "Never", automountServiceAccountToken: false, enableServiceLinks: false })
    const container = pod.containers[0]!
    expect(container.image).toBe(defaultSettings.image)
    expect(container.imagePullPolicy).toBe("IfNotPresent")
    expect(container.command).toEqual(KEEPER_COMMAND)
    expect(container.workingDir).toBe(WORK_DIR)
  })

  it("credentials only as references to the execution's Secret; plain variables as values", () => {
    const env = jobOf(defaultSettings, input).spec!.template.spec!.containers[0]!.env!
    expect(env).toContainEqual({ name: "MODEL_URL", value: "http://127.0.0.1:9/v1" })
    // As given: Kubernetes would expand $(NAME) in a value; $$ is its escape for $.
    const dollars = jobOf(defaultSettings, { ...input, env: { PATH_LIKE: "$(HOME)/bin:$$x" } }).spec!.template.spec!.containers[0]!.env!
    expect(dollars).toContainEqual({ name: "PATH_LIKE", value: "$$(HOME)/bin:$$$$x" })
    expect(() => jobOf({ ...defaultSettings, runAsGroup: 0 }, input)).toThrow("may not be 0")
    for (const name of input.secretVariables) {
      expect(env).toContainEqual({ name, valueFrom: { secretKeyRef: { name: secretName(execution), key: name } } })
    }
    // A plain variable cannot take a credential's name, nor HOME.
    const clash = jobOf(defaultSettings, { ...input, env: { ANTHROPIC_API_KEY: "plain", HOME: "/root" } }).spec!.template.spec!.containers[0]!.env!
    expect(clash.filter((v) => v.name === "ANTHROPIC_API_KEY")).toEqual([{ name: "ANTHROPIC_API_KEY", valueFrom: { secretKeyRef: { name: secretName(execution), key: "ANTHROPIC_API_KEY" } } }])
    expect(clash.filter((v) => v.name === "HOME")).toEqual([{ name: "HOME", value: WORK_DIR }])
  })

  it("the environment's image, and the scheduling settings when given", () => {
    const settings: KubernetesSettings = {
      ...defaultSettings,
      namespace: "agents",
      runtimeClassName: "gvisor",
      nodeSelector: { pool: "agents" },
      tolerations: [{ key: "agents", operator: "Exists", effect: "NoSchedule" }],
      priorityClassName: "low",
      imagePullSecrets: ["registry"]
    }
    const job = jobOf(settings, { ...input, image: "registry.example/agent:1" })
    const pod = job.spec!.template.spec!
    expect(job.metadata?.namespace).toBe("agents")
    expect(pod).toMatchObject({
      runtimeClassName: "gvisor",
      nodeSelector: { pool: "agents" },
      tolerations: [{ key: "agents", operator: "Exists", effect: "NoSchedule" }],
      priorityClassName: "low",
      imagePullSecrets: [{ name: "registry" }]
    })
    expect(pod.containers[0]!.image).toBe("registry.example/agent:1")
  })
})

describe("an execution's Secret", () => {
  it("its values as string data, labelled; owned by the Job once given", () => {
    const secret = secretOf(defaultSettings, execution, { AGENT_RUNS_RUN_TOKEN: "rt_x" })
    expect(secret).toMatchObject({ kind: "Secret", type: "Opaque", stringData: { AGENT_RUNS_RUN_TOKEN: "rt_x" } })
    expect(secret.metadata).toMatchObject({ name: secretName(execution), labels: { [Labels.execution]: execution.execution_id } })
    expect(secret.metadata?.ownerReferences).toBeUndefined()
    const owned = secretOf(defaultSettings, execution, {}, { name: jobName(execution), uid: "u-1" })
    expect(owned.metadata?.ownerReferences).toEqual([{ apiVersion: "batch/v1", kind: "Job", name: jobName(execution), uid: "u-1", blockOwnerDeletion: true }])
  })
})

describe("every pod, whatever the settings and the execution (property)", () => {
  const id = fc.uuid().map((u) => u.toLowerCase())
  const team = fc.stringMatching(/^[A-Za-z0-9]{22}$/)
  const quantity = fc.constantFrom("1", "500m", "2Gi", "10G")
  const settings = fc.record({
    namespace: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}[a-z0-9]$/),
    runAsUser: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    runAsGroup: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    cpu: quantity,
    memory: quantity,
    runtimeClassName: fc.option(fc.constantFrom("gvisor", "kata"), { nil: undefined })
  })
  const variables = fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,15}$/), fc.string({ maxLength: 20 }), { maxKeys: 6 })

  it("runs as a non-root user without privileges, limited, and labelled with its run, team and execution", () => {
    fc.assert(
      fc.property(id, id, team, settings, variables, fc.array(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,15}$/), { maxLength: 4 }), (run, exec, teamUid, s, env, secrets) => {
        const chosen: KubernetesSettings = {
          ...defaultSettings,
          namespace: s.namespace,
          runAsUser: s.runAsUser,
          runAsGroup: s.runAsGroup,
          requests: { ...defaultSettings.requests, cpu: s.cpu, memory: s.memory },
          limits: { ...defaultSettings.limits, cpu: s.cpu, memory: s.memory },
          runtimeClassName: s.runtimeClassName
        }
        const ref = { run_id: run, team_uid: teamUid, execution_id: exec }
        const job = jobOf(chosen, { execution: ref, image: null, env, secretVariables: secrets, attachments: [] })
        const pod = job.spec!.template.spec!
        expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } })
        expect(pod.securityContext!.runAsUser).toBeGreaterThan(0)
        expect(pod.automountServiceAccountToken).toBe(false)
        expect(pod.containers).toHaveLength(1)
        for (const container of pod.containers) {
          expect(container.securityContext).toMatchObject({
            runAsNonRoot: true,
            allowPrivilegeEscalation: false,
            privileged: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ["ALL"] }
          })
          for (const kind of ["cpu", "memory", "ephemeral-storage"]) {
            expect(container.resources?.limits?.[kind]).toBeDefined()
            expect(container.resources?.requests?.[kind]).toBeDefined()
          }
          // A secret's name is never a plain value.
          for (const variable of container.env ?? []) {
            if (secrets.includes(variable.name)) expect(variable.value).toBeUndefined()
          }
        }
        for (const name of [job.metadata!.name!, secretName(ref)]) expect(name).toMatch(DNS_LABEL)
        const labels = job.spec!.template.metadata!.labels!
        expect(labels).toMatchObject({ [Labels.runId]: run, [Labels.team]: teamUid, [Labels.execution]: exec, [Labels.managedBy]: MANAGER })
        for (const value of Object.values(labels)) expect(value).toMatch(LABEL_VALUE)
      }),
      { numRuns: 300 }
    )
  })
})
