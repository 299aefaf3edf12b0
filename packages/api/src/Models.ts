/**
 * Wire shapes that exist only at the HTTP edge: responses the API names without fields
 * (follow-up, run by external reference, deletes) and the query strings of list endpoints.
 *
 * Decisions (docs/decisions.md, "HTTP"):
 * - `POST /agent/runs/{runId}/followups` answers `{run_id, state, execution_count, route}`, where
 *   `route` says what happened to the message (core's `FollowupRoute`): `store_for_start`
 *   (queued or claimed run), `deliver_live` (INPROGRESS), `new_execution` (ended run continued),
 *   `debug_session` (failed setup inside its debug window).
 * - `GET /agent/run-by-external-reference` answers `{run_id, run}` (the RunItem).
 * - Every DELETE answers `{success: true}`, as schedule deletion does in the published SDK.
 * - The run list's query is documented here but validated by core's `parseRunListQuery` on the
 *   raw query string: every parameter is accepted by HttpApi as a string (or repeated strings),
 *   so the 400s name the field in core's words. `metadata[<key>]` keys (deepObject) are not
 *   properties of this schema; the document describes them as one `metadata` deepObject
 *   parameter.
 * - `GET /agent/run-counts` takes the run list's query (the same schema without `limit`,
 *   `cursor`, `sort_by` and `sort_order`) and is validated by core the same way.
 * - `GET /agent/runs/{runId}/transcript-link` answers `{url, expires_at}`: the URL the transcript's
 *   302 sends to, for clients that cannot follow a redirect across origins (the web dashboard).
 * - Delivery logs page with `limit` (core's `Webhooks.DELIVERY_PAGE_LIMIT`: 1–100, default 20) and the
 *   `cursor` of the previous page.
 */
import { Budgets, Common, Followups, Identity, Ids, OutboundWebhook, Run, RunOverview, RunQuery, RunState, Webhooks } from "@agent-runs/core"
import { Schema, Struct } from "effect"

/** `POST /agent/runs/{runId}/followups`: accepted (core's model). */
export const RunFollowupResponse = Followups.RunFollowupResponse

/** `GET /agent/run-by-external-reference`. */
export class RunByExternalReferenceResponse extends Schema.Class<RunByExternalReferenceResponse>(
  "RunByExternalReferenceResponse"
)({
  run_id: Ids.RunId,
  run: Run.RunItem
}) {}

/** The body of every DELETE. */
export class DeleteResponse extends Schema.Class<DeleteResponse>("DeleteResponse")({
  success: Schema.Literal(true)
}) {}

const StringOrRepeated = Schema.Union(Schema.String, Schema.Array(Schema.String))

/** A query parameter taken as text (validated later), documented with `jsonSchema`. */
const textParam = (description: string, jsonSchema: Record<string, unknown>) =>
  Schema.optional(StringOrRepeated.annotations({ jsonSchema: { ...jsonSchema, description } }))

const enumOf = (literals: ReadonlyArray<string>) => ({ type: "string", enum: [...literals] })
const dateTime = { type: "string", format: "date-time" }
const text = { type: "string" }

/**
 * Every other query parameter, as given (`metadata[<key>]`, and unknown ones, which core ignores):
 * the decoded query is the whole query string, so the handler never reads the URL again.
 */
const OtherParams = Schema.Record({ key: Schema.String, value: StringOrRepeated })

/**
 * The `GET /agent/runs` query: each parameter as text, once (a string) or repeated (an array), as
 * core's `parseRunListQuery` takes it, which validates it (documented here).
 */
const runListParams = {
  limit: textParam(`page size, ${RunQuery.RUN_LIST_LIMIT.min} to ${RunQuery.RUN_LIST_LIMIT.max}`, {
    type: "integer",
    minimum: RunQuery.RUN_LIST_LIMIT.min,
    maximum: RunQuery.RUN_LIST_LIMIT.max,
    default: RunQuery.RUN_LIST_LIMIT.default
  }),
  cursor: textParam("the next_cursor of the previous page, with the same filters and sort", text),
  sort_by: textParam(
    "`agent` sorts by skill name, runs without a skill last; when absent: `updated_at`, or by relevance " +
      "(most relevant first) when `q` is given",
    enumOf(RunQuery.RunSortBy.literals)
  ),
  sort_order: textParam("sort direction", { ...enumOf(RunQuery.SortOrder.literals), default: "desc" }),
  state: textParam("repeat the key to match any of several states (`state=QUEUED&state=FAILED`)", {
    type: "array",
    items: enumOf(RunState.RunState.literals)
  }),
  name: textParam("agent_config.name", text),
  model_id: textParam("agent_config.model_id", text),
  creator: textParam("creator principal uid", text),
  executor: textParam("executor principal uid", text),
  source: textParam("the run's source", enumOf(RunState.RunSourceType.literals)),
  execution_location: textParam("where the run executes", enumOf(RunState.RunExecutionLocation.literals)),
  created_after: textParam("exclusive lower bound of created_at (RFC 3339)", dateTime),
  created_before: textParam("exclusive upper bound of created_at (RFC 3339)", dateTime),
  updated_after: textParam("exclusive lower bound of updated_at (RFC 3339)", dateTime),
  environment_id: textParam(`an environment uid, or \`${Ids.EMPTY_ENVIRONMENT}\` for runs without one`, text),
  skill: textParam("skill spec (`owner/repo:path/to/SKILL.md`); alias of skill_spec", text),
  skill_spec: textParam("skill spec (`owner/repo:path/to/SKILL.md`)", text),
  schedule_id: textParam("the schedule that created the run", text),
  ancestor_run_id: textParam("runs descending from this run (which must be visible)", {
    type: "string",
    format: "uuid"
  }),
  metadata: textParam(
    `\`metadata[<key>]=<value>\` (deepObject), at most ${RunQuery.MAX_METADATA_FILTERS} pairs, all must match; ` +
      "needs the team feature metadata_filtering (403 feature_not_available)",
    { type: "object", additionalProperties: { type: "string" }, maxProperties: RunQuery.MAX_METADATA_FILTERS }
  ),
  artifact_type: textParam("runs with an artifact of this type", enumOf(RunState.ArtifactType.literals)),
  q: textParam(
    "fuzzy search over title, prompt and skill_spec: every term a substring, or trigram similarity (pg_trgm's) " +
      "of at least 0.3 to one of them; without sort_by, ordered by relevance, most relevant first",
    text
  )
}

/** The `GET /agent/runs` query: the parameters above, and any other (`metadata[<key>]`). */
export const RunListUrlParams = Schema.Struct(runListParams, OtherParams)

/**
 * The `GET /agent/run-counts` query: the run list's filters, documented alike (its paging and sort
 * parameters are ignored, as unknown ones are).
 */
export const RunCountsUrlParams = Schema.Struct(Struct.omit(runListParams, ...RunQuery.PAGING_PARAMS), OtherParams)

/** `GET /agent/runs/{runId}/transcript-link`: the signed URL the transcript redirect sends to, as JSON. */
export class TranscriptLinkResponse extends Schema.Class<TranscriptLinkResponse>("TranscriptLinkResponse")({
  url: Schema.String.annotations({
    description: "the absolute, signed URL of the raw transcript on this server; it needs no bearer token"
  }),
  expires_at: Common.Timestamp.annotations({ description: "when the URL stops working" })
}) {}

/** The `GET /agent` query. */
export const ListAgentsUrlParams = Schema.Struct({
  repo: Schema.optional(
    Schema.String.annotations({
      description: "`owner/repo`: only skills of this repository (default: all accessible environments)"
    })
  ),
  refresh: Schema.optional(
    Schema.BooleanFromString.annotations({ description: "clear the agent list cache first (default false)" })
  ),
  sort_by: Schema.optional(
    Schema.Literal("name", "last_run").annotations({ description: "sort order (default `name`)" })
  ),
  include_malformed_skills: Schema.optional(
    Schema.BooleanFromString.annotations({ description: "also list malformed skills, with `error` (default false)" })
  )
})

/** The `GET /agent/environments` query. */
export const ListEnvironmentsUrlParams = Schema.Struct({
  sort_by: Schema.optional(
    Schema.Literal("name", "last_updated").annotations({
      description: "`last_updated` (default, most recently updated first) or `name`"
    })
  )
})

/** The `GET /agent/run-by-external-reference` query. */
export const RunByExternalReferenceUrlParams = Schema.Struct({
  url: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048)).annotations({
    description: "the canonical URL of an EXTERNAL_REFERENCE artifact, as reported (at most 2048 characters)"
  })
})

const { default: deliveryPage, max: maxDeliveryPage, min: minDeliveryPage } = Webhooks.DELIVERY_PAGE_LIMIT

/** The `GET /agent/webhooks/{uid}/deliveries` query. */
export const ListDeliveriesUrlParams = Schema.Struct({
  limit: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(minDeliveryPage, maxDeliveryPage)).annotations({
      description: `page size, ${minDeliveryPage} to ${maxDeliveryPage} (default ${deliveryPage})`
    })
  ),
  cursor: Schema.optional(Schema.String.annotations({ description: "the next_cursor of the previous page" }))
})

/** `GET /agent/outbound-webhooks/{uid}/deliveries`: a page, optionally of one state. */
export const ListOutboundDeliveriesUrlParams = Schema.Struct({
  ...ListDeliveriesUrlParams.fields,
  state: Schema.optional(OutboundWebhook.OutboundDeliveryState.annotations({ description: "only deliveries in this state" }))
})

/** The description of `GET /agent/run-counts`. */
export const RunCountsDescription =
  "How many of the runs `GET /agent/runs` would list with the same filters are in each state: `counts` has " +
  "every state (zeros included), `total` their sum. Takes every filter of the list (validated alike, `state` " +
  "included); `limit`, `cursor`, `sort_by` and `sort_order` are ignored. 400: an invalid parameter (the " +
  "`error` names it); 403 feature_not_available: metadata filtering is off for the team."

/** The description of `GET /agent/runs`. */
export const ListRunsUrlParamsDescription =
  "Runs the caller can see, newest update first by default, cursor-paginated (`page_info.next_cursor`). " +
  "Every filter combines with AND; `state` may repeat (any of them). 400: an invalid parameter (the `error` " +
  "names it), a cursor reused with another query, or more than 5 metadata pairs; 403 feature_not_available: " +
  "metadata filtering is off for the team."

/** The paging of the principal and member lists: a page size and the previous page's `next_cursor`. */
/** `GET /agent/team/spend`: how many days back, today included. */
export const SpendUrlParams = Schema.Struct({
  days: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, Budgets.MAX_SPEND_DAYS)).annotations({
      description: `how many days, today included (1 to ${Budgets.MAX_SPEND_DAYS}; default ${Budgets.DEFAULT_SPEND_DAYS})`
    })
  )
})

/** `GET /agent/team/overview`: how many hours back, the current one included. */
export const OverviewUrlParams = Schema.Struct({
  hours: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, RunOverview.MAX_OVERVIEW_HOURS)).annotations({
      description: `how many hours, the current one included (1 to ${RunOverview.MAX_OVERVIEW_HOURS}; default ${RunOverview.DEFAULT_OVERVIEW_HOURS})`
    })
  )
})

export const PrincipalPageUrlParams = Schema.Struct({
  limit: Schema.optional(
    Schema.NumberFromString.pipe(
      Schema.int(),
      Schema.between(Identity.PRINCIPAL_PAGE_LIMIT.min, Identity.PRINCIPAL_PAGE_LIMIT.max)
    ).annotations({
      description: `page size, ${Identity.PRINCIPAL_PAGE_LIMIT.min} to ${Identity.PRINCIPAL_PAGE_LIMIT.max} (default ${Identity.PRINCIPAL_PAGE_LIMIT.default})`
    })
  ),
  cursor: Schema.optional(Ids.PrincipalUid.annotations({ description: "the next_cursor of the previous page" }))
})

/** `GET /admin/principals`: the paging, and a team whose members alone are listed. */
export const ListPrincipalsUrlParams = Schema.Struct({
  ...PrincipalPageUrlParams.fields,
  team_uid: Schema.optional(Ids.TeamUid.annotations({ description: "only this team's members" }))
})
