/** Handlers of the audit log's endpoints (core's `AuditService` checks who may read what). */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Audit, AuditService } from "@agent-runs/core"
import { Effect, Schema, Stream } from "effect"
import { Api } from "@agent-runs/api/Api"
import { CurrentViewer } from "@agent-runs/api/Security"

const encoder = new TextEncoder()
const encodeEntry = Schema.encodeSync(Audit.AuditEntry)

/** Entries as JSON lines. */
const jsonLines = <E>(entries: Stream.Stream<Audit.AuditEntry, E>) =>
  HttpServerResponse.stream(
    Stream.map(entries, (entry) => encoder.encode(`${JSON.stringify(encodeEntry(entry))}\n`)),
    { contentType: "application/x-ndjson", headers: { "cache-control": "no-store" } }
  )

export const AuditLive = HttpApiBuilder.group(Api, "audit", (handlers) =>
  Effect.map(AuditService.Audit, (audit) =>
    handlers
      .handle("listAuditLog", ({ urlParams }) => Effect.flatMap(CurrentViewer, (v) => audit.teamPage(v, urlParams)))
      .handle("listInstanceAuditLog", ({ urlParams }) => Effect.flatMap(CurrentViewer, (v) => audit.instancePage(v, urlParams)))
      .handleRaw("exportAuditLog", ({ urlParams }) =>
        Effect.map(Effect.flatMap(CurrentViewer, (v) => audit.teamExport(v, urlParams)), jsonLines))
      .handleRaw("exportInstanceAuditLog", ({ urlParams }) =>
        Effect.map(Effect.flatMap(CurrentViewer, (v) => audit.instanceExport(v, urlParams)), jsonLines))))
