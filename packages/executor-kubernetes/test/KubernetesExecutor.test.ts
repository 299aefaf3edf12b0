/**
 * What the Kubernetes executor does beyond the conformance suite, on the API server double:
 * credentials never in a Job, a pod or an exec's argv; a pod lost under a running agent; an image
 * that cannot be pulled; the wait for a pod through watches that end and versions that expire;
 * leftovers of this server only.
 */
import { Executor, type SandboxSpec } from "@agent-runs/core/ports/Executor"
import { sandboxSpec } from "@agent-runs/core/testing"
import { testImage } from "@agent-runs/executor-docker/testing"
import type { V1Pod } from "@kubernetes/client-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Scope, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { connect } from "../src/internal/Cluster.js"
import { waitForPod } from "../src/internal/PodWait.js"
import { KubernetesExecutor } from "../src/index.js"
import { jobOf, secretOf } from "../src/Manifests.js"
import { jobName } from "../src/Names.js"
import { defaultSettings } from "../src/Settings.js"
import { start } from "../testing/ApiServerDouble.js"

const base = mkdtempSync(join(tmpdir(), "agent-runs-kubernetes-executor-"))
const double = await start()
afterAll(async () => {
  await double.close()
  rmSync(base, { recursive: true, force: true })
})

const executorOf = (instance: string, setupTimeoutSeconds?: number) =>
  Effect.map(
    Layer.build(KubernetesExecutor.layer({
      cluster: { options: double.kubeconfig("agents") },
      settings: { image: testImage, instance, setupTimeoutSeconds },
      reposDir: join(base, "repos"),
      mirrorsDir: join(base, "mirrors"),
      scratchDir: join(base, "scratch")
    })),
    (context) => Context.get(context, Executor)
  )

const prepared = (spec: SandboxSpec, instance = "tests") =>
  Effect.flatMap(executorOf(instance), (executor) => Effect.acquireRelease(executor.prepare(spec), (sandbox) => sandbox.release))

const decoder = new TextDecoder()
const collect = (stdout: Stream.Stream<Uint8Array, unknown>) =>
  Stream.runFold(stdout, "", (text, chunk) => text + decoder.decode(chunk))

/** Reads the agent's stdout (from where its stream starts) until `needle` is in it. */
const waitFor = (agent: { readonly stdout: Stream.Stream<Uint8Array, unknown> }, needle: string) =>
  agent.stdout.pipe(
    Stream.decodeText(),
    Stream.scan("", (seen, piece) => seen + piece),
    Stream.takeUntil((seen) => seen.includes(needle)),
    Stream.runDrain
  )

const podsOf = (sandboxId: string) =>
  double.list("pods", "agents").filter((p) => (p as V1Pod).metadata?.labels?.["job-name"] === sandboxId) as Array<V1Pod>

describe("the Kubernetes executor", () => {
  it.scoped("credentials: the sandbox's in its Secret only, the agent's over stdin only, and their file gone once it runs", () =>
    Effect.gen(function*() {
      const sandbox = yield* prepared(sandboxSpec({ env: { ENV_SECRET: "env-s3cret-value" } }))
      const agent = yield* sandbox.start(
        ["node", "-e", `const fs = require("fs"); console.log(JSON.stringify({ env: process.env.ENV_SECRET, key: process.env.AGENT_KEY,
          left: fs.readdirSync("/work/.agent-runs").filter((f) => f.endsWith(".env")) }))`],
        { AGENT_KEY: "agent-k3y-value'$(id)" }
      )
      const [text, exitCode] = yield* Effect.all([collect(agent.stdout), agent.exitCode], { concurrency: 2 })
      expect(exitCode).toBe(0)
      expect(JSON.parse(text)).toEqual({ env: "env-s3cret-value", key: "agent-k3y-value'$(id)", left: [] })
      const objects = JSON.stringify([...double.list("jobs", "agents"), ...double.list("pods", "agents")])
      const argv = JSON.stringify(double.execs())
      for (const value of ["env-s3cret-value", "agent-k3y-value"]) {
        expect(objects).not.toContain(value)
        expect(argv).not.toContain(value)
      }
      const [secret] = double.list("secrets", "agents").filter((s) => s.metadata?.name === `${sandbox.id}-env`)
      expect(secret?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "Job", name: sandbox.id })
    }))

  it.scoped("a pod lost under a running agent: its exit is an error that says the pod is gone", () =>
    Effect.gen(function*() {
      const sandbox = yield* prepared(sandboxSpec())
      const agent = yield* sandbox.start(["node", "-e", `console.log("ready"); setInterval(() => {}, 1000)`], {})
      const [pod] = podsOf(sandbox.id)
      const cluster = yield* connect({ options: double.kubeconfig("agents") }, undefined)
      yield* Effect.promise(() => cluster.core.deleteNamespacedPod({ name: pod!.metadata!.name!, namespace: "agents" }))
      const error = yield* Effect.flip(agent.exitCode)
      expect(error.message).toMatch(/pod .* (is gone|was lost)/)
    }))

  it.scoped("an image that cannot be pulled: prepare fails at once naming it, and leaves nothing behind", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf("tests")
      const spec = sandboxSpec({ docker_image: "no-such-image:404", env: { A: "b" } })
      const error = yield* Effect.flip(executor.prepare(spec))
      expect(error._tag).toBe("ExecutorError")
      expect(error.message).toContain("ErrImagePull")
      const names = [...double.list("jobs", "agents"), ...double.list("secrets", "agents")].map((o) => o.metadata?.name ?? "")
      expect(names.filter((name) => name.includes(spec.execution_id))).toEqual([])
    }))

  it.scopedLive("the wait for a pod goes on through watches that end and versions that expire (a fresh list each time)", () =>
    Effect.gen(function*() {
      const cluster = yield* connect({ options: double.kubeconfig("agents") }, undefined)
      const settings = { ...defaultSettings, namespace: "agents", image: testImage }
      const execution = { run_id: "run-watch", team_uid: "team", execution_id: `watch-${Date.now()}` }
      // Its pod waits for a Secret that is not there yet.
      yield* Effect.promise(() =>
        cluster.batch.createNamespacedJob({
          namespace: "agents",
          body: jobOf(settings, { execution, image: null, env: {}, secretVariables: ["LATE"], attachments: [] })
        })
      )
      const waiting = yield* Effect.fork(waitForPod(cluster, jobName(execution), 30_000))
      yield* Effect.sleep("500 millis")
      double.compact()
      yield* Effect.sleep("300 millis")
      double.compact()
      yield* Effect.promise(() => cluster.core.createNamespacedSecret({ namespace: "agents", body: secretOf(settings, execution, { LATE: "1" }) }))
      expect(yield* waiting).toMatch(/^agent-run-watch-/)
      yield* Effect.promise(() => cluster.batch.deleteNamespacedJob({ name: jobName(execution), namespace: "agents", propagationPolicy: "Background" }))
    }), { timeout: 60_000 })

  it.scoped("leftovers are this server's sandboxes only: another replica in the namespace never takes them", () =>
    Effect.gen(function*() {
      const sandbox = yield* prepared(sandboxSpec(), "replica-a")
      const other = yield* executorOf("replica-b")
      expect((yield* other.leftovers).map((s) => s.id)).not.toContain(sandbox.id)
      const same = yield* executorOf("replica-a")
      expect((yield* same.leftovers).map((s) => s.id)).toContain(sandbox.id)
    }))

  it.scoped("shared: every server's Jobs and the Secrets left without one, for the reaper; releasing them removes them", () =>
    Effect.gen(function*() {
      const mine = yield* prepared(sandboxSpec(), "replica-c")
      const theirs = yield* prepared(sandboxSpec(), "replica-d")
      const cluster = yield* connect({ options: double.kubeconfig("agents") }, undefined)
      const settings = { ...defaultSettings, namespace: "agents", instance: "replica-d" }
      const stray = { run_id: "run-stray", team_uid: "team", execution_id: `stray-${Date.now()}` }
      yield* Effect.promise(() => cluster.core.createNamespacedSecret({ namespace: "agents", body: secretOf(settings, stray, { K: "v" }) }))
      const executor = yield* executorOf("replica-c")
      const shared = yield* executor.shared!
      const ids = shared.map((s) => s.id)
      expect(ids).toEqual(expect.arrayContaining([mine.id, theirs.id, `${jobName(stray)}-env`]))
      // The Secrets of Jobs are not strays.
      expect(ids).not.toContain(`${mine.id}-env`)
      const found = shared.find((s) => s.id === `${jobName(stray)}-env`)!
      expect(found).toMatchObject({ run_id: "run-stray", execution_id: stray.execution_id })
      yield* found.release
      expect(double.list("secrets", "agents").map((o) => o.metadata?.name)).not.toContain(`${jobName(stray)}-env`)
    }))

  it.scoped("an agent that traps SIGTERM and rewrites its pid file is still killed (SIGKILL trusts nothing the agent wrote)", () =>
    Effect.gen(function*() {
      const sandbox = yield* prepared(sandboxSpec())
      const agent = yield* sandbox.start(["node", "-e", `
        process.on("SIGTERM", () => {}); process.on("SIGINT", () => {})
        const fs = require("fs")
        setTimeout(() => {
          for (const f of fs.readdirSync("/work/.agent-runs")) if (f.endsWith(".pid")) fs.writeFileSync("/work/.agent-runs/" + f, "99999")
          console.log("ready")
        }, 100)
        setInterval(() => {}, 1000)`], {})
      yield* Stream.runForEach(Stream.take(agent.stdout, 1), () => Effect.void)
      yield* agent.terminate(300)
      expect(yield* agent.exitCode).toBe(128 + 9)
    }))

  it.scopedLive("a lasting agent outlives its process: detached, taken by one server of those looking, adopted from a byte offset with its stdin open, twice", () =>
    Effect.gen(function*() {
      const first = yield* executorOf("replica-l")
      const sandbox = yield* first.prepare(sandboxSpec())
      const script = "echo \"ready $K\"; read a; echo \"got $a\"; sleep 1; echo later; read b; echo \"got $b\"; read c; echo \"got $c\"; exit 7"

      // The first process: until `got 1`, then it stops, leaving the agent.
      const firstLife = yield* Scope.make()
      const agent = yield* sandbox.startLasting!(["sh", "-c", script], { K: "v'$(id)" }).pipe(Effect.provideService(Scope.Scope, firstLife))
      yield* waitFor(agent, "ready")
      yield* agent.send({ n: 1 })
      yield* waitFor(agent, "got {\"n\":1}")
      const offset = "ready v'$(id)\ngot {\"n\":1}\n".length
      yield* agent.detach
      yield* Scope.close(firstLife, Exit.void)
      const [job] = double.list("jobs", "agents").filter((j) => j.metadata?.name === sandbox.id)
      expect(job?.metadata?.annotations?.["agent-runs/left-agent"]).toMatch(/^agent-/)
      expect(JSON.stringify(double.execs())).not.toContain("v'$(id)")

      // Not a leftover of its server any more, but adoptable by any server of the namespace: of two
      // that found it and take it at once, one alone gets it (and it is then that one's).
      expect((yield* (yield* executorOf("replica-l")).leftovers).map((s) => s.id)).not.toContain(sandbox.id)
      const [m, o] = [yield* executorOf("replica-m"), yield* executorOf("replica-o")]
      const listed = yield* Effect.all([m.adoptable!, o.adoptable!], { concurrency: 2 })
      const mine = listed.map((found) => found.filter((a) => a.sandbox.id === sandbox.id))
      expect(mine.map((found) => found.length)).toEqual([1, 1])
      const taken = yield* Effect.all(mine.map((found) => found[0]!.take!), { concurrency: 2 })
      expect([...taken].sort()).toEqual([false, true])
      const second = taken[0] ? m : o
      const found = mine[taken[0] ? 0 : 1]!
      expect(found.map((a) => [a.sandbox.run_id, a.sandbox.execution_id])).toEqual([[sandbox.run_id, sandbox.execution_id]])
      expect((yield* second.adoptable!).filter((a) => a.sandbox.id === sandbox.id)).toEqual([])
      expect((yield* second.leftovers).map((s) => s.id)).toContain(sandbox.id)
      const secondLife = yield* Scope.make()
      const adopted = yield* found[0]!.adopt(offset).pipe(Effect.provideService(Scope.Scope, secondLife))
      expect((yield* second.adoptable!).filter((a) => a.sandbox.id === sandbox.id)).toEqual([])
      yield* waitFor(adopted, "later")
      yield* adopted.send({ n: 2 })
      yield* waitFor(adopted, "got {\"n\":2}")
      yield* adopted.detach
      yield* Scope.close(secondLife, Exit.void)

      // A third adopts it again, from where the second stopped reading: it has the rest, then the exit.
      const third = yield* executorOf("replica-p")
      const again = (yield* third.adoptable!).filter((a) => a.sandbox.id === sandbox.id)
      expect(yield* again[0]!.take!).toBe(true)
      const rest = yield* Effect.scoped(Effect.gen(function*() {
        const last = yield* again[0]!.adopt(offset + "later\ngot {\"n\":2}\n".length)
        yield* last.send({ n: 3 })
        return { stdout: yield* collect(last.stdout), exitCode: yield* last.exitCode }
      }))
      expect(rest).toEqual({ stdout: "got {\"n\":3}\n", exitCode: 7 })
      yield* sandbox.release
    }), 90_000)

  it.scopedLive("a lasting agent not detached is stopped with its scope and is nobody's to adopt; one that ignores SIGTERM is killed", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf("replica-n")
      const sandbox = yield* executor.prepare(sandboxSpec())
      const scope = yield* Scope.make()
      const agent = yield* sandbox.startLasting!(["sh", "-c", "echo ready; exec sleep 300"], {}).pipe(Effect.provideService(Scope.Scope, scope))
      yield* waitFor(agent, "ready")
      yield* Scope.close(scope, Exit.void)
      expect(yield* agent.exitCode).toBe(143)
      expect((yield* executor.adoptable!).filter((a) => a.sandbox.id === sandbox.id)).toEqual([])
      expect((yield* executor.leftovers).map((s) => s.id)).toContain(sandbox.id)

      const stubborn = yield* Effect.scoped(Effect.gen(function*() {
        const agent = yield* sandbox.startLasting!(["sh", "-c", "trap '' TERM INT; echo ready; while :; do sleep 1; done"], {})
        yield* waitFor(agent, "ready")
        yield* agent.terminate(300)
        return yield* agent.exitCode
      }))
      expect(stubborn).toBe(128 + 9)
      yield* sandbox.release
    }), 90_000)

  it.scopedLive("a lasting agent that lies in its files (its pid, its status) and fills its stdin still ends when stopped", () =>
    Effect.gen(function*() {
      const sandbox = yield* prepared(sandboxSpec())
      const hostile = [
        "trap '' TERM INT",
        // Its pid file names the pod's keeper (alive), its status is a FIFO nobody writes, its stdin's pipe is full.
        "for f in /work/.agent-runs/*.pid; do echo 1 > $f; done",
        "for f in /work/.agent-runs/*.out; do s=${f%.out}.status; rm -f $s; mkfifo $s; done",
        "head -c 100000 /dev/zero >&0 &",
        "echo ready; while :; do sleep 1; done"
      ].join("; ")
      const agent = yield* sandbox.startLasting!(["sh", "-c", hostile], {})
      yield* waitFor(agent, "ready")
      // A message cannot get there (a sender gives up), and the stop does not wait for one.
      expect(yield* agent.send({ n: 1 }).pipe(Effect.timeout("2 seconds"), Effect.either, Effect.map((e) => e._tag))).toBe("Left")
      yield* agent.terminate(300)
      // It ends (whatever its files say), and not as a success: stopped, or its status refused (not a plain file).
      const ended = yield* agent.exitCode.pipe(Effect.either, Effect.timeoutOption("20 seconds"))
      expect(Option.isSome(ended)).toBe(true)
      const outcome = Option.getOrThrow(ended)
      if (outcome._tag === "Right") expect(outcome.right).not.toBe(0)
      else expect(outcome.left.message).toContain("not a number")
    }), 90_000)

  it.scoped("a setup command that never ends fails the setup past its time limit, the sandbox kept", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf("tests", 1)
      const error = yield* Effect.flip(executor.prepare(sandboxSpec({ setup_commands: ["echo started > started.txt", "sleep 600"] })))
      expect(error._tag).toBe("SetupFailed")
      if (error._tag !== "SetupFailed") return
      yield* Effect.addFinalizer(() => error.sandbox.release)
      expect(error.message).toContain("`sleep 600` did not finish within 1 s")
    }), { timeout: 30_000 })

  it.scoped("a large work directory (a 24 MB attachment) arrives whole", () =>
    Effect.gen(function*() {
      const bytes = new Uint8Array(24 * 1024 * 1024).map((_, i) => (i * 7) % 251)
      const sandbox = yield* prepared(sandboxSpec({ attachments: [{ name: "big.bin", media_type: "application/octet-stream", bytes }] }))
      const agent = yield* sandbox.start(["node", "-e", `const b = require("fs").readFileSync("attachments/big.bin"); let s = 0
        for (let i = 0; i < b.length; i++) s = (s + b[i] * (i % 13 + 1)) % 1000000007
        console.log(b.length + " " + s)`], {})
      const [text, exitCode] = yield* Effect.all([collect(agent.stdout), agent.exitCode], { concurrency: 2 })
      expect(exitCode).toBe(0)
      let sum = 0
      for (let i = 0; i < bytes.length; i++) sum = (sum + bytes[i]! * (i % 13 + 1)) % 1000000007
      expect(text.trim()).toBe(`${bytes.length} ${sum}`)
    }), { timeout: 60_000 })
})
