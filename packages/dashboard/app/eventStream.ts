/**
 * A run's live events (`GET /agent/runs/{id}/events`, Server-Sent Events), read with `fetch` and
 * the tab's bearer token in its header (an `EventSource` cannot send one, and the token never goes
 * in a URL), followed until the run's `end` event: resumed with `Last-Event-ID` after a drop,
 * with a bound on one event's size (`sse.ts`).
 */
import { ApiError, respond } from "./api.js"
import { followEvents, wait } from "./sse.js"

/**
 * Follows the stream at `path` (under the API), telling `onEvent` each event's name and data;
 * resolves at its `end` event. Rejects with the API's `ApiError` (a 401 also signs the tab out, as
 * every call does), `EventTooLarge`, an `Error` once reconnecting brings nothing, or the abort.
 */
export const streamEvents = (
  path: string,
  onEvent: (event: string, data: string) => void,
  signal: AbortSignal
): Promise<void> =>
  followEvents(
    {
      open: (lastEventId) =>
        respond(path, "text/event-stream", {
          signal,
          ...(lastEventId === undefined ? {} : { headers: { "last-event-id": lastEventId } })
        }),
      // Status 0: no answer (the service could not be reached); 502, 503 and 504: a proxy without
      // a server behind it, or a server restarting (503 until it has started). Not the API's answer.
      dropped: (error) => error instanceof ApiError && [0, 502, 503, 504].includes(error.status),
      wait
    },
    onEvent,
    signal
  )
