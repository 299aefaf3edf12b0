/**
 * A run's conversation in SQL (core's ConversationLog.ts): each execution's row in `conversations`
 * (its order among the run's executions) and its log's numbered parts in `conversation_parts`.
 *
 * Decisions:
 * - A part is appended once under its number (a retried write is a no-op); on PostgreSQL the
 *   execution's row and the part are one statement.
 * - An ended execution's conversation is kept rendered as its JSON (`keepRendered`, migration
 *   0015) with the number of parts and the shape (`RENDERED_STEPS_SHAPE`) it was rendered from; a
 *   read serves the rendering only while both are current, and folds the log otherwise
 *   (docs/performance.md, "Reading a large conversation back").
 * - Executions saved whole before parts existed keep their `steps` and are folded with any parts.
 */
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import { ConversationStep } from "@agent-runs/core/domain/Conversation"
import { RENDERED_STEPS_SHAPE } from "@agent-runs/core/domain/ConversationJson"
import { type ConversationOp, type ConversationPart, foldParts } from "@agent-runs/core/domain/ConversationLog"
import type { ExecutionId, RunId } from "@agent-runs/core/domain/Ids"
import type { ExecutionConversation, LoggedPart, LogPosition, RenderedConversation } from "@agent-runs/core/ports/RunStore"
import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { operation } from "./internal/Catalog.js"
import * as Rows from "./Rows.js"

const Int = Rows.Integer

/** Whether two types are the same. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
/**
 * A part's operations as stored: the JSON of `ConversationOp`s that core built and checked before
 * they were written. Their encoded and decoded forms are the same plain JSON (checked here by the
 * compiler), so the text is parsed as it is: the codec's walk over a large conversation only
 * copied every operation (docs/performance.md, "Reading a large conversation back"). Should
 * `ConversationOp` ever transform, `ParsedOps` becomes a message and the parts no longer compile.
 */
type ParsedOps = Same<typeof ConversationOp.Type, typeof ConversationOp.Encoded> extends true ? ReadonlyArray<ConversationOp>
  : "ConversationOp transforms what it decodes: decode the parts' ops with its codec again"
const parseOps = (text: string): ParsedOps => JSON.parse(text)
/** Part rows as decoded (`ops` as text), each with its operations parsed. */
const withOps = <P extends { readonly ops: string }>(parts: ReadonlyArray<P>) =>
  parts.map((p) => ({ ...p, ops: parseOps(p.ops) }))
const decodePartRows = TrustedCodec.decoder(Schema.Array(Schema.Struct({ execution_id: Schema.String, seq: Int, ops: Schema.String })))
const decodeParts = (rows: ReadonlyArray<unknown>) => Effect.map(decodePartRows(rows), withOps)
const decodeLoggedPartRows = TrustedCodec.decoder(
  Schema.Array(Schema.Struct({ ordinal: Int, execution_id: Schema.String, seq: Int, ops: Schema.String }))
)
const decodeLoggedParts = (rows: ReadonlyArray<unknown>) => Effect.map(decodeLoggedPartRows(rows), withOps)
/** An execution's steps saved whole (before parts existed; `[]` since). */
const StoredSteps = Schema.parseJson(Schema.Array(ConversationStep))
const decodeStoredSteps = TrustedCodec.decoder(Schema.Array(Schema.Struct({ execution_id: Schema.String, steps: StoredSteps })))
/**
 * An execution's row as read for writing its conversation: its kept text when current (else
 * null), and the number of parts its log has now.
 */
const decodeExecutionRows = TrustedCodec.decoder(Schema.Array(Schema.Struct({
  execution_id: Schema.String,
  steps: StoredSteps,
  rendered: Schema.NullOr(Schema.String),
  parts: Int
})))

/** The parts of `parts` by execution. */
const partsByExecution = (parts: ReadonlyArray<ConversationPart & { readonly execution_id: string }>) => {
  const byExecution = new Map<string, Array<ConversationPart>>()
  for (const p of parts) {
    const list = byExecution.get(p.execution_id)
    if (list === undefined) byExecution.set(p.execution_id, [p])
    else list.push(p)
  }
  return byExecution
}

/** The parts its log has now of the execution `c` (`conversations` aliased). */
const PARTS_NOW =
  "(SELECT CAST(COUNT(*) AS INTEGER) FROM conversation_parts p WHERE p.run_id = c.run_id AND p.execution_id = c.execution_id)"

/** An execution's steps: those saved whole (before parts existed), then those its parts fold into. */
const foldExecution = (
  execution: { readonly execution_id: string; readonly steps: ReadonlyArray<ConversationStep> },
  parts: ReadonlyMap<string, ReadonlyArray<ConversationPart>>
) => [...execution.steps, ...foldParts(parts.get(execution.execution_id) ?? [])]

/** The conversation methods of the run store: `sql` writes, `reader` reads (Reader.ts). */
export const conversationsSql = (sql: SqlClient.SqlClient, reader: SqlClient.SqlClient) => {
  const appendConversation = Effect.fn("RunStore.appendConversation")(
    function* (runId: RunId, execution_id: ExecutionId, part: ConversationPart) {
      // Operations are plain JSON (their encoded form is themselves): written as they are.
      const ops = JSON.stringify(part.ops)
      // The first part of an execution gives it the next ordinal; a part stored already stays.
      const execution = sql`INSERT INTO conversations (run_id, execution_id, ordinal, steps)
        SELECT CAST(${runId} AS TEXT), CAST(${execution_id} AS TEXT), COALESCE(MAX(ordinal), 0) + 1, '[]'
        FROM conversations WHERE run_id = ${runId}
        ON CONFLICT (run_id, execution_id) DO NOTHING`
      const stored = sql`INSERT INTO conversation_parts ${sql.insert({ run_id: runId, execution_id, seq: part.seq, ops })}
        ON CONFLICT (run_id, execution_id, seq) DO NOTHING`
      yield* sql.onDialectOrElse({
        // One statement (a data-modifying WITH): both inserts or neither.
        pg: () => sql`WITH c AS (${execution}) ${stored}`,
        orElse: () => sql.withTransaction(Effect.zipRight(execution, stored))
      })
    },
    operation("RunStore.appendConversation")
  )

  /**
   * The parts of a run's executions `ids` (all of them when undefined), by execution. In the
   * primary key's order: sorted otherwise, every part (a megabyte of operations each) would be
   * copied into a temporary B-tree first.
   */
  const partsOf = (runId: RunId, ids?: ReadonlyArray<string>) =>
    Effect.map(
      ids === undefined
        ? reader`SELECT execution_id, seq, ops FROM conversation_parts WHERE run_id = ${runId} ORDER BY execution_id, seq`.pipe(
          Effect.flatMap(decodeParts)
        )
        : reader`SELECT execution_id, seq, ops FROM conversation_parts WHERE run_id = ${runId} AND execution_id IN ${reader.in(ids)}
            ORDER BY execution_id, seq`.pipe(Effect.flatMap(decodeParts)),
      partsByExecution
    )

  /**
   * A run's executions in order, each with its stored steps, its kept text when that is of the
   * current shape and of every part (else null: a stale text is not even sent), and how many
   * parts its log has now.
   */
  const executionRows = (runId: RunId) => {
    const partsNow = reader.literal(PARTS_NOW)
    return reader`SELECT c.execution_id AS execution_id, c.steps AS steps,
        CASE WHEN c.rendered_shape = ${RENDERED_STEPS_SHAPE} AND c.rendered_parts = ${partsNow} THEN c.rendered END AS rendered,
        ${partsNow} AS parts
      FROM conversations c WHERE c.run_id = ${runId} ORDER BY c.ordinal`.pipe(Effect.flatMap(decodeExecutionRows))
  }

  const conversation = Effect.fn("RunStore.conversation")(
    function* (runId: RunId) {
      const [executions, parts] = yield* Effect.all([
        reader`SELECT execution_id, steps FROM conversations WHERE run_id = ${runId} ORDER BY ordinal`.pipe(Effect.flatMap(decodeStoredSteps)),
        partsOf(runId)
      ])
      return executions.flatMap((e) => foldExecution(e, parts))
    },
    operation("RunStore.conversation")
  )

  const executionConversations = Effect.fn("RunStore.executionConversations")(
    function* (runId: RunId) {
      const executions = yield* executionRows(runId)
      const unkept = executions.filter((e) => e.rendered === null).map((e) => e.execution_id)
      const parts = unkept.length === 0 ? new Map<string, Array<ConversationPart>>() : yield* partsOf(runId, unkept)
      return executions.map((e): ExecutionConversation =>
        e.rendered !== null
          ? { _tag: "Rendered", json: e.rendered }
          : { _tag: "Folded", execution_id: e.execution_id as ExecutionId, parts: e.parts, steps: foldExecution(e, parts) }
      )
    },
    operation("RunStore.executionConversations")
  )

  const keepRendered = Effect.fn("RunStore.keepRendered")(
    function* (runId: RunId, rendered: RenderedConversation) {
      // Kept only while the log has exactly the parts it was made from, and not written again
      // over a current text of the same parts.
      yield* sql`UPDATE conversations SET rendered = ${rendered.json}, rendered_parts = ${rendered.parts},
          rendered_shape = ${RENDERED_STEPS_SHAPE}
        WHERE run_id = ${runId} AND execution_id = ${rendered.execution_id}
          AND (SELECT COUNT(*) FROM conversation_parts p WHERE p.run_id = ${runId} AND p.execution_id = ${rendered.execution_id})
            = ${rendered.parts}
          AND (rendered_shape IS NULL OR rendered_shape <> ${RENDERED_STEPS_SHAPE}
            OR rendered_parts IS NULL OR rendered_parts <> ${rendered.parts})`
    },
    operation("RunStore.keepRendered")
  )

  const conversationLog = Effect.fn("RunStore.conversationLog")(
    function* (runId: RunId, after?: LogPosition) {
      const from = after ?? { ordinal: 0, seq: 0 }
      const parts: ReadonlyArray<LoggedPart> = yield* reader`SELECT c.ordinal AS ordinal, p.execution_id AS execution_id, p.seq AS seq, p.ops AS ops
        FROM conversation_parts p
        JOIN conversations c ON c.run_id = p.run_id AND c.execution_id = p.execution_id
        WHERE p.run_id = ${runId} AND (c.ordinal > ${from.ordinal} OR (c.ordinal = ${from.ordinal} AND p.seq > ${from.seq}))
        ORDER BY c.ordinal, p.seq`.pipe(Effect.flatMap(decodeLoggedParts))
      return parts
    },
    operation("RunStore.conversationLog")
  )

  return { appendConversation, conversation, executionConversations, keepRendered, conversationLog } as const
}
