/**
 * bench/http's Effect 4 floor (issue 34): the Effect 3 floor of bench/support/floor.ts
 * (`startEffectFloor`) written with Effect 4, run as a worker thread of bench/http. This file
 * sits in bench/effect4/ so that Node resolves `effect` and `@effect/platform-node` from
 * bench/effect4/node_modules (`npm ci --prefix bench/effect4`), never the workspace's Effect 3; it
 * checks that before it starts. Same routes, same bodies (`workerData.routes`, as
 * bench/support/floor.ts gives Effect 3's floor: method, router pattern, status, body; a POST's
 * JSON body is read first), no application code: Effect 4's router (`effect/http`) served by
 * @effect/platform-node 4's NodeHttpServer, without the request logger (Effect 3's
 * `HttpServer.serve` has none). Posts its port to the parent once it listens on 127.0.0.1.
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

const routes = Layer.mergeAll(...workerData.routes.map((route) => {
  const response = HttpServerResponse.text(route.body, { status: route.status, contentType: "application/json" })
  return route.method === "GET"
    ? HttpRouter.add("GET", route.pattern, Effect.succeed(response))
    : HttpRouter.add(route.method, route.pattern, (request) =>
      request.json.pipe(
        Effect.as(response),
        Effect.orElseSucceed(() => HttpServerResponse.empty({ status: 400 }))
      ))
}))
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
