/**
 * Where the service keeps blobs (the `BlobStore` port's keys): a run's raw transcript (one blob
 * over all its executions and debug sessions), and the raw body of a webhook delivery, which the
 * runs it starts get as an attachment, and the images given with a run's request.
 */

/** The blob key of a run's raw transcript. */
export const transcriptKey = (runId: string): string => `transcripts/${runId}.jsonl`

/** The session files of a run's agent CLI (a gzipped tar of its home's session paths), for its next execution. */
export const agentStateKey = (runId: string): string => `agent-state/${runId}.tar.gz`

/** The session files a self-hosted worker's execution is sending in parts, until the last part moves them to `agentStateKey`. */
export const agentStateUploadKey = (runId: string, executionId: string): string => `agent-state/${runId}.${executionId}.part`

/** What a stopping process left for the next about the agent of a run's execution it left running (AdoptionNote.ts). */
export const adoptionKey = (runId: string, executionId: string): string => `adoptions/${runId}.${executionId}.json`

/** Where a delivery's raw body is kept for the runs it starts. */
export const eventPayloadKey = (deliveryId: string): string => `webhook-payloads/${deliveryId}.json`

/** The name of the attachment that carries a delivery's body. */
export const EVENT_PAYLOAD_NAME = "event-payload.json"

/**
 * The images given with a run's request (`images`): one JSON blob, an array of `{name, mime_type,
 * data}` (base64), written before the run is; each is an attachment of every execution of the run.
 */
export const runImagesKey = (runId: string): string => `run-images/${runId}.json`

/**
 * Every blob a run may have: its transcript, its agent state (and the parts of one a worker's
 * execution was still sending), its images, the notes of agents left for adoption. What removing
 * the run removes (docs/retention.md).
 */
export const runBlobKeys = (runId: string, executionIds: Iterable<string>): ReadonlyArray<string> => [
  transcriptKey(runId),
  agentStateKey(runId),
  runImagesKey(runId),
  ...[...executionIds].flatMap((executionId) => [agentStateUploadKey(runId, executionId), adoptionKey(runId, executionId)])
]
