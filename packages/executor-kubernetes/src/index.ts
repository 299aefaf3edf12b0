export * as Manifests from "./Manifests.js"
export * as Names from "./Names.js"
export * as KubernetesSettings from "./Settings.js"
