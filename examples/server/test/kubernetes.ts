/**
 * The cluster of a describe block's Kubernetes executor: the API server double on loopback, its
 * pods run on the Docker engine with the test image on the host's network (an agent reaches the
 * API and the fake model servers on 127.0.0.1) and the scripted agent mounted where the agent image
 * has it; `KUBECONFIG` names it, as it would a real cluster. Started before the server of the block
 * (register it first) and closed after it.
 */
import { ApiServerDouble } from "@agent-runs/executor-kubernetes/testing"
import { AGENT_MOUNT, packageDir } from "@agent-runs/scripted-agent/Location"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"

export const kubernetesCluster = (namespace = "agents") => {
  let double: ApiServerDouble.ApiServerDouble | undefined
  const dir = mkdtempSync(join(tmpdir(), "agent-runs-kubeconfig-"))
  beforeAll(async () => {
    double = await ApiServerDouble.start({ network: "host", binds: [`${packageDir}:${AGENT_MOUNT}:ro`] })
    const file = join(dir, "config")
    writeFileSync(file, JSON.stringify(kubeconfigFile(double.kubeconfig(namespace))), { mode: 0o600 })
    process.env["KUBECONFIG"] = file
  }, 120_000)
  afterAll(async () => {
    delete process.env["KUBECONFIG"]
    await double?.close()
    rmSync(dir, { recursive: true, force: true })
  }, 120_000)
  return () => double!
}

/** A kubeconfig file's content from `loadFromOptions`'s (clusters, users and contexts named). */
const kubeconfigFile = (options: object) => {
  const { clusters, contexts, currentContext, users } = options as {
    clusters: Array<{ name: string; server: string; skipTLSVerify: boolean }>
    users: Array<{ name: string; token: string }>
    contexts: Array<{ name: string; cluster: string; user: string; namespace: string }>
    currentContext: string
  }
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: clusters.map(({ name, server, skipTLSVerify }) => ({ name, cluster: { server, "insecure-skip-tls-verify": skipTLSVerify } })),
    users: users.map(({ name, token }) => ({ name, user: { token } })),
    contexts: contexts.map(({ cluster, name, namespace, user }) => ({ name, context: { cluster, user, namespace } })),
    "current-context": currentContext
  }
}
