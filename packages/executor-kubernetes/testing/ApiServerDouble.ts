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
  /** Makes watches of versions older than now answer 410 Gone (as after a compaction). */
  readonly compact: () => void
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

const matches = (labels: Record<string, string> | undefined, selector: string | null): boolean =>
  selector === null || selector === "" ||
  selector.split(",").every((term) => {
    const [key, value] = term.split("=")
    return key !== undefined && labels?.[key] === value
  })

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
  /** Every pod uid this double made (its containers are removed when it closes). */
  const known = new Set<string>()
  let version = 1
  let oldestKept = 1
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
    for (const watcher of watchers[kind]) watcher(event)
  }

  const put = (kind: Kind, object: AnyObject, type: "ADDED" | "MODIFIED") => {
    const meta = object.metadata as V1ObjectMeta
    meta.resourceVersion = String(++version)
    stores[kind].set(key(meta.namespace!, meta.name!), object)
    emit(kind, type, object)
  }

  const remove = (kind: Kind, namespace: string, name: string): AnyObject | undefined => {
    const found = stores[kind].get(key(namespace, name))
    if (found === undefined) return undefined
    stores[kind].delete(key(namespace, name))
    found.metadata!.resourceVersion = String(++version)
    emit(kind, "DELETED", found)
    if (kind === "pods") track(removeContainer(found.metadata!.uid!))
    if (kind === "jobs") collect(found.metadata!.uid!, namespace)
    return found
  }

  /** Garbage collection: the pods of a deleted Job, and the Secrets it owns. */
  const collect = (ownerUid: string, namespace: string) => {
    for (const kind of ["pods", "secrets"] as const) {
      for (const object of [...stores[kind].values()]) {
        const owners = object.metadata?.ownerReferences ?? []
        const owned = owners.some((o) => o.uid === ownerUid) || object.metadata?.labels?.["controller-uid"] === ownerUid
        if (owned && object.metadata?.namespace === namespace) remove(kind, namespace, object.metadata!.name!)
      }
    }
  }

  const containersOf = async (podUid: string) =>
    docker.listContainers({ all: true, filters: { label: [`${CONTAINER_LABEL}=${podUid}`] } })

  const removeContainer = async (podUid: string) => {
    for (const info of await containersOf(podUid).catch(() => [])) {
      await docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined)
    }
  }

  const setPod = (pod: V1Pod, phase: string, detail: { reason?: string; message?: string; exitCode?: number } = {}) => {
    if (!stores.pods.has(key(pod.metadata!.namespace!, pod.metadata!.name!))) return
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
    if (phase === "Succeeded" || phase === "Failed") {
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

  /** The pod's container through Docker, as its spec says. */
  const run = async (pod: V1Pod, deadlineSeconds: number | undefined) => {
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
      const value = secret?.stringData?.[ref.key] ??
        (secret?.data?.[ref.key] === undefined ? undefined : Buffer.from(secret.data[ref.key]!, "base64").toString("utf8"))
      if (value === undefined) {
        setPod(pod, "Pending", { reason: "CreateContainerConfigError", message: `secret "${ref.name}" not found` })
        // The kubelet tries again.
        const retry = setTimeout(() => (timers.delete(retry), void run(pod, deadlineSeconds)), 200)
        timers.add(retry)
        return
      }
      env.push(`${variable.name}=${value}`)
    }
    const security = { ...spec.securityContext, ...container.securityContext }
    const tmpfs: Record<string, string> = {}
    for (const mount of container.volumeMounts ?? []) {
      const volume = spec.volumes?.find((v) => v.name === mount.name)
      const size = bytesOf(volume?.emptyDir?.sizeLimit)
      tmpfs[mount.mountPath] = `rw,exec,nosuid,nodev,mode=1777${size === undefined ? "" : `,size=${size}`}`
    }
    let created: Docker.Container
    try {
      created = await docker.createContainer({
        Image: container.image!,
        Cmd: [...(container.command ?? []), ...(container.args ?? [])],
        Env: env,
        ...(container.workingDir === undefined ? {} : { WorkingDir: container.workingDir }),
        ...(security.runAsUser === undefined ? {} : { User: `${security.runAsUser}:${security.runAsGroup ?? security.runAsUser}` }),
        Labels: { [CONTAINER_LABEL]: pod.metadata!.uid! },
        HostConfig: {
          NetworkMode: options.network ?? "none",
          ReadonlyRootfs: security.readOnlyRootFilesystem === true,
          CapDrop: security.capabilities?.drop?.includes("ALL") === true ? ["ALL"] : [],
          SecurityOpt: security.allowPrivilegeEscalation === false ? ["no-new-privileges"] : [],
          Tmpfs: tmpfs,
          Binds: [...(options.binds ?? [])]
        }
      })
    } catch (error) {
      const missing = (error as { statusCode?: number }).statusCode === 404
      setPod(pod, "Pending", { reason: missing ? "ErrImagePull" : "CreateContainerError", message: String((error as Error).message) })
      return
    }
    if (!stores.pods.has(key(namespace, pod.metadata!.name!))) return void created.remove({ force: true }).catch(() => undefined)
    await created.start()
    setPod(pod, "Running")
    if (deadlineSeconds !== undefined) {
      const deadline = setTimeout(() => {
        timers.delete(deadline)
        void created.kill().catch(() => undefined).then(() => setPod(pod, "Failed", { reason: "DeadlineExceeded", exitCode: 137 }))
      }, deadlineSeconds * 1000)
      timers.add(deadline)
    }
    const exit = await created.wait().catch(() => ({ StatusCode: 137 }))
    const current = stores.pods.get(key(namespace, pod.metadata!.name!)) as V1Pod | undefined
    if (current?.status?.phase === "Running") setPod(pod, exit.StatusCode === 0 ? "Succeeded" : "Failed", { exitCode: exit.StatusCode })
  }

  /** One exec: a `docker exec` in the pod's container, its streams on the WebSocket's channels. */
  const exec = async (ws: WebSocket, podUid: string, url: URL) => {
    const send = (channel: number, data: Buffer) => ws.readyState === ws.OPEN && ws.send(Buffer.concat([Buffer.from([channel]), data]))
    // What the client sends before the exec has started is kept for it.
    const early: Array<Buffer> = []
    const keep = (data: Buffer) => early.push(data)
    ws.on("message", keep)
    const [info] = await containersOf(podUid)
    const withStdin = url.searchParams.get("stdin") === "true"
    try {
      if (info === undefined) throw new Error("the pod has no container")
      const execution = await docker.getContainer(info.Id).exec({
        Cmd: url.searchParams.getAll("command"),
        AttachStdin: withStdin,
        AttachStdout: true,
        AttachStderr: true
      })
      const stream = await execution.start({ hijack: true, stdin: withStdin })
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
        void drained.then(() => execution.inspect()).then(({ ExitCode }) => {
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
    void run(pod, job.spec?.activeDeadlineSeconds)
    return job
  }

  const watch = (kind: Kind, request: IncomingMessage, response: ServerResponse, url: URL, namespace: string) => {
    const from = Number(url.searchParams.get("resourceVersion") ?? "0")
    const selector = url.searchParams.get("labelSelector")
    response.writeHead(200, { "content-type": "application/json" })
    if (from > 0 && from < oldestKept) {
      response.end(`${JSON.stringify({ type: "ERROR", object: status(410, "Expired", `too old resource version: ${from} (${oldestKept})`) })}\n`)
      return
    }
    response.flushHeaders()
    const send = (event: WatchEvent) => {
      if (event.object.metadata?.namespace !== namespace || !matches(event.object.metadata?.labels, selector)) return
      response.write(`${JSON.stringify({ type: event.type, object: event.object })}\n`)
    }
    if (from > 0) for (const event of history[kind]) if (event.version > from) send(event)
    watchers[kind].add(send)
    request.on("close", () => watchers[kind].delete(send))
  }

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1")
    const match = /^\/(?:api\/v1|apis\/batch\/v1)\/namespaces\/([^/]+)\/(jobs|pods|secrets)(?:\/([^/]+))?$/.exec(url.pathname)
    if (match === null) return json(response, 404, status(404, "NotFound", `${url.pathname} is not served by the double`))
    const [, namespace, kind, name] = match as unknown as [string, string, Kind, string | undefined]
    const method = request.method ?? "GET"
    if (name === undefined && method === "GET") {
      if (url.searchParams.get("watch") === "true") return watch(kind, request, response, url, namespace)
      const selector = url.searchParams.get("labelSelector")
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
      put(kind, body, "ADDED")
      return json(response, 201, body)
    }
    const found = name === undefined ? undefined : stores[kind].get(key(namespace, name))
    if (found === undefined) return json(response, 404, status(404, "NotFound", `${kind} "${name}" not found`))
    if (method === "GET") return json(response, 200, found)
    if (method === "DELETE") return json(response, 200, remove(kind, namespace, name!))
    if (method === "PATCH") {
      const patch = (await readBody(request)) as Partial<AnyObject>
      found.metadata = { ...found.metadata, ...patch.metadata }
      put(kind, found, "MODIFIED")
      return json(response, 200, found)
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
    sockets.handleUpgrade(request, socket, head, (ws) => void exec(ws, pod.metadata!.uid!, url))
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
      oldestKept = version + 1
      for (const kind of ["jobs", "pods", "secrets"] as const) history[kind].length = 0
    },
    close: async () => {
      for (const timer of timers) clearTimeout(timer)
      for (const client of sockets.clients) client.terminate()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      for (const pod of stores.pods.values()) track(removeContainer(pod.metadata!.uid!))
      await Promise.all([...removals])
      // A container still being created when its pod went: by the label of the double.
      for (const info of await docker.listContainers({ all: true, filters: { label: [CONTAINER_LABEL] } }).catch(() => [])) {
        if (!known.has(info.Labels[CONTAINER_LABEL] ?? "")) continue
        await docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined)
      }
    }
  }
}
