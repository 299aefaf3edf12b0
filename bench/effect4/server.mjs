/**
 * bench/http's Effect 4 floor (issue 34): the Effect 3 floor of bench/http/run.ts
 * (EFFECT_FLOOR_SERVER) written with Effect 4, run as a worker thread of that script. This file
 * sits in bench/effect4/ so that Node resolves `effect` and `@effect/platform-node` from
 * bench/effect4/node_modules (`npm ci --prefix bench/effect4`), never the workspace's Effect 3; it
 * checks that before it starts. Same requests, same bodies (`workerData.get`, `workerData.post`),
 * no application code: Effect 4's router (`effect/http`) served by @effect/platform-node 4's
 * NodeHttpServer, without the request logger (Effect 3's `HttpServer.serve` has none). Posts its
 * port to the parent once it listens on 127.0.0.1.
 */
import { createServer } from "node:http"
import { setImmediate } from "node:timers"
import { fileURLToPath, URL } from "node:url"
import { parentPort, workerData } from "node:worker_threads"

const own = new URL("./node_modules/", import.meta.url).href
for (const specifier of ["effect", "@effect/platform-node/NodeHttpServer"]) {
  const resolved = import.meta.resolve(specifier)
  if (!resolved.startsWith(own)) {
    throw new Error(`${specifier} resolves to ${fileURLToPath(resolved)}, not bench/effect4/node_modules: run npm ci --prefix bench/effect4`)
  }
}

const { Effect, Layer } = await import("effect")
const { HttpRouter, HttpServerResponse } = await import("effect/http")
// The module, not the package's index: the index also loads NodeRedis, whose peer `redis` is not
// installed (bench/effect4/.npmrc).
const NodeHttpServer = await import("@effect/platform-node/NodeHttpServer")

const json = (body) => HttpServerResponse.text(body, { contentType: "application/json" })
const routes = Layer.mergeAll(
  HttpRouter.add("GET", "/api/v1/agent/runs", Effect.succeed(json(workerData.get))),
  HttpRouter.add("POST", "/api/v1/agent/runs", (request) =>
    request.json.pipe(
      Effect.as(json(workerData.post)),
      Effect.orElseSucceed(() => HttpServerResponse.empty({ status: 400 }))
    ))
)
const server = createServer()
server.keepAliveTimeout = 60000
server.once("listening", () => parentPort.postMessage(server.address().port))
Effect.runPromise(Layer.launch(
  HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" }))
  )
)).catch((error) => {
  // Not started (or stopped by a failure): the worker's error, which the parent reports.
  setImmediate(() => {
    throw error
  })
})
