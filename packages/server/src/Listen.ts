/**
 * The service standalone on Node's HTTP server: `AgentRuns.layer(options).pipe(Layer.provide…)`
 * is what a host written with Effect launches; `listen` serves its app on a port.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Server } from "@agent-runs/http"
import { Layer } from "effect"
import { createServer } from "node:http"
import * as AgentRuns from "./AgentRuns.js"

export interface ListenOptions {
  /** The port (0: any free one). */
  readonly port: number
  /** The address to listen on (127.0.0.1). */
  readonly host?: string | undefined
}

/**
 * Serves the service's app of the context on Node's HTTP server, started (`Server.started`): the
 * service of the context is built, so its start-up work is done before the port opens.
 */
export const serve = (listen: ListenOptions) =>
  Server.serveApp.pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: listen.port, host: listen.host ?? "127.0.0.1" })),
    Layer.provideMerge(Layer.effectDiscard(Server.started))
  )

/** The whole service, listening: launch it with `Layer.launch`. */
export const layer = <ES, EB, EX>(options: AgentRuns.AgentRunsOptions<ES, EB, EX>, listen: ListenOptions) =>
  serve(listen).pipe(Layer.provide(AgentRuns.layer(options)))
