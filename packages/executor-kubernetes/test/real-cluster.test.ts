/**
 * Against a real cluster, only when `KUBECONFIG` is set (skipped otherwise, and then reported as
 * skipped, never as passed): a sandbox in the kubeconfig context's namespace (or
 * `AGENT_RUNS_TEST_KUBERNETES_NAMESPACE`) of `AGENT_RUNS_TEST_KUBERNETES_IMAGE` (`busybox:1.36`,
 * which has `sh` and `tar`), with an attachment, an environment variable and an agent's own; the
 * agent reads them and echoes its stdin; release removes the Job and its Secret. The account needs
 * the Role of deploy/kubernetes/rbac.yaml in that namespace.
 */
import { Executor } from "@agent-runs/core/ports/Executor"
import { sandboxSpec } from "@agent-runs/core/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Stream } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { KubernetesExecutor } from "../src/index.js"

const configured = (process.env["KUBECONFIG"] ?? "") !== ""

describe.skipIf(!configured)("the Kubernetes executor on a real cluster (KUBECONFIG)", () => {
  it.scopedLive("runs an agent in a pod with its files and variables, and removes everything on release", () =>
    Effect.gen(function*() {
      const base = mkdtempSync(join(tmpdir(), "agent-runs-real-cluster-"))
      const executor = Context.get(
        yield* Layer.build(KubernetesExecutor.layer({
          cluster: "default",
          settings: {
            namespace: process.env["AGENT_RUNS_TEST_KUBERNETES_NAMESPACE"],
            image: process.env["AGENT_RUNS_TEST_KUBERNETES_IMAGE"] ?? "busybox:1.36",
            instance: `real-cluster-test-${process.pid}`,
            requests: { cpu: "50m", memory: "64Mi", ephemeralStorage: "64Mi" },
            limits: { cpu: "500m", memory: "256Mi", ephemeralStorage: "1Gi" },
            podStartTimeoutSeconds: 300
          },
          reposDir: join(base, "repos"),
          mirrorsDir: join(base, "mirrors"),
          scratchDir: join(base, "scratch")
        })),
        Executor
      )
      const sandbox = yield* Effect.acquireRelease(
        executor.prepare(sandboxSpec({
          env: { FROM_ENVIRONMENT: "env value" },
          attachments: [{ name: "note.txt", media_type: "text/plain", bytes: new TextEncoder().encode("attached\n") }],
          setup_commands: ["echo prepared > state.txt"]
        })),
        (s) => s.release
      )
      const agent = yield* sandbox.start(
        ["/bin/sh", "-c", `cat attachments/note.txt state.txt; echo "$FROM_ENVIRONMENT/$FROM_AGENT"; head -n 1`],
        { FROM_AGENT: "agent value" }
      )
      yield* agent.send({ hello: "cluster" })
      const text = yield* Stream.runFold(agent.stdout, "", (all, chunk) => all + new TextDecoder().decode(chunk))
      expect(yield* agent.exitCode).toBe(0)
      expect(text).toBe(`attached\nprepared\nenv value/agent value\n{"hello":"cluster"}\n`)
      yield* sandbox.release
      expect((yield* executor.leftovers).map((s) => s.id)).not.toContain(sandbox.id)
    }), { timeout: 600_000 })
})
