/**
 * The JSON the API answers with, as TypeScript types derived from the schemas it is encoded with
 * (`Schema.Encoded`): what a program that reads the API without Effect sees (the web dashboard
 * imports these as types only, so its bundle carries no schema code and its types cannot drift
 * from the server's).
 */
import type { Audit, Budget, Budgets, Conversation, Identity, Retention, Run, RunOverview, RunQuery, RunState, Timeline } from "@agent-runs/core"
import type { Schema } from "effect"
import type { TranscriptLinkResponse } from "./Models.js"

type Json<S extends Schema.Schema.Any> = Schema.Schema.Encoded<S>

/** A run's state (`QUEUED` … `CANCELLED`). */
export type RunState = Json<typeof RunState.RunState>
/** Where a run came from (`API`, `WEB_APP`, `SCHEDULED_AGENT`, …). */
export type RunSource = Json<typeof RunState.RunSourceType>
/** What the run list can be sorted by. */
export type RunSortBy = Json<typeof RunQuery.RunSortBy>
/** `GET /agent/runs/{runId}`, and each run of a list. */
export type Run = Json<typeof Run.RunItem>
/** `GET /agent/runs`. */
export type RunList = Json<typeof Run.ListRunsResponse>
/** `GET /agent/run-counts`. */
export type RunCounts = Json<typeof Run.RunCountsResponse>
/** `GET /agent/runs/{runId}/transcript-link`. */
export type TranscriptLink = Json<typeof TranscriptLinkResponse>
/** `GET /agent/runs/{runId}/timeline`. */
export type RunTimeline = Json<typeof Timeline.RunTimeline>
/** One event of a run's timeline. */
export type TimelineEvent = Json<typeof Timeline.TimelineEvent>
/** `GET /agent/runs/{runId}/conversation`. */
export type Conversation = Json<typeof Conversation.ConversationResponse>
/** A step of a conversation, with its messages and sub-steps. */
export type ConversationStep = Conversation.ConversationStepEncoded
/** A message of a conversation step. */
export type ConversationMessage = ConversationStep["messages"][number]
/** A block of a message: text, an action, an action's result, an event. */
export type ContentBlock = ConversationMessage["content"][number]
/** An artifact a run produced (a pull request, a branch, a file, …). */
export type Artifact = Run["artifacts"][number]
/** A principal as the API names it (`type`, `uid`, `display_name`). */
export type PrincipalRef = Run["creator"]
/** `GET /agent/me`. */
export type Me = Json<typeof Identity.MeResponse>
/** An entry of the audit log. */
export type AuditEntry = Json<typeof Audit.AuditEntry>
/** `GET /agent/audit-log` (and the admin one): a page of entries. */
export type AuditLogPage = Json<typeof Audit.AuditLogPage>
/** `GET`/`PUT /agent/team/retention`. */
export type TeamRetention = Json<typeof Retention.TeamRetentionResponse>
/** `GET`/`PUT /agent/team/budgets`. */
export type TeamBudgets = Json<typeof Budget.TeamBudgets>
/** `GET /agent/team/spend`. */
export type TeamSpend = Json<typeof Budgets.TeamSpendResponse>
/** `GET /agent/team/overview`. */
export type TeamOverview = Json<typeof RunOverview.TeamOverviewResponse>
