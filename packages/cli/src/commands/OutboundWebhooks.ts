/**
 * `agent-runs outbound-webhooks list|create|deliveries|redeliver`: a team's outbound webhooks
 * (docs/outbound-webhooks.md) through the HTTP API, for its admins. `create` prints the endpoint's
 * uid and its signing secret, shown this once (or, with `--secret-name`, the team secret it signs with); `redeliver` queues one delivery again, or with
 * `--since` every failed one since a time.
 */
import { Args, Command, Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import { Ids, OutboundWebhook } from "@agent-runs/core"
import { Console, DateTime, Effect, Option, Schema } from "effect"
import * as Failure from "../Failure.js"
import * as Format from "../Format.js"
import * as Connection from "./Connection.js"
import * as IdArgs from "./Ids.js"

const json = Options.boolean("json").pipe(Options.withDescription("print NDJSON: one item per line, as the API sends it"))
const endpointUid = Args.text({ name: "ENDPOINT_UID" }).pipe(Args.withDescription("the outbound webhook's uid"))
const decodeUid = IdArgs.decode(Ids.OutboundWebhookUid, "outbound webhook uid")

/** A date-time with its zone or offset, as `--since` takes it. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/

const list = Command.make("list", { ...Connection.options, json }, (options) =>
  Effect.gen(function*() {
    const client = yield* AgentRunsClient.AgentRunsClient
    const { outbound_webhooks: endpoints } = yield* client.outboundWebhooks.listOutboundWebhooks({ headers: {} })
    if (options.json) {
      return yield* Effect.forEach(endpoints, (e) => Console.log(JSON.stringify(Schema.encodeSync(OutboundWebhook.OutboundWebhook)(e))), {
        discard: true
      })
    }
    yield* Console.log(
      endpoints.length === 0 ? "no outbound webhooks" : Format.table(
        ["ENDPOINT UID", "NAME", "STATUS", "EVENTS", "URL"],
        endpoints.map((e) => [
          e.uid,
          e.name ?? "-",
          e.enabled ? "on" : e.disabled_reason === null ? "off" : "turned off: failing",
          e.events.join(","),
          e.url
        ])
      )
    )
  }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(Command.withDescription("List the team's outbound webhooks."))

const create = Command.make(
  "create",
  {
    ...Connection.options,
    url: Options.text("url").pipe(Options.withDescription("where deliveries are POSTed (http or https)")),
    events: Options.choice("event", OutboundWebhook.OutboundEventType.literals).pipe(
      Options.repeated,
      Options.withDescription("an event type to send (repeat for more)")
    ),
    description: Options.text("description").pipe(Options.optional, Options.withDescription("what the endpoint is for")),
    name: Options.text("name").pipe(Options.optional, Options.withDescription("a name, unique in the team")),
    secretName: Options.text("secret-name").pipe(
      Options.optional,
      Options.withDescription("sign with this team secret's value (a Standard Webhooks secret, whsec_…) instead of a generated one")
    )
  },
  (options) =>
    Effect.gen(function*() {
      if (options.events.length === 0) return yield* new Failure.UsageError({ message: "name at least one --event" })
      // Checked before anything is sent: a malformed URL or description is a usage error (exit 2).
      const payload = yield* Schema.decodeUnknown(OutboundWebhook.CreateOutboundWebhookRequest)({
        url: options.url,
        events: options.events,
        description: Option.getOrElse(options.description, () => ""),
        name: Option.getOrNull(options.name),
        secret_name: Option.getOrNull(options.secretName)
      }).pipe(Effect.mapError((error) => new Failure.UsageError({ message: IdArgs.problemOf(error) })))
      const client = yield* AgentRunsClient.AgentRunsClient
      const created = yield* client.outboundWebhooks.createOutboundWebhook({ headers: {}, payload })
      yield* Console.log(
        created.secret === "" ? `${created.uid}\nsigning with team secret ${created.secret_name}` : `${created.uid}\nsecret: ${created.secret} (shown this once)`
      )
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("Add an outbound webhook; prints its uid and its signing secret, shown this once (or the team secret it signs with)."))

const deliveries = Command.make(
  "deliveries",
  {
    ...Connection.options,
    uid: endpointUid,
    state: Options.choice("state", OutboundWebhook.OutboundDeliveryState.literals).pipe(
      Options.optional,
      Options.withDescription("only deliveries in this state")
    ),
    limit: Options.integer("limit").pipe(
      Options.withSchema(Schema.Int.pipe(Schema.between(1, 100))),
      Options.withDefault(20),
      Options.withDescription("at most this many deliveries, newest first (1 to 100, default 20)")
    ),
    json
  },
  (options) =>
    Effect.gen(function*() {
      const uid = yield* decodeUid(options.uid)
      const client = yield* AgentRunsClient.AgentRunsClient
      const page = yield* client.outboundWebhooks.listOutboundDeliveries({
        headers: {},
        path: { uid },
        urlParams: { limit: options.limit, ...Option.match(options.state, { onNone: () => ({}), onSome: (state) => ({ state }) }) }
      })
      if (options.json) {
        return yield* Effect.forEach(page.deliveries, (d) => Console.log(JSON.stringify(Schema.encodeSync(OutboundWebhook.OutboundDelivery)(d))), {
          discard: true
        })
      }
      yield* Console.log(
        page.deliveries.length === 0 ? "no deliveries" : Format.table(
          ["DELIVERY ID", "CREATED", "EVENT", "RUN", "STATE", "TRIES", "LAST"],
          page.deliveries.map((d) => [
            d.delivery_id,
            Format.date(d.created_at),
            d.event_type,
            d.run_id,
            d.state,
            String(d.attempts),
            d.last_status === null ? d.last_error ?? "-" : String(d.last_status)
          ])
        )
      )
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("An outbound webhook's deliveries, newest first: a table, or NDJSON with --json."))

const redeliver = Command.make(
  "redeliver",
  {
    ...Connection.options,
    uid: endpointUid,
    delivery: Args.text({ name: "DELIVERY_ID" }).pipe(Args.optional, Args.withDescription("the delivery to send again")),
    since: Options.text("since").pipe(
      Options.optional,
      Options.withDescription("instead: every failed delivery created at or after this time (ISO 8601)")
    )
  },
  (options) =>
    Effect.gen(function*() {
      const uid = yield* decodeUid(options.uid)
      const client = yield* AgentRunsClient.AgentRunsClient
      if (Option.isSome(options.delivery) === Option.isSome(options.since)) {
        return yield* new Failure.UsageError({ message: "give either a DELIVERY_ID or --since" })
      }
      if (Option.isSome(options.delivery)) {
        const id = yield* IdArgs.decode(Ids.OutboundDeliveryId, "delivery id")(options.delivery.value)
        const answer = yield* client.outboundWebhooks.redeliverOutboundDelivery({ headers: {}, path: { uid, delivery_id: id } })
        return yield* Console.log(answer.redelivered === 0 ? `${id} is still queued` : `queued ${id} again`)
      }
      const text = Option.getOrThrow(options.since)
      const since = ISO_INSTANT.test(text) ? DateTime.make(text) : Option.none()
      if (Option.isNone(since)) {
        return yield* new Failure.UsageError({ message: `--since: not an ISO 8601 date-time with a zone (2026-12-01T00:00:00Z): ${text}` })
      }
      const answer = yield* client.outboundWebhooks.redeliverOutboundWebhook({
        headers: {},
        path: { uid },
        payload: OutboundWebhook.RedeliverRequest.make({ since: DateTime.toUtc(since.value) })
      })
      yield* Console.log(`queued ${answer.redelivered} failed deliveries again`)
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("Send one delivery again, or with --since every failed one since then."))

/** `agent-runs outbound-webhooks …`. */
export const outboundWebhooksCommand = Command.make("outbound-webhooks").pipe(
  Command.withDescription("A team's outbound webhooks (its admins): endpoints told of its runs' events, and their deliveries."),
  Command.withSubcommands([list, create, deliveries, redeliver])
)
