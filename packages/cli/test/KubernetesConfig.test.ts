import { KubernetesSettings } from "@agent-runs/executor-kubernetes"
import { ConfigProvider, Effect, Either } from "effect"
import { hostname } from "node:os"
import { describe, expect, it } from "vitest"
import { KubernetesConfig } from "../src/serve/KubernetesConfig.js"

const load = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(Effect.withConfigProvider(KubernetesConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))))

describe("the Kubernetes executor's settings", () => {
  it("default to the executor's, in the context's namespace, this host's name as the instance", () => {
    const { namespace: _namespace, ...defaults } = KubernetesSettings.defaultSettings
    expect(Either.getOrThrow(load({}))).toEqual({ ...defaults, namespace: undefined, instance: hostname() })
  })

  it("read every setting", () => {
    const set = Either.getOrThrow(load({
      AGENT_RUNS_KUBERNETES_NAMESPACE: "agents",
      AGENT_RUNS_KUBERNETES_IMAGE: "registry.example.com/agent:1",
      AGENT_RUNS_KUBERNETES_INSTANCE: "agent-runs-0",
      AGENT_RUNS_KUBERNETES_USER: "1000:1000",
      AGENT_RUNS_KUBERNETES_CPU_REQUEST: "250m",
      AGENT_RUNS_KUBERNETES_MEMORY_LIMIT: "8Gi",
      AGENT_RUNS_KUBERNETES_RUNTIME_CLASS: "gvisor",
      AGENT_RUNS_KUBERNETES_NODE_SELECTOR: "pool=agents, kubernetes.io/arch=amd64",
      AGENT_RUNS_KUBERNETES_TOLERATIONS: `[{"key":"agents","operator":"Exists","effect":"NoSchedule"}]`,
      AGENT_RUNS_KUBERNETES_IMAGE_PULL_SECRETS: "regcred, other",
      AGENT_RUNS_KUBERNETES_POD_START_SECONDS: "120"
    }))
    expect(set).toMatchObject({
      namespace: "agents",
      image: "registry.example.com/agent:1",
      instance: "agent-runs-0",
      runAsUser: 1000,
      runAsGroup: 1000,
      requests: { cpu: "250m" },
      limits: { memory: "8Gi" },
      runtimeClassName: "gvisor",
      nodeSelector: { pool: "agents", "kubernetes.io/arch": "amd64" },
      tolerations: [{ key: "agents", operator: "Exists", effect: "NoSchedule" }],
      imagePullSecrets: ["regcred", "other"],
      podStartTimeoutSeconds: 120
    })
  })

  it("refuse what cannot work, naming the variable", () => {
    const problems: Array<[Record<string, string>, string]> = [
      [{ AGENT_RUNS_KUBERNETES_USER: "0:0" }, "AGENT_RUNS_KUBERNETES_USER"],
      [{ AGENT_RUNS_KUBERNETES_USER: "1000:0" }, "AGENT_RUNS_KUBERNETES_USER"],
      [{ AGENT_RUNS_KUBERNETES_MEMORY_LIMIT: "lots" }, "AGENT_RUNS_KUBERNETES_MEMORY_LIMIT"],
      [{ AGENT_RUNS_KUBERNETES_NODE_SELECTOR: "pool" }, "AGENT_RUNS_KUBERNETES_NODE_SELECTOR"],
      [{ AGENT_RUNS_KUBERNETES_TOLERATIONS: "{}" }, "AGENT_RUNS_KUBERNETES_TOLERATIONS"],
      [{ AGENT_RUNS_KUBERNETES_POD_START_SECONDS: "0" }, "AGENT_RUNS_KUBERNETES_POD_START_SECONDS"]
    ]
    for (const [env, name] of problems) {
      const loaded = load(env)
      expect(Either.isLeft(loaded), name).toBe(true)
      if (Either.isLeft(loaded)) expect(String(loaded.left)).toContain(name)
    }
  })
})
