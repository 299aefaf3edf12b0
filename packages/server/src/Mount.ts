/**
 * The service inside a host's app, for hosts that are not written with Effect: `mount(options)`
 * builds `AgentRuns.layer(options)` once and hands back a Node handler (`node:http`, Express,
 * Fastify, Koa…) and a `fetch` handler (Hono, and any host speaking web `Request`/`Response`).
 *
 * Decisions:
 * - The mount prefix is the path of `publicUrl`: `publicUrl: "http://localhost:3000/agents"`
 *   answers `/agents/api/v1/…`, `/agents/docs`, `/agents/healthz`. A host may strip the prefix
 *   itself (Express's `app.use("/agents", handler)`) or not (a bare `node:http` server); both work.
 * - Options a host forgot or got wrong are refused before anything starts, in one line naming the
 *   option; without `adminToken` a warning says that nobody can call the API yet.
 * - Mounted after a body parser that already read a request's body, the service answers that
 *   request 500 saying so, instead of waiting for a body that will not come.
 * - The service reads request bodies itself: mount it before a host's body parsers (Express's
 *   `express.json()`), or in Fastify from an `onRequest` hook (see the examples).
 * - `close()` stops the service (its loops, its storage connections); the host closes its server.
 */
import { HttpApp } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Server } from "@agent-runs/http"
import { Cause, Effect, Layer, ManagedRuntime, Redacted } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as AgentRuns from "./AgentRuns.js"

/** A Node request handler; Express's `next` is accepted and never called (the service answers every request it gets). */
export type NodeHandler = (request: IncomingMessage, response: ServerResponse, next?: unknown) => void

/** The service running inside a host. */
export interface Mounted {
  /** The prefix requests are answered under (`""` at the root). */
  readonly basePath: string
  /** For `node:http`, Express, Fastify (`reply.hijack()` then `handler(request.raw, reply.raw)`). */
  readonly handler: NodeHandler
  /** For Hono and other web-standard hosts. */
  readonly fetch: (request: Request) => Promise<Response>
  /** Whether a path is the service's (starts with the prefix). */
  readonly owns: (path: string | undefined) => boolean
  /** Stops the service. */
  readonly close: () => Promise<void>
}

/** An option a host left out or got wrong: the service does not start. */
export class InvalidOptions extends Error {
  override readonly name = "InvalidOptions"
}

const required: ReadonlyArray<readonly [string, string]> = [
  ["storage", "a storage layer, e.g. SqliteStorage.layer({ filename, secretKey }) or PgStorage.layer({ url, secretKey })"],
  ["blobs", "a blob store layer, e.g. FileBlobStore.layer({ root })"],
  ["secretKey", "32 bytes (a Uint8Array) that sign run tokens and download URLs"],
  ["publicUrl", "the URL clients reach the service at, with the mount prefix, e.g. http://localhost:3000/agents"]
]

/** Refuses options without a required piece or with a wrong one, naming it (for callers the type checker did not see). */
export const checkOptions = (options: Partial<AgentRuns.AgentRunsOptions<unknown, unknown, unknown>>): void => {
  for (const [name, what] of required) {
    if ((options as Record<string, unknown>)[name] === undefined) {
      throw new InvalidOptions(`Agent Runs: options.${name} is required: ${what}`)
    }
  }
  if (typeof options.publicUrl !== "string" || !URL.canParse(options.publicUrl)) {
    throw new InvalidOptions(
      `Agent Runs: options.publicUrl must be an absolute URL such as http://localhost:3000/agents, not ${options.publicUrl}`
    )
  }
  const key = options.secretKey
  if (!(key instanceof Uint8Array) && !Redacted.isRedacted(key)) {
    throw new InvalidOptions(`Agent Runs: options.secretKey must be 32 bytes in a Uint8Array (for example Buffer.from(hex, "hex")), not a ${typeof key}`)
  }
  if (key instanceof Uint8Array && key.length !== 32) {
    throw new InvalidOptions(`Agent Runs: options.secretKey must be 32 bytes, not ${key.length}`)
  }
}

/** Whether the service was mounted after a body parser that already read the request's body. */
const bodyTaken = (request: IncomingMessage) =>
  (request as { body?: unknown }).body !== undefined || (request.readableEnded && request.method !== "GET" && request.method !== "HEAD")

/** The service's app as a Node handler (for hosts written with Effect). */
export const nodeHandler = Effect.flatMap(Server.App, (app) => NodeHttpServer.makeHandler(app))

/** One readable line for a start-up failure (no stack trace). */
const startupFailure = (cause: Cause.Cause<unknown>) => {
  const failure = Cause.squash(cause)
  const message = failure instanceof Error ? failure.message : String(failure)
  return new Error(`Agent Runs could not start: ${message}`)
}

/** Starts the service for a host app; resolves once it is ready to answer. */
export const mount = async <ES, EB, EX>(options: AgentRuns.AgentRunsOptions<ES, EB, EX>): Promise<Mounted> => {
  checkOptions(options as Partial<AgentRuns.AgentRunsOptions<unknown, unknown, unknown>>)
  const basePath = AgentRuns.basePathOf(options.publicUrl)
  const runtime = ManagedRuntime.make(AgentRuns.layer(options).pipe(Layer.provideMerge(NodeHttpServer.layerContext)))
  // Built: storage migrated, `adminToken` ensured; so the service has started.
  const started = await runtime.runPromiseExit(
    Effect.all({ app: Server.App, handler: nodeHandler, context: runtime.runtimeEffect }).pipe(Effect.zipLeft(Server.started))
  )
  if (started._tag === "Failure") {
    await runtime.dispose()
    throw startupFailure(started.cause)
  }
  const { app, context, handler } = started.value
  if (options.adminToken === undefined) {
    console.warn("Agent Runs: no options.adminToken: the API answers 401 until a token exists (give adminToken to get one)")
  }
  const owns = (path: string | undefined) =>
    path !== undefined &&
    (basePath === "" || path === basePath || path.startsWith(`${basePath}/`) || path.startsWith(`${basePath}?`))
  return {
    basePath,
    handler: (request, response) => {
      if (!bodyTaken(request)) return handler(request, response)
      // A body parser of the host read the body first: the service could only hang waiting for it.
      response.writeHead(500, { "content-type": "text/plain; charset=utf-8" }).end(
        "Agent Runs is mounted after a body parser that read this request's body: mount it before (for example before express.json())\n"
      )
    },
    fetch: HttpApp.toWebHandlerRuntime(context)(app),
    owns,
    close: () => runtime.dispose()
  }
}
