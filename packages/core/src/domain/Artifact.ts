/**
 * Artifacts a run produces (docs/reference/api.md): a union discriminated by `artifact_type`, each with
 * its own `data` shape. `ArtifactReport` is the same without `created_at`: what an agent reports
 * (`POST /harness-support/report-artifact`, the harness's `artifact` line); the service stamps
 * the time.
 */
import { Schema } from "effect"
import { Timestamp } from "./Common.js"
import type { ArtifactType } from "./RunState.js"

/** The longest external-reference URL (the limit of the lookup by external reference). */
export const MAX_EXTERNAL_REFERENCE_URL_LENGTH = 2048

/** The most artifacts a run keeps from its agents (reported with a run token, or by a worker); past it, 413. */
export const MAX_ARTIFACTS_PER_RUN = 1000

/** A pull request: its branch and page; its number and `owner/repo` when the service opened it (docs/github.md). */
export const PullRequestData = Schema.Struct({
  branch: Schema.String,
  url: Schema.String,
  number: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true }),
  repository: Schema.optionalWith(Schema.String, { exact: true })
})
export const PlanData = Schema.Struct({ document_uid: Schema.String, title: Schema.String })
export const ScreenshotData = Schema.Struct({ url: Schema.String, media_type: Schema.String })
export const FileData = Schema.Struct({ name: Schema.String, url: Schema.String, size_bytes: Schema.NonNegativeInt })
export const ExternalReferenceData = Schema.Struct({
  url: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_EXTERNAL_REFERENCE_URL_LENGTH))
})

const report = <T extends ArtifactType, D extends Schema.Schema.Any>(artifactType: T, data: D) =>
  Schema.Struct({ artifact_type: Schema.Literal(artifactType), data })

const stamped = <T extends ArtifactType, D extends Schema.Schema.Any>(artifactType: T, data: D) =>
  Schema.Struct({ artifact_type: Schema.Literal(artifactType), created_at: Timestamp, data })

/** An artifact as reported by an agent: `{artifact_type, data}`. */
export const ArtifactReport = Schema.Union(
  report("PULL_REQUEST", PullRequestData),
  report("PLAN", PlanData),
  report("SCREENSHOT", ScreenshotData),
  report("FILE", FileData),
  report("EXTERNAL_REFERENCE", ExternalReferenceData)
).annotations({ identifier: "ArtifactReport" })
export type ArtifactReport = typeof ArtifactReport.Type

/** An artifact of a run: `{artifact_type, created_at, data}`. */
export const Artifact = Schema.Union(
  stamped("PULL_REQUEST", PullRequestData).annotations({ identifier: "PullRequestArtifact" }),
  stamped("PLAN", PlanData).annotations({ identifier: "PlanArtifact" }),
  stamped("SCREENSHOT", ScreenshotData).annotations({ identifier: "ScreenshotArtifact" }),
  stamped("FILE", FileData).annotations({ identifier: "FileArtifact" }),
  stamped("EXTERNAL_REFERENCE", ExternalReferenceData).annotations({ identifier: "ExternalReferenceArtifact" })
).annotations({ identifier: "Artifact" })
export type Artifact = typeof Artifact.Type

/** Stamps a reported artifact with the time the service recorded it. */
export const stampArtifact = (reported: ArtifactReport, createdAt: Timestamp): Artifact =>
  ({ ...reported, created_at: createdAt }) as Artifact
