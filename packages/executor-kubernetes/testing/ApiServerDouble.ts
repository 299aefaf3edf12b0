/**
 * Test double of a Kubernetes API server on 127.0.0.1 (no cluster can run here): what the executor
 * calls of `batch/v1` Jobs, Pods and Secrets in namespaces (create, get, list and watch by label
 * selector, delete, merge-patch), with resource versions, owner references and garbage
 * collection, and `410 Gone` for a watch from a version older than it keeps. Each Job gets one
 * pod whose container **runs through the Docker engine** (its image, command, user, read-only root,
 * `emptyDir` volumes as tmpfs, variables with `secretKeyRef`s resolved); the pod goes Pending →
 * Running → Succeeded or Failed as the container does, stays Pending while its Secret is missing
 * (`CreateContainerConfigError`) or its image is (`ErrImagePull`), and is killed past the Job's
 * `activeDeadlineSeconds` (`DeadlineExceeded`). Deleting a Job deletes its pod (its container
 * removed) and the Secrets it owns. A pod's `exec` is a WebSocket (`v5.channel.k8s.io`, or
 * `v4.channel.k8s.io`) to a `docker exec` in its container: stdin on channel 0 (closed by the
 * v5 close signal), stdout and stderr on 1 and 2, the exit status on 3 as the API server sends it.
 *
 * Not a conformance target: only what the executor and its tests need.
 */
import type { V1Job, V1ObjectMeta, V1Pod, V1Secret } from "@kubernetes/client-node"
import Docker from "dockerode"
import { randomBytes, randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { PassThrough } from "node:stream"
import { type WebSocket, WebSocketServer } from "ws"

type Kind = "jobs" | "pods" | "secrets"
type AnyObject = V1Job | V1Pod | V1Secret
interface WatchEvent {
  readonly type: "ADDED" | "MODIFIED" | "DELETED"
  readonly object: AnyObject
  readonly version: number
}

export interface ApiServerDouble {
  /** `http://127.0.0.1:PORT`, the cluster's server. */
  readonly url: string
  /** Options for `KubeConfig.loadFromOptions`: a cluster, a user and a context of `namespace`. */
  readonly kubeconfig: (namespace?: string) => object
  /** The objects now, for assertions. */
  readonly list: (kind: Kind, namespace: string) => ReadonlyArray<AnyObject>
  /**
   * Makes watches of versions older than now answer 410 Gone (as after a compaction), and ends the
   * open ones (as a watch's timeout does): a client must list again.
   */
  readonly compact: () => void
  /** The command (argv) of every exec so far, as the API server received it. */
  readonly execs: () => ReadonlyArray<ReadonlyArray<string>>
  readonly close: () => Promise<void>
}

export interface DoubleOptions {
  /** The containers' network (`none`, or `host` to reach the test's servers on loopback). */
  readonly network?: "none" | "host"
  /** Bind mounts added to every container (`host:container[:ro]`), e.g. a program the image lacks. */
  readonly binds?: ReadonlyArray<string>
}

/** The Docker label that marks the double's containers (removed when it closes). */
export const CONTAINER_LABEL = "agent-runs.kubernetes-double"

/** A label selector's terms (`key`, `!key`, `key=value`, `key==value`, `key!=value`); undefined: one it does not take. */
const selectorOf = (selector: string | null) => {
  if (selector === null || selector === "") return []
  const terms = selector.split(",").map((term) => {
    const match = /^(!?)([A-Za-z0-9./_-]+)(?:(!=|==|=)(.*))?$/.exec(term.trim())
    if (match === null) return undefined
    const [, not, key, op, value] = match
    return { key: key!, not: not === "!", op, value }
  })
  return terms.every((t) => t !== undefined) ? terms as Array<NonNullable<(typeof terms)[number]>> : undefined
}

const matches = (labels: Record<string, string> | undefined, terms: ReturnType<typeof selectorOf>): boolean =>
  (terms ?? []).every(({ key, not, op, value }) => {
    const has = labels !== undefined && key in labels
    if (op === undefined) return not ? !has : has
    return op === "!=" ? labels?.[key] !== value : labels?.[key] === value
  })

/** RFC 7386 JSON merge patch: objects merge key by key, null removes, anything else replaces. */
const mergePatch = (target: unknown, patch: unknown): unknown => {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return patch
  const out: Record<string, unknown> = typeof target === "object" && target !== null && !Array.isArray(target) ? { ...target } : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = mergePatch(out[k], v)
  }
  return out
}

const json = (response: ServerResponse, status: number, body: unknown) => {
  response.writeHead(status, { "content-type": "application/json" })
  response.end(JSON.stringify(body))
}

const status = (code: number, reason: string, message: string) => ({ kind: "Status", apiVersion: "v1", status: "Failure", code, reason, message })

const readBody = (request: IncomingMessage): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (c: Buffer) => chunks.push(c))
    request.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      try {
        resolve(text === "" ? undefined : JSON.parse(text))
      } catch (error) {
        reject(error)
      }
    })
    request.on("error", reject)
  })

/** Kubernetes quantities of bytes (`1Gi`, `500M`) as a number. */
const bytesOf = (quantity: string | undefined): number | undefined => {
  const match = /^(\d+)(Ki|Mi|Gi|K|M|G)?$/.exec(quantity ?? "")
  if (match === null) return undefined
  const unit = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, K: 1e3, M: 1e6, G: 1e9 }[match[2] ?? ""] ?? 1
  return Number(match[1]) * unit
}

export const start = async (options: DoubleOptions = {}): Promise<ApiServerDouble> => {
  const docker = new Docker()
  const stores: Record<Kind, Map<string, AnyObject>> = { jobs: new Map(), pods: new Map(), secrets: new Map() }
  const history: Record<Kind, Array<WatchEvent>> = { jobs: [], pods: [], secrets: [] }
  const watchers: Record<Kind, Set<(event: WatchEvent) => void>> = { jobs: new Set(), pods: new Set(), secrets: new Set() }
  /** Ends each open watch (as the API server does when a watch times out). */
  const openWatches = new Set<() => void>()
  /** The command of every exec, in order. */
  const execs: Array<ReadonlyArray<string>> = []
  /** Every pod uid this double made (its containers are removed when it closes). */
  const known = new Set<string>()
  let version = 1
  /** Per kind, the oldest version a watch may start from (older: 410 Gone). */
  const oldestKept: Record<Kind, number> = { jobs: 1, pods: 1, secrets: 1 }
  /** At most this many events are kept per kind for watches. */
  const KEPT_EVENTS = 1000
  /** The deadline timers of Jobs, by uid. */
  const deadlines = new Map<string, NodeJS.Timeout>()
  /** The pods' runs under way (awaited by `close`). */
  const runs = new Set<Promise<void>>()
  let closed = false
  const timers = new Set<NodeJS.Timeout>()
  /** Container removals under way (awaited by `close`). */
  const removals = new Set<Promise<void>>()
  const track = (removal: Promise<void>) => {
    removals.add(removal)
    void removal.finally(() => removals.delete(removal))
  }
  const key = (namespace: string, name: string) => `${namespace}/${name}`

  const emit = (kind: Kind, type: WatchEvent["type"], object: AnyObject) => {
    const event = { type, object: structuredClone(object), version: Number(object.metadata?.resourceVersion) }
    history[kind].push(event)
    if (history[kind].length > KEPT_EVENTS) oldestKept[kind] = history[kind].shift()!.version + 1
    for (const watcher of watchers[kind]) watcher(event)
  }

  const put = (kind: Kind, object: AnyObject, type: "ADDED" | "MODIFIED") => {
    const meta = object.metadata as V1ObjectMeta
    meta.resourceVersion = String(++version)
    stores[kind].set(key(meta.namespace!, meta.name!), object)
    emit(kind, type, object)
  }

  /**
   * Deletes an object; with `cascade`, its dependents too (a Job's pods and the Secrets it owns),
   * else they are orphaned (their owner reference dropped), as `propagationPolicy: Orphan` does,
   * the API's default for Jobs.
   */
  const remove = (kind: Kind, namespace: string, name: string, cascade = true): AnyObject | undefined => {
    const found = stores[kind].get(key(namespace, name))
    if (found === undefined) return undefined
    stores[kind].delete(key(namespace, name))
    found.metadata!.resourceVersion = String(++version)
    emit(kind, "DELETED", found)
    if (kind === "pods") track(removeContainer(found.metadata!.uid!))
    if (kind === "jobs") {
      clearTimeout(deadlines.get(found.metadata!.uid!))
      for (const dependent of dependentsOf(found.metadata!.uid!, namespace)) {
        if (cascade) remove(dependent.kind, namespace, dependent.object.metadata!.name!)
        else {
          dependent.object.metadata!.ownerReferences = (dependent.object.metadata!.ownerReferences ?? []).filter((o) => o.uid !== found.metadata!.uid)
          put(dependent.kind, dependent.object, "MODIFIED")
        }
      }
    }
    return found
  }

  /** The pods and Secrets a Job owns. */
  const dependentsOf = (ownerUid: string, namespace: string) =>
    (["pods", "secrets"] as const).flatMap((kind) =>
      [...stores[kind].values()]
        .filter((object) => object.metadata?.namespace === namespace && (object.metadata?.ownerReferences ?? []).some((o) => o.uid === ownerUid))
        .map((object) => ({ kind, object }))
    )

  const containersOf = async (podUid: string) =>
    docker.listContainers({ all: true, filters: { label: [`${CONTAINER_LABEL}=${podUid}`] } })

  const removeContainer = async (podUid: string) => {
    for (const info of await containersOf(podUid).catch(() => [])) {
      await docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined)
    }
  }

  const podExists = (pod: V1Pod) => stores.pods.has(key(pod.metadata!.namespace!, pod.metadata!.name!))

  const setPod = (pod: V1Pod, phase: string, detail: { reason?: string; message?: string; exitCode?: number } = {}) => {
    if (!podExists(pod)) return
    const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting?.reason
    if (phase === "Pending" && pod.status?.phase === "Pending" && waiting === detail.reason) return
    pod.status = {
      phase,
      ...(detail.reason === undefined ? {} : { reason: detail.reason }),
      ...(detail.message === undefined ? {} : { message: detail.message }),
      containerStatuses: [{
        name: pod.spec!.containers[0]!.name,
        image: pod.spec!.containers[0]!.image!,
        imageID: "",
        ready: phase === "Running",
        restartCount: 0,
        state: phase === "Pending"
          ? { waiting: { reason: detail.reason ?? "ContainerCreating", ...(detail.message === undefined ? {} : { message: detail.message }) } }
          : phase === "Running"
          ? { running: { startedAt: new Date() } }
          : { terminated: { exitCode: detail.exitCode ?? 0, reason: detail.reason ?? (phase === "Succeeded" ? "Completed" : "Error") } }
      }]
    }
    put("pods", pod, "MODIFIED")
    const job = [...stores.jobs.values()].find((j) => j.metadata?.uid === pod.metadata?.labels?.["controller-uid"]) as V1Job | undefined
    if (job === undefined) return
    if ((phase === "Succeeded" || phase === "Failed") && job.status?.conditions === undefined) {
      clearTimeout(deadlines.get(job.metadata!.uid!))
      job.status = {
        ...(phase === "Succeeded" ? { succeeded: 1 } : { failed: 1 }),
        conditions: [{
          type: phase === "Succeeded" ? "Complete" : "Failed",
          status: "True",
          ...(detail.reason === undefined ? {} : { reason: detail.reason })
        }]
      }
      put("jobs", job, "MODIFIED")
    } else if (phase === "Running" && job.status?.active !== 1) {
      job.status = { active: 1, startTime: new Date() }
      put("jobs", job, "MODIFIED")
    }
  }

  /** Runs the pod's container, tracked for `close`; a failure of the engine leaves the pod Pending. */
  const runPod = (pod: V1Pod) => {
    const running = run(pod).catch((error) => setPod(pod, "Pending", { reason: "CreateContainerError", message: String((error as Error).message) }))
    runs.add(running)
    void running.finally(() => runs.delete(running))
  }

  /** The pod's container through Docker, as its spec says. */
  const run = async (pod: V1Pod): Promise<void> => {
    if (closed || !podExists(pod)) return
    const spec = pod.spec!
    const container = spec.containers[0]!
    const namespace = pod.metadata!.namespace!
    const env: Array<string> = []
    for (const variable of container.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef
      if (ref === undefined) {
        env.push(`${variable.name}=${variable.value ?? ""}`)
        continue
      }
      const secret = stores.secrets.get(key(namespace, ref.name!)) as V1Secret | undefined
      const value = secret?.data?.[ref.key] === undefined ? undefined : Buffer.from(secret.data[ref.key]!, "base64").toString("utf8")
      if (value === undefined) {
        setPod(pod, "Pending", { reason: "CreateContainerConfigError", message: `secret "${ref.name}" not found` })
        // The kubelet tries again.
        const retry = setTimeout(() => (timers.delete(retry), runPod(pod)), 200)
        timers.add(retry)
        return
      }
      env.push(`${variable.name}=${value}`)
    }
    const security = { ...spec.securityContext, ...container.securityContext }
    if (security.runAsNonRoot === true && (security.runAsUser === undefined || security.runAsUser === 0)) {
      setPod(pod, "Pending", { reason: "CreateContainerConfigError", message: "container has runAsNonRoot and image will run as root" })
      return
    }
    // An emptyDir is an empty directory every user may write (0777), whatever the image has there.
    const mounts = (container.volumeMounts ?? []).map((mount) => {
      // SizeBytes 0: no limit.
      const size = bytesOf(spec.volumes?.find((v) => v.name === mount.name)?.emptyDir?.sizeLimit)
      return { Type: "tmpfs" as const, Source: "", Target: mount.mountPath, TmpfsOptions: { Mode: 0o1777, SizeBytes: size ?? 0 } }
    })
    let created: Docker.Container
    try {
      created = await docker.createContainer({
        Image: container.image!,
        Cmd: [...(container.command ?? []), ...(container.args ?? [])],
        Env: env,
        // No WorkingDir: Docker would make a mount there its own 0755 directory; the keeper needs
        // none, and each exec is given it (as the kubelet runs execs in the container's workingDir).
        ...(security.runAsUser === undefined ? {} : { User: `${security.runAsUser}:${security.runAsGroup ?? security.runAsUser}` }),
        Labels: { [CONTAINER_LABEL]: pod.metadata!.uid! },
        HostConfig: {
          NetworkMode: options.network ?? "none",
          ReadonlyRootfs: security.readOnlyRootFilesystem === true,
          CapDrop: security.capabilities?.drop?.includes("ALL") === true ? ["ALL"] : [],
          SecurityOpt: security.allowPrivilegeEscalation === false ? ["no-new-privileges"] : [],
          Mounts: mounts,
          Binds: [...(options.binds ?? [])]
        }
      })
    } catch (error) {
      const missing = (error as { statusCode?: number }).statusCode === 404
      setPod(pod, "Pending", { reason: missing ? "ErrImagePull" : "CreateContainerError", message: String((error as Error).message) })
      return
    }
    // Gone (or the double closed) while the container was made: nothing runs for it.
    if (closed || !podExists(pod)) return void (await created.remove({ force: true }).catch(() => undefined))
    await created.start()
    if (closed || !podExists(pod)) return void (await created.remove({ force: true }).catch(() => undefined))
    setPod(pod, "Running")
    const exit = await created.wait().catch(() => ({ StatusCode: 137 }))
    const current = stores.pods.get(key(namespace, pod.metadata!.name!)) as V1Pod | undefined
    if (current?.status?.phase === "Running") setPod(pod, exit.StatusCode === 0 ? "Succeeded" : "Failed", { exitCode: exit.StatusCode })
  }

  /** An exec's exit code, once the engine says it is no longer running. */
  const exitCodeOf = async (execution: Docker.Exec): Promise<number | null> => {
    for (let i = 0; i < 100; i++) {
      const inspected = await execution.inspect()
      if (!inspected.Running) return inspected.ExitCode
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    return null
  }

  /** One exec: a `docker exec` in the pod's container, its streams on the WebSocket's channels. */
  const exec = async (ws: WebSocket, podUid: string, workingDir: string | undefined, url: URL) => {
    const send = (channel: number, data: Buffer) => ws.readyState === ws.OPEN && ws.send(Buffer.concat([Buffer.from([channel]), data]))
    // What the client sends before the exec has started is kept for it.
    const early: Array<Buffer> = []
    const keep = (data: Buffer) => early.push(data)
    ws.on("message", keep)
    ws.on("error", () => undefined)
    const withStdin = url.searchParams.get("stdin") === "true"
    const command = url.searchParams.getAll("command")
    execs.push(command)
    try {
      const [info] = await containersOf(podUid)
      if (info === undefined) throw new Error("the pod has no container")
      const execution = await docker.getContainer(info.Id).exec({
        Cmd: command,
        ...(workingDir === undefined ? {} : { WorkingDir: workingDir }),
        AttachStdin: withStdin,
        AttachStdout: true,
        AttachStderr: true
      })
      const stream = await execution.start({ hijack: true, stdin: withStdin })
      stream.on("error", () => undefined)
      const out = new PassThrough()
      const err = new PassThrough()
      out.on("data", (data: Buffer) => send(1, data))
      err.on("data", (data: Buffer) => send(2, data))
      docker.modem.demuxStream(stream, out, err)
      const input = (data: Buffer) => {
        if (data[0] === 0) stream.write(data.subarray(1))
        // The v5 close signal for stdin.
        else if (data[0] === 255 && data[1] === 0) stream.end()
      }
      ws.off("message", keep)
      for (const data of early) input(data)
      ws.on("message", input)
      ws.on("close", () => stream.destroy())
      // The status goes last, after everything the command printed.
      const drained = Promise.all([out, err].map((s) => new Promise((resolve) => s.on("end", resolve))))
      // Once the demultiplexer read the last bytes ('end'; 'close' when the stream broke instead).
      let finished = false
      const finish = () => {
        if (finished) return
        finished = true
        out.end()
        err.end()
        void drained.then(() => exitCodeOf(execution)).then((ExitCode) => {
          const exitCode = ExitCode ?? 1
          const result = exitCode === 0
            ? { status: "Success", metadata: {} }
            : { status: "Failure", reason: "NonZeroExitCode", message: `command terminated with non-zero exit code: ${exitCode}`, details: { causes: [{ reason: "ExitCode", message: String(exitCode) }] } }
          send(3, Buffer.from(JSON.stringify(result)))
          ws.close()
        }).catch(() => ws.close())
      }
      stream.on("end", finish)
      stream.on("close", () => setImmediate(finish))
    } catch (error) {
      send(3, Buffer.from(JSON.stringify({ status: "Failure", reason: "InternalError", message: String((error as Error).message) })))
      ws.close()
    }
  }

  const createJob = (namespace: string, job: V1Job) => {
    const uid = randomUUID()
    job.metadata = { ...job.metadata, namespace, uid, creationTimestamp: new Date() }
    job.status = {}
    put("jobs", job, "ADDED")
    const template = job.spec!.template
    const podUid = randomUUID()
    known.add(podUid)
    const pod: V1Pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: `${job.metadata.name}-${randomBytes(3).toString("hex").slice(0, 5)}`,
        namespace,
        uid: podUid,
        labels: { ...template.metadata?.labels, "job-name": job.metadata.name!, "controller-uid": uid },
        ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: job.metadata.name!, uid }]
      },
      spec: structuredClone(template.spec!),
      status: { phase: "Pending" }
    }
    put("pods", pod, "ADDED")
    runPod(pod)
    // Past its deadline (from its start) the Job fails and its pods are deleted.
    const seconds = job.spec?.activeDeadlineSeconds
    if (seconds !== undefined) {
      deadlines.set(uid, setTimeout(() => {
        deadlines.delete(uid)
        if (!stores.jobs.has(key(namespace, job.metadata!.name!)) || job.status?.conditions !== undefined) return
        job.status = { failed: 1, conditions: [{ type: "Failed", status: "True", reason: "DeadlineExceeded" }] }
        put("jobs", job, "MODIFIED")
        for (const dependent of dependentsOf(uid, namespace)) if (dependent.kind === "pods") remove("pods", namespace, dependent.object.metadata!.name!)
      }, seconds * 1000))
    }
    return job
  }

  const watch = (kind: Kind, request: IncomingMessage, response: ServerResponse, url: URL, namespace: string) => {
    const from = Number(url.searchParams.get("resourceVersion") ?? "0")
    const selector = selectorOf(url.searchParams.get("labelSelector"))
    if (selector === undefined) return json(response, 400, status(400, "BadRequest", "unable to parse the label selector"))
    response.writeHead(200, { "content-type": "application/json" })
    if (from > 0 && from < oldestKept[kind]) {
      response.end(`${JSON.stringify({ type: "ERROR", object: status(410, "Expired", `too old resource version: ${from} (${oldestKept[kind]})`) })}\n`)
      return
    }
    response.flushHeaders()
    const send = (event: WatchEvent) => {
      if (event.object.metadata?.namespace !== namespace || !matches(event.object.metadata?.labels, selector)) return
      response.write(`${JSON.stringify({ type: event.type, object: event.object })}\n`)
    }
    if (from > 0) {
      for (const event of history[kind]) if (event.version > from) send(event)
    } else {
      // Without a version: the objects there now first, as ADDED.
      for (const object of stores[kind].values()) send({ type: "ADDED", object, version })
    }
    watchers[kind].add(send)
    const end = () => response.end()
    openWatches.add(end)
    request.on("close", () => {
      watchers[kind].delete(send)
      openWatches.delete(end)
    })
  }

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1")
    const match = /^\/(?:api\/v1|apis\/batch\/v1)\/namespaces\/([^/]+)\/(jobs|pods|secrets)(?:\/([^/]+))?$/.exec(url.pathname)
    if (match === null) return json(response, 404, status(404, "NotFound", `${url.pathname} is not served by the double`))
    const [, namespace, kind, name] = match as unknown as [string, string, Kind, string | undefined]
    const method = request.method ?? "GET"
    if (name === undefined && method === "GET") {
      if (url.searchParams.get("watch") === "true") return watch(kind, request, response, url, namespace)
      const selector = selectorOf(url.searchParams.get("labelSelector"))
      if (selector === undefined) return json(response, 400, status(400, "BadRequest", "unable to parse the label selector"))
      const items = [...stores[kind].values()].filter((o) => o.metadata?.namespace === namespace && matches(o.metadata?.labels, selector))
      return json(response, 200, { kind: "List", apiVersion: "v1", metadata: { resourceVersion: String(version) }, items })
    }
    if (name === undefined && method === "POST") {
      const body = (await readBody(request)) as AnyObject
      const objectName = body.metadata?.name
      if (objectName === undefined) return json(response, 422, status(422, "Invalid", "metadata.name is required"))
      if (stores[kind].has(key(namespace, objectName))) return json(response, 409, status(409, "AlreadyExists", `${kind} "${objectName}" already exists`))
      if (kind === "jobs") return json(response, 201, createJob(namespace, body as V1Job))
      if (kind === "pods") return json(response, 405, status(405, "MethodNotAllowed", "the double makes pods for Jobs only"))
      body.metadata = { ...body.metadata, namespace, uid: randomUUID(), creationTimestamp: new Date() }
      if (kind === "secrets") {
        // As the API server stores it: stringData folded into data (base64).
        const secret = body as V1Secret
        secret.data = { ...secret.data, ...Object.fromEntries(Object.entries(secret.stringData ?? {}).map(([k, v]) => [k, Buffer.from(v).toString("base64")])) }
        delete secret.stringData
      }
      put(kind, body, "ADDED")
      return json(response, 201, body)
    }
    const found = name === undefined ? undefined : stores[kind].get(key(namespace, name))
    if (found === undefined) return json(response, 404, status(404, "NotFound", `${kind} "${name}" not found`))
    if (method === "GET") return json(response, 200, found)
    if (method === "DELETE") {
      const options = (await readBody(request)) as { propagationPolicy?: string } | undefined
      const policy = url.searchParams.get("propagationPolicy") ?? options?.propagationPolicy ?? (kind === "jobs" ? "Orphan" : "Background")
      return json(response, 200, remove(kind, namespace, name!, policy !== "Orphan"))
    }
    if (method === "PATCH") {
      const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim()
      if (type !== "application/merge-patch+json" && type !== "application/strategic-merge-patch+json") {
        return json(response, 415, status(415, "UnsupportedMediaType", `the double takes merge patches, not ${type}`))
      }
      const patch = (await readBody(request)) as AnyObject
      // A resource version in the patch is a precondition, as the API server takes it.
      const expected = patch?.metadata?.resourceVersion
      if (expected !== undefined && expected !== found.metadata?.resourceVersion) {
        return json(response, 409, status(409, "Conflict", `the object has been modified; please apply your changes to the latest version and try again`))
      }
      const patched = mergePatch(found, patch) as AnyObject
      put(kind, patched, "MODIFIED")
      return json(response, 200, patched)
    }
    return json(response, 405, status(405, "MethodNotAllowed", `${method} is not served by the double`))
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error) => json(response, 500, status(500, "InternalError", String(error))))
  })
  const sockets = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => (offered.has("v5.channel.k8s.io") ? "v5.channel.k8s.io" : offered.has("v4.channel.k8s.io") ? "v4.channel.k8s.io" : false)
  })
  server.on("upgrade", (request: IncomingMessage, socket: Socket, head: Buffer) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1")
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/.exec(url.pathname)
    const pod = match === null ? undefined : stores.pods.get(key(match[1]!, match[2]!))
    if (pod === undefined || (pod as V1Pod).status?.phase !== "Running") {
      socket.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
      return
    }
    sockets.handleUpgrade(request, socket, head, (ws) => void exec(ws, pod.metadata!.uid!, (pod as V1Pod).spec?.containers[0]?.workingDir, url).catch(() => ws.terminate()))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    kubeconfig: (namespace = "default") => ({
      clusters: [{ name: "double", server: url, skipTLSVerify: true }],
      users: [{ name: "double", token: "double-token" }],
      contexts: [{ name: "double", cluster: "double", user: "double", namespace }],
      currentContext: "double"
    }),
    list: (kind, namespace) => [...stores[kind].values()].filter((o) => o.metadata?.namespace === namespace),
    compact: () => {
      for (const kind of ["jobs", "pods", "secrets"] as const) {
        oldestKept[kind] = version + 1
        history[kind].length = 0
      }
      for (const end of [...openWatches]) end()
    },
    execs: () => [...execs],
    close: async () => {
      closed = true
      for (const timer of [...timers, ...deadlines.values()]) clearTimeout(timer)
      for (const client of sockets.clients) client.terminate()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      // Every container of its pods goes (which ends their runs), then those still being made.
      for (const pod of stores.pods.values()) track(removeContainer(pod.metadata!.uid!))
      await Promise.all([...removals])
      await Promise.all([...runs])
      for (const info of await docker.listContainers({ all: true, filters: { label: [CONTAINER_LABEL] } }).catch(() => [])) {
        if (!known.has(info.Labels[CONTAINER_LABEL] ?? "")) continue
        await docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined)
      }
    }
  }
}
