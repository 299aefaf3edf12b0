/** `agent-runs webhooks list|deliveries`: a team's webhooks and their delivery logs through the HTTP API. */
import { Args, Command, Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import { Ids, Webhook } from "@agent-runs/core"
import { Chunk, Console, Effect, Schema, Stream } from "effect"
import * as Format from "../Format.js"
import * as Connection from "./Connection.js"
import * as IdArgs from "./Ids.js"

const json = Options.boolean("json").pipe(Options.withDescription("print NDJSON: one item per line, as the API sends it"))

const list = Command.make("list", { ...Connection.options, json }, (options) =>
  Effect.gen(function*() {
    const client = yield* AgentRunsClient.AgentRunsClient
    const { webhooks } = yield* client.webhooks.listWebhooks({ headers: {} })
    if (options.json) {
      return yield* Effect.forEach(
        webhooks,
        (w) => Console.log(JSON.stringify(Schema.encodeSync(Webhook.Webhook)(w))),
        { discard: true }
      )
    }
    yield* Console.log(
      webhooks.length === 0 ? "no webhooks" : Format.table(
        ["WEBHOOK UID", "ENABLED", "AUTH", "NAME", "INGRESS URL"],
        webhooks.map((w) => [w.uid, w.enabled ? "yes" : "no", w.auth_mode, w.name, w.ingress_url])
      )
    )
  }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(Command.withDescription("List the team's webhooks."))

const deliveries = Command.make(
  "deliveries",
  {
    ...Connection.options,
    uid: Args.text({ name: "WEBHOOK_UID" }).pipe(Args.withDescription("the webhook's uid")),
    limit: Options.integer("limit").pipe(
      Options.withSchema(Schema.Int.pipe(Schema.between(1, 10_000))),
      Options.withDefault(20),
      Options.withDescription("at most this many deliveries, newest first (default 20)")
    ),
    json
  },
  (options) =>
    Effect.gen(function*() {
      const uid = yield* IdArgs.decode(Ids.WebhookUid, "webhook uid")(options.uid)
      const client = yield* AgentRunsClient.AgentRunsClient
      const stream = client.streamWebhookDeliveries(uid, { limit: Math.min(options.limit, 100) }).pipe(Stream.take(options.limit))
      if (options.json) {
        return yield* Stream.runForEach(stream, (d) => Console.log(JSON.stringify(Schema.encodeSync(Webhook.Delivery)(d))))
      }
      const all = Chunk.toReadonlyArray(yield* Stream.runCollect(stream))
      yield* Console.log(
        all.length === 0 ? "no deliveries" : Format.table(
          ["DELIVERY ID", "RECEIVED", "OUTCOME", "BYTES", "RUNS"],
          all.map((d) => [d.delivery_id, Format.date(d.received_at), d.outcome, String(d.size_bytes), d.run_ids.join(",") || "-"])
        )
      )
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("A webhook's delivery log, newest first: a table, or NDJSON with --json."))

/** `agent-runs webhooks …`. */
export const webhooksCommand = Command.make("webhooks").pipe(
  Command.withDescription("A team's webhooks and their deliveries."),
  Command.withSubcommands([list, deliveries])
)
