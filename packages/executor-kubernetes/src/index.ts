/**
 * @agent-runs/executor-kubernetes: the `Executor` port of `@agent-runs/core` on Kubernetes.
 * `KubernetesExecutor.layer({ cluster: "default", reposDir, mirrorsDir, scratchDir, settings })`.
 */
export * as KubernetesExecutor from "./KubernetesExecutor.js"
export * as Manifests from "./Manifests.js"
export * as Names from "./Names.js"
export * as KubernetesSettings from "./Settings.js"
