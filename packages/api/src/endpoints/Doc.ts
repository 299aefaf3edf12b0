/** Small helpers for the OpenAPI annotations of endpoints and groups. */
import { HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"

/** The summary and description of an endpoint or group. */
export const doc = (summary: string, description: string, options?: { readonly deprecated?: boolean }) =>
  OpenApi.annotations({ summary, description, ...(options?.deprecated === true ? { deprecated: true } : {}) })

/** A 302 answer whose `Location` header is a signed, time-limited download URL (no bearer token needed). */
export const TranscriptRedirect = HttpApiSchema.Empty(302).annotations({
  description: "Found: the `Location` header holds a signed, time-limited URL of the raw transcript on this " +
    "server; it needs no bearer token and expires (default 15 minutes)."
})

/** A Server-Sent Events stream. */
export const EventStream = Schema.String.pipe(
  HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })
).annotations({ description: "Server-Sent Events (`text/event-stream`)" })
