/**
 * The floors the HTTP benchmarks measure beside the service (bench/http, bench/ingress): servers on
 * a worker thread of the script (as the server under test has its own process) that answer the
 * same routes with recorded bodies and no application code at all: no authentication, storage,
 * validation or encoding.
 *
 * - `startEffectFloor`: the HTTP stack the service is built on, Effect 3's (@effect/platform-node's
 *   server with @effect/platform's router, as the service uses them). What it costs over bare
 *   node:http is a cost no request of ours can go below: the issue 34 goals are ours as a share of
 *   its requests/s.
 * - `startBareRoutes`: bare node:http answering the same routes (matched on the request's path).
 *
 * Both read and parse a POST's JSON body (a 400 if it is not JSON) before they answer.
 */
import { startBare } from "./load.js"

/** One route a floor answers: always `status` with `body` (JSON). */
export interface FloorRoute {
  readonly method: "GET" | "POST"
  /** The router's pattern, e.g. "/api/v1/agent/runs/:run_id" (Effect 3's and Effect 4's routers). */
  readonly pattern: string
  /** A path it matches, without the query, e.g. "/api/v1/agent/runs/0194…" (the bare server's key). */
  readonly path: string
  readonly status: number
  readonly body: string
}

/** What the floors' workers are given. */
export interface FloorData {
  readonly routes: ReadonlyArray<FloorRoute>
}

/**
 * Effect 3's floor: @effect/platform's router with one route per `workerData.routes`, served by
 * @effect/platform-node's NodeHttpServer on 127.0.0.1; a POST's body is read as JSON first.
 */
const EFFECT_FLOOR_SERVER = `
const { parentPort, workerData } = require("node:worker_threads")
const http = require("node:http")
const { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } = require("@effect/platform")
const { NodeHttpServer } = require("@effect/platform-node")
const { Effect, Layer } = require("effect")
let router = HttpRouter.empty
for (const route of workerData.routes) {
  const response = HttpServerResponse.text(route.body, { status: route.status, contentType: "application/json" })
  router = route.method === "GET"
    ? HttpRouter.get(router, route.pattern, Effect.succeed(response))
    : HttpRouter.post(
      router,
      route.pattern,
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => request.json).pipe(
        Effect.as(response),
        Effect.orElseSucceed(() => HttpServerResponse.empty({ status: 400 }))
      )
    )
}
const server = http.createServer()
server.keepAliveTimeout = 60000
server.once("listening", () => parentPort.postMessage(server.address().port))
Effect.runFork(Layer.launch(HttpServer.serve(router).pipe(
  Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" }))
)))
`

/** Bare node:http: the route of the request's method and path (the query ignored), else a 404. */
const BARE_SERVER = `
const { parentPort, workerData } = require("node:worker_threads")
const http = require("node:http")
const routes = new Map(workerData.routes.map((route) => [route.method + " " + route.path, route]))
const server = http.createServer((req, res) => {
  const chunks = []
  req.on("data", (chunk) => chunks.push(chunk))
  req.on("end", () => {
    const query = req.url.indexOf("?")
    const route = routes.get(req.method + " " + (query === -1 ? req.url : req.url.slice(0, query)))
    if (route === undefined) {
      res.writeHead(404, { "content-length": 0 })
      return res.end()
    }
    if (req.method === "POST") {
      try {
        JSON.parse(Buffer.concat(chunks).toString("utf8"))
      } catch {
        res.writeHead(400, { "content-length": 0 })
        return res.end()
      }
    }
    res.writeHead(route.status, { "content-type": "application/json", "content-length": Buffer.byteLength(route.body) })
    res.end(route.body)
  })
})
server.keepAliveTimeout = 60000
server.listen(0, "127.0.0.1", () => parentPort.postMessage(server.address().port))
`

const data = (routes: ReadonlyArray<FloorRoute>): FloorData => ({ routes })

/** Effect 3's floor answering `routes`, on a worker thread for the scope. */
export const startEffectFloor = (routes: ReadonlyArray<FloorRoute>) => startBare(EFFECT_FLOOR_SERVER, data(routes))

/** Bare node:http answering `routes`, on a worker thread for the scope. */
export const startBareRoutes = (routes: ReadonlyArray<FloorRoute>) => startBare(BARE_SERVER, data(routes))

/**
 * Another floor's script file (bench/effect4/server.mjs) answering `routes` the same way, run from
 * its own directory (so it resolves its own node_modules).
 */
export const startFloorFile = (file: URL, routes: ReadonlyArray<FloorRoute>) => startBare(file, data(routes))

/** Ours as a share of a floor's requests/s, in words ("3.1% of the floor"). */
export const shareText = (ours: number, floor: number) =>
  `${floor > 0 ? ((100 * ours) / floor).toFixed(ours / floor < 0.1 ? 2 : 1) : "?"}% of the floor`
