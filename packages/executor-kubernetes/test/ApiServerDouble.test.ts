/**
 * The API server double itself, through `@kubernetes/client-node`: a Job's pod runs on the Docker
 * engine as its spec says, moves through its phases, waits for its Secret, is killed past its
 * deadline; deleting the Job removes its pod, container and owned Secret; a stale watch is a 410;
 * an exec runs in the pod's container with its streams and exit status.
 */
import { BatchV1Api, CoreV1Api, Exec, KubeConfig, PatchStrategy, setHeaderOptions, type V1Status, Watch } from "@kubernetes/client-node"
import { PassThrough, Readable } from "node:stream"
import { testImage } from "@agent-runs/executor-docker/testing"
import Docker from "dockerode"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { jobOf, secretOf } from "../src/Manifests.js"
import { jobName, secretName } from "../src/Names.js"
import { defaultSettings } from "../src/Settings.js"
import { type ApiServerDouble, CONTAINER_LABEL, start } from "../testing/ApiServerDouble.js"

const settings = { ...defaultSettings, namespace: "agents", image: testImage }
const docker = new Docker()

let double: ApiServerDouble
let batch: BatchV1Api
let core: CoreV1Api
let kc: KubeConfig

beforeAll(async () => {
  double = await start()
  kc = new KubeConfig()
  kc.loadFromOptions(double.kubeconfig("agents"))
  batch = kc.makeApiClient(BatchV1Api)
  core = kc.makeApiClient(CoreV1Api)
})
afterAll(() => double.close())

let next = 0
const execution = () => {
  const n = String(++next).padStart(12, "0")
  return { run_id: `01a22d03-0000-7000-8000-${n}`, team_uid: "TeamTeamTeamTeamTeam01", execution_id: `01a22d04-0000-7000-8000-${n}` }
}

const until = async <A>(read: () => Promise<A>, done: (a: A) => boolean, timeoutMs = 20_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (done(value) || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const podOf = async (ref: ReturnType<typeof execution>) =>
  (await core.listNamespacedPod({ namespace: "agents", labelSelector: `job-name=${jobName(ref)}` })).items[0]

describe("the Kubernetes API server double", () => {
  it("runs a Job's pod on Docker as its spec says (user, read-only root, variables from the Secret); deleting the Job removes it all", async () => {
    const ref = execution()
    await core.createNamespacedSecret({ namespace: "agents", body: secretOf(settings, ref, { TOKEN: "s3cret" }) })
    const job = await batch.createNamespacedJob({
      namespace: "agents",
      body: jobOf(settings, { execution: ref, image: null, env: { PLAIN: "yes" }, secretVariables: ["TOKEN"], attachments: [] })
    })
    const owner = { metadata: { ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: jobName(ref), uid: job.metadata!.uid! }] } }
    // A merge patch, as the executor sends it (a JSON patch is refused: 415).
    await core.patchNamespacedSecret({ name: secretName(ref), namespace: "agents", body: owner }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch))
    await expect(core.patchNamespacedSecret({ name: secretName(ref), namespace: "agents", body: [{ op: "add", path: "/x", value: 1 }] }))
      .rejects.toMatchObject({ code: 415 })
    const patched = await core.readNamespacedSecret({ name: secretName(ref), namespace: "agents" })
    expect(patched.metadata?.labels?.["agent-runs/run-id"]).toBe(ref.run_id)
    expect(patched.data?.["TOKEN"]).toBe(Buffer.from("s3cret").toString("base64"))
    const running = await until(() => podOf(ref), (p) => p?.status?.phase === "Running")
    expect(running?.status?.phase).toBe("Running")
    const [info] = await docker.listContainers({ filters: { label: [`${CONTAINER_LABEL}=${running!.metadata!.uid}`] } })
    const inspected = await docker.getContainer(info!.Id).inspect()
    expect(inspected.Config.User).toBe("65534:65534")
    expect(inspected.HostConfig.ReadonlyRootfs).toBe(true)
    expect(inspected.HostConfig.CapDrop).toEqual(["ALL"])
    expect(inspected.Config.Env).toEqual(expect.arrayContaining(["PLAIN=yes", "TOKEN=s3cret", "HOME=/work"]))
    await batch.deleteNamespacedJob({ name: jobName(ref), namespace: "agents", propagationPolicy: "Foreground" })
    expect(await podOf(ref)).toBeUndefined()
    expect(double.list("secrets", "agents").map((s) => s.metadata?.name)).not.toContain(secretName(ref))
    await until(() => docker.listContainers({ all: true, filters: { label: [`${CONTAINER_LABEL}=${running!.metadata!.uid}`] } }), (l) => l.length === 0)
    expect(await docker.listContainers({ all: true, filters: { label: [`${CONTAINER_LABEL}=${running!.metadata!.uid}`] } })).toEqual([])
  })

  it("a pod waits for its Secret, ends as its container does, and is killed past the Job's deadline", async () => {
    const waiting = execution()
    await batch.createNamespacedJob({
      namespace: "agents",
      body: jobOf(settings, { execution: waiting, image: null, env: {}, secretVariables: ["TOKEN"], attachments: [] })
    })
    const pending = await until(() => podOf(waiting), (p) => p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === "CreateContainerConfigError")
    expect(pending?.status?.phase).toBe("Pending")
    await core.createNamespacedSecret({ namespace: "agents", body: secretOf(settings, waiting, { TOKEN: "late" }) })
    expect((await until(() => podOf(waiting), (p) => p?.status?.phase === "Running"))?.status?.phase).toBe("Running")

    const quick = execution()
    const job = jobOf(settings, { execution: quick, image: null, env: {}, secretVariables: [], attachments: [] })
    job.spec!.template.spec!.containers[0]!.command = ["/bin/sh", "-c", "exit 3"]
    await batch.createNamespacedJob({ namespace: "agents", body: job })
    expect((await until(() => podOf(quick), (p) => p?.status?.phase === "Failed"))?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(3)
    const failed = await batch.readNamespacedJob({ name: jobName(quick), namespace: "agents" })
    expect(failed.status?.conditions?.[0]?.type).toBe("Failed")

    const slow = execution()
    await batch.createNamespacedJob({ namespace: "agents", body: jobOf({ ...settings, activeDeadlineSeconds: 1 }, { execution: slow, image: null, env: {}, secretVariables: [], attachments: [] }) })
    const expired = await until(() => batch.readNamespacedJob({ name: jobName(slow), namespace: "agents" }), (j) => j.status?.conditions !== undefined)
    expect(expired.status?.conditions?.[0]).toMatchObject({ type: "Failed", reason: "DeadlineExceeded" })
    expect(await podOf(slow)).toBeUndefined()

    const unknown = execution()
    await batch.createNamespacedJob({ namespace: "agents", body: jobOf(settings, { execution: unknown, image: "no-such-image:1", env: {}, secretVariables: [], attachments: [] }) })
    const unpulled = await until(() => podOf(unknown), (p) => p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === "ErrImagePull")
    expect(unpulled?.status?.phase).toBe("Pending")
    for (const ref of [waiting, quick, slow, unknown]) await batch.deleteNamespacedJob({ name: jobName(ref), namespace: "agents", propagationPolicy: "Background" })
    // The API's default for a Job orphans its pod, which goes on running.
    const orphaned = execution()
    await batch.createNamespacedJob({ namespace: "agents", body: jobOf(settings, { execution: orphaned, image: null, env: {}, secretVariables: [], attachments: [] }) })
    await until(() => podOf(orphaned), (p) => p?.status?.phase === "Running")
    await batch.deleteNamespacedJob({ name: jobName(orphaned), namespace: "agents" })
    const orphan = await podOf(orphaned)
    expect(orphan?.status?.phase).toBe("Running")
    expect(orphan?.metadata?.ownerReferences).toEqual([])
    await core.deleteNamespacedPod({ name: orphan!.metadata!.name!, namespace: "agents" })
    // Selectors: existence, absence, inequality.
    const all = (selector: string) => core.listNamespacedPod({ namespace: "agents", labelSelector: selector }).then((l) => l.items.length)
    expect(await all("agent-runs/run-id,!no-such-label")).toBe(await all(""))
    expect(await all("no-such-label")).toBe(0)
    expect(await all(`agent-runs/run-id!=${waiting.run_id}`)).toBe((await all("")) - (await all(`agent-runs/run-id=${waiting.run_id}`)))
  })

  it("watches stream changes from a version; a version older than it keeps is 410 Gone", async () => {
    const list = await batch.listNamespacedJob({ namespace: "agents" })
    const from = list.metadata!.resourceVersion!
    const seen: Array<string> = []
    const watch = new Watch(kc)
    const request = await watch.watch("/apis/batch/v1/namespaces/agents/jobs", { resourceVersion: from }, (type, object) => {
      seen.push(`${type} ${object.metadata?.name}`)
    }, () => {})
    const ref = execution()
    await batch.createNamespacedJob({ namespace: "agents", body: jobOf(settings, { execution: ref, image: null, env: {}, secretVariables: [], attachments: [] }) })
    await until(async () => seen, (s) => s.includes(`ADDED ${jobName(ref)}`))
    expect(seen).toContain(`ADDED ${jobName(ref)}`)
    request.abort()
    double.compact()
    const errors: Array<unknown> = []
    // The watch ends after the error (the executor then lists again).
    await new Promise<unknown>((resolve) => {
      void watch.watch("/apis/batch/v1/namespaces/agents/jobs", { resourceVersion: from }, (type, object) => {
        if (type === "ERROR") errors.push(object)
      }, resolve)
    })
    expect(errors).toEqual([expect.objectContaining({ code: 410, reason: "Expired" })])
    // Without a version: what is there now, as ADDED, first.
    const now: Array<string> = []
    const fresh = await watch.watch("/apis/batch/v1/namespaces/agents/jobs", {}, (type, object) => now.push(`${type} ${object.metadata?.name}`), () => {})
    await until(async () => now, (n) => n.includes(`ADDED ${jobName(ref)}`))
    expect(now).toContain(`ADDED ${jobName(ref)}`)
    fresh.abort()
    await batch.deleteNamespacedJob({ name: jobName(ref), namespace: "agents", propagationPolicy: "Background" })
  })

  it("an exec runs in the pod's container as its user: stdin to its end, stdout, stderr and the exit status", async () => {
    const ref = execution()
    await batch.createNamespacedJob({ namespace: "agents", body: jobOf(settings, { execution: ref, image: null, env: {}, secretVariables: [], attachments: [] }) })
    const pod = await until(() => podOf(ref), (p) => p?.status?.phase === "Running")
    const run = async (command: Array<string>, input?: string) => {
      const stdout = new PassThrough()
      const stderr = new PassThrough()
      const chunks = { out: "", err: "" }
      stdout.on("data", (d: Buffer) => (chunks.out += d.toString()))
      stderr.on("data", (d: Buffer) => (chunks.err += d.toString()))
      const status = await new Promise<V1Status>((resolve, reject) => {
        new Exec(kc).exec("agents", pod!.metadata!.name!, "sandbox", command, stdout, stderr, input === undefined ? null : Readable.from([input]), false, resolve)
          .catch(reject)
      })
      return { ...chunks, status }
    }
    const echoed = await run(["cat"], "hello\n")
    expect(echoed.out).toBe("hello\n")
    expect(echoed.status.status).toBe("Success")
    const who = await run(["/bin/sh", "-c", "id -u; echo oops >&2; pwd"])
    expect(who.out).toBe("65534\n/work\n")
    expect(who.err).toBe("oops\n")
    const failed = await run(["/bin/sh", "-c", "exit 4"])
    expect(failed.status).toMatchObject({ status: "Failure", details: { causes: [{ reason: "ExitCode", message: "4" }] } })
    await batch.deleteNamespacedJob({ name: jobName(ref), namespace: "agents", propagationPolicy: "Background" })
  })
})
