/**
 * `agent-runs audit list|export`: the audit log through the HTTP API (docs/audit.md): the team's
 * for its admins, the whole log with `--all` for instance administrators.
 */
import { Command, Options } from "@effect/cli"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { AgentRunsClient } from "@agent-runs/client"
import { Console, Data, Effect, Option, Redacted, Stream } from "effect"
import * as Format from "../Format.js"
import * as Connection from "./Connection.js"

/** The export refused: the problem's message and code (Failure.ts maps the code to the exit code). */
export class ExportRefused extends Data.TaggedError("ExportRefused")<{ readonly message: string; readonly errorCode: string }> {}

const filter = (name: string, description: string) =>
  Options.text(name).pipe(Options.optional, Options.withDescription(description))

const filters = {
  since: filter("since", "entries at or after this time (RFC 3339)"),
  until: filter("until", "entries before this time (RFC 3339)"),
  action: filter("action", "entries of this action, e.g. secret.put"),
  principal: filter("principal", "entries of this actor (a principal uid)"),
  outcome: filter("outcome", "succeeded, denied or failed"),
  all: Options.boolean("all").pipe(
    Options.withDescription("every team's log and the instance's (instance administrators; /admin/audit-log)")
  )
}

type Filters = { readonly [K in Exclude<keyof typeof filters, "all">]: Option.Option<string> }

/** The query parameters the filters set. */
const paramsOf = (options: Filters): Record<string, string> => {
  const params: Record<string, string> = {}
  const set = (name: string, value: Option.Option<string>) => Option.map(value, (v) => (params[name] = v))
  set("since", options.since)
  set("until", options.until)
  set("action", options.action)
  set("principal_uid", options.principal)
  set("outcome", options.outcome)
  return params
}

const list = Command.make(
  "list",
  {
    ...Connection.options,
    ...filters,
    limit: Options.integer("limit").pipe(Options.withDefault(50), Options.withDescription("at most this many entries (1 to 500), newest first"))
  },
  (options) =>
    Effect.gen(function*() {
      const client = yield* AgentRunsClient.AgentRunsClient
      const urlParams = { ...paramsOf(options), limit: String(options.limit) }
      const page = options.all
        ? yield* client.audit.listInstanceAuditLog({ urlParams })
        : yield* client.audit.listAuditLog({ urlParams, headers: {} })
      yield* Console.log(
        page.entries.length === 0 ? "no entries" : Format.table(
          ["AT", "ACTOR", "ACTION", "RESOURCE", "OUTCOME", "FROM"],
          page.entries.map((e) => [
            Format.date(e.at),
            e.actor.display_name ?? e.actor.principal_uid ?? "-",
            e.action,
            e.resource.id ?? "-",
            e.error_code === null ? e.outcome : `${e.outcome} (${e.error_code})`,
            e.origin.address ?? "-"
          ])
        )
      )
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("The newest entries of the team's audit log (team admins), or of the whole log with --all."))

const exportCommand = Command.make("export", { ...Connection.options, ...filters }, (options) =>
  Effect.gen(function*() {
    const path = options.all ? "/api/v1/admin/audit-log/export" : "/api/v1/agent/audit-log/export"
    const url = new URL(path, options.server.replace(/\/+$/, "") + "/")
    for (const [name, value] of Object.entries(paramsOf(options))) url.searchParams.set(name, value)
    const request = HttpClientRequest.get(url).pipe(
      HttpClientRequest.bearerToken(Redacted.value(options.token)),
      Option.match(options.team, { onNone: () => (r) => r, onSome: (team) => HttpClientRequest.setHeader("x-team-uid", team) })
    )
    const response = yield* HttpClient.execute(request)
    if (response.status !== 200) {
      const problem = (yield* response.json.pipe(Effect.orElseSucceed(() => ({})))) as { error?: unknown; error_code?: unknown }
      return yield* new ExportRefused({
        message: typeof problem.error === "string" ? problem.error : `the server answered ${response.status}`,
        errorCode: typeof problem.error_code === "string" ? problem.error_code : "internal_error"
      })
    }
    yield* Stream.runForEach(response.stream, (chunk) => Effect.sync(() => process.stdout.write(chunk)))
  }).pipe(Effect.scoped, Effect.provide(FetchHttpClient.layer))
).pipe(Command.withDescription("Every entry the filters select, oldest first, as JSON lines on standard output."))

/** `agent-runs audit …`. */
export const auditCommand = Command.make("audit").pipe(
  Command.withDescription("The audit log: who did what, when, from where (docs/audit.md)."),
  Command.withSubcommands([list, exportCommand])
)
