/**
 * One run: its state, timing, creator, configuration and environment; the conversation as a
 * dialogue (user and agent messages, tool calls and their results collapsed, errors); the
 * timeline; cancel and the follow-up box; a banner while a debug session is open. While the run
 * has not ended the page follows its event stream (Server-Sent Events) and reads the run again
 * after each event; when the stream cannot be opened it reads it every two seconds instead.
 */
import { useEffect, useState } from "preact/hooks"
import {
  ApiError,
  type ContentBlock,
  type Conversation,
  type ConversationMessage,
  type ConversationStep,
  messageOf,
  request,
  type Run,
  TERMINAL_STATES,
  type TimelineEvent,
  type TranscriptLink
} from "./api.js"
import { Artifacts, safeUrl } from "./Artifacts.js"
import { streamEvents } from "./eventStream.js"
import { formatDuration, formatJson, formatTime, formatUsd } from "./format.js"
import { followLink, hrefOf } from "./router.js"
import { StateBadge } from "./RunsPage.js"

const POLL_MS = 2_000
/** Events come in bursts: the page reads the run once per burst. */
const RELOAD_AFTER_EVENT_MS = 200

interface Loaded {
  readonly run: Run
  readonly timeline: ReadonlyArray<TimelineEvent>
  readonly conversation: Conversation | undefined
  readonly conversationError: string | undefined
}

const load = async (runId: string, signal: AbortSignal): Promise<Loaded> => {
  const path = `/agent/runs/${encodeURIComponent(runId)}`
  const [run, timeline, conversation] = await Promise.all([
    request<Run>(path, { signal }),
    request<{ events: ReadonlyArray<TimelineEvent> }>(`${path}/timeline`, { signal }),
    request<Conversation>(`${path}/conversation`, { signal }).then(
      (c) => ({ c, e: undefined }),
      (e: unknown) => {
        if (e instanceof ApiError && e.status === 404) return { c: undefined, e: undefined }
        if (e instanceof ApiError) return { c: undefined, e: e.message }
        throw e
      }
    )
  ])
  return { run, timeline: timeline.events, conversation: conversation.c, conversationError: conversation.e }
}

const ROLE_NAMES: Record<ConversationMessage["role"], string> = {
  user: "User",
  assistant: "Agent",
  tool: "Tool",
  system: "System"
}

const Block = (props: { readonly block: ContentBlock }) => {
  const block = props.block
  switch (block.type) {
    case "text":
      return <p class="text">{block.text}</p>
    case "action":
      return (
        <details class="tool">
          <summary>Tool call: {block.name} <span class="muted">({block.category})</span></summary>
          <pre>{formatJson(block.input)}</pre>
        </details>
      )
    case "action_result":
      return (
        <details class={`tool result-${block.state}`}>
          <summary>Result of {block.name}: <strong>{block.state}</strong></summary>
          <pre>{formatJson(block.output)}</pre>
        </details>
      )
    case "event":
      return (
        <details class={block.name === "error" ? "event error-event" : "event"} open={block.name === "error"}>
          <summary>Event: {block.name}</summary>
          <pre>{formatJson(block.data)}</pre>
        </details>
      )
  }
}

const messagesOf = (steps: ReadonlyArray<ConversationStep>): ReadonlyArray<ConversationMessage> =>
  steps.flatMap((step) => [...step.messages, ...messagesOf(step.steps)])

const Dialogue = (props: { readonly conversation: Conversation }) => {
  const messages = messagesOf(props.conversation.steps)
  if (messages.length === 0) return <p class="muted">Nothing said yet.</p>
  return (
    <ol class="dialogue">
      {messages.map((message, index) => (
        <li key={index} class={`message role-${message.role}`}>
          <div class="who">
            {ROLE_NAMES[message.role]}
            {message.timestamp === undefined ? null : <time dateTime={message.timestamp}> · {formatTime(message.timestamp)}</time>}
          </div>
          {message.content.map((block, i) => <Block key={i} block={block} />)}
        </li>
      ))}
    </ol>
  )
}

/**
 * The transcript: a signed, time-limited link asked of the API on demand (`…/transcript-link`).
 * The link needs no token and may be on another origin (the service's public URL): the page only
 * shows it, and the browser navigates to it (the download is never fetched by the page, which its
 * `connect-src 'self'` would refuse).
 */
const Transcript = (props: { readonly runId: string }) => {
  const [link, setLink] = useState<{ readonly url: string; readonly expiresAt: string } | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const fetchLink = async () => {
    try {
      const answer = await request<TranscriptLink>(`/agent/runs/${encodeURIComponent(props.runId)}/transcript-link`)
      const url = safeUrl(answer.url)
      if (url === undefined) throw new ApiError(0, "the service answered a link that is not http(s)", undefined, undefined)
      setLink({ url, expiresAt: answer.expires_at })
      setError(undefined)
    } catch (failure) {
      setLink(undefined)
      setError(messageOf(failure))
    }
  }
  return (
    <div class="buttons">
      <button type="button" class="secondary" onClick={fetchLink} aria-describedby={error === undefined ? undefined : "transcript-error"}>
        Get the transcript link
      </button>
      {link === undefined ? null : (
        <a href={link.url} download={`${props.runId}.jsonl`} rel="noreferrer">
          Download the transcript (the link expires at <time dateTime={link.expiresAt}>{formatTime(link.expiresAt)}</time>)
        </a>
      )}
      {error === undefined ? null : <span class="error" id="transcript-error" role="alert">{error}</span>}
    </div>
  )
}

/** While a debug session is open on the run (its status message says until when). */
const DebugBanner = (props: { readonly run: Run }) => {
  const until = props.run.status_message?.session_debug_until
  if (until === undefined || Date.parse(until) <= Date.now()) return null
  return (
    <p class="banner" role="status">
      A debug session is open until {formatTime(until)}: follow-ups go to a debug agent in the run's retained sandbox.
    </p>
  )
}

/** Cancel (while the run has not ended) and the follow-up box; an error stays beside its control, the message kept. */
const Actions = (props: { readonly run: Run; readonly finished: boolean; readonly onDone: () => void }) => {
  const path = `/agent/runs/${encodeURIComponent(props.run.run_id)}`
  const [message, setMessage] = useState("")
  const [sending, setSending] = useState(false)
  const [followupError, setFollowupError] = useState<string | undefined>(undefined)
  const [cancelError, setCancelError] = useState<string | undefined>(undefined)
  const [cancelling, setCancelling] = useState(false)

  const send = async (event: Event) => {
    event.preventDefault()
    setSending(true)
    try {
      await request(`${path}/followups`, { method: "POST", body: { message } })
      setMessage("")
      setFollowupError(undefined)
      props.onDone()
    } catch (failure) {
      setFollowupError(messageOf(failure))
    } finally {
      setSending(false)
    }
  }
  const cancel = async () => {
    setCancelling(true)
    try {
      await request(`${path}/cancel`, { method: "POST" })
      setCancelError(undefined)
      props.onDone()
    } catch (failure) {
      setCancelError(messageOf(failure))
    } finally {
      setCancelling(false)
    }
  }

  return (
    <div class="actions-row">
      <form class="followup" method="post" onSubmit={send}>
        <label for="followup">Follow-up</label>
        <textarea
          id="followup"
          rows={2}
          value={message}
          onInput={(e) => setMessage(e.currentTarget.value)}
          aria-describedby={followupError === undefined ? undefined : "followup-error"}
        />
        <div class="buttons">
          <button type="submit" disabled={sending}>{sending ? "Sending…" : "Send follow-up"}</button>
          {followupError === undefined ? null : <span class="error" id="followup-error" role="alert">{followupError}</span>}
        </div>
      </form>
      {props.finished ? null : (
        <div class="cancel">
          <button
            type="button"
            class="danger"
            disabled={cancelling}
            onClick={cancel}
            aria-describedby={cancelError === undefined ? undefined : "cancel-error"}
          >
            {cancelling ? "Cancelling…" : "Cancel run"}
          </button>
          {cancelError === undefined ? null : <span class="error" id="cancel-error" role="alert">{cancelError}</span>}
        </div>
      )}
    </div>
  )
}

export const RunPage = (props: { readonly runId: string }) => {
  const [loaded, setLoaded] = useState<Loaded | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [tick, setTick] = useState(0)
  /** How many reads have ended, well or not: each schedules the next poll. */
  const [settled, setSettled] = useState(0)

  useEffect(() => {
    const controller = new AbortController()
    load(props.runId, controller.signal).then(
      (answer) => {
        setLoaded(answer)
        setError(undefined)
        setSettled((n) => n + 1)
      },
      (failure: unknown) => {
        if (controller.signal.aborted) return
        setError(messageOf(failure))
        setSettled((n) => n + 1)
      }
    )
    return () => controller.abort()
  }, [props.runId, tick])

  const finished = loaded !== undefined && TERMINAL_STATES.includes(loaded.run.state)
  const shown = loaded !== undefined
  // Live: the run's event stream while it has not ended.
  const [live, setLive] = useState(false)
  /** Why the stream stopped before the run's end (the page polls instead). */
  const [streamError, setStreamError] = useState<string | undefined>(undefined)
  useEffect(() => {
    if (!shown || finished) return
    const controller = new AbortController()
    let timer: number | undefined
    const reloadSoon = () => {
      if (timer !== undefined) return
      timer = window.setTimeout(() => {
        timer = undefined
        setTick((n) => n + 1)
      }, RELOAD_AFTER_EVENT_MS)
    }
    setLive(true)
    streamEvents(`/agent/runs/${encodeURIComponent(props.runId)}/events`, reloadSoon, controller.signal)
      .then(reloadSoon, (failure: unknown) => {
        if (!controller.signal.aborted) setStreamError(failure instanceof Error ? failure.message : String(failure))
      })
      .finally(() => {
        if (!controller.signal.aborted) setLive(false)
      })
    return () => {
      controller.abort()
      window.clearTimeout(timer)
    }
  }, [props.runId, shown, finished])
  // Without the stream: read it again two seconds after each read ended, also after a failed one.
  useEffect(() => {
    if (!shown || finished || live) return
    const timer = window.setTimeout(() => setTick((n) => n + 1), POLL_MS)
    return () => window.clearTimeout(timer)
  }, [settled, shown, finished, live])

  const back = <p><a href={hrefOf("")} onClick={(e) => followLink(e, "")}>← All runs</a></p>
  if (loaded === undefined) {
    return (
      <>
        {back}
        {error === undefined ? <p aria-live="polite">Loading…</p> : <p class="error" role="alert">{error}</p>}
      </>
    )
  }
  const { run, timeline, conversation, conversationError } = loaded
  const skill = run.agent_skill
  return (
    <>
      {back}
      <h1>{run.title === "" ? "Run" : run.title}</h1>
      {error === undefined ? null : <p class="error" role="alert">{error}</p>}
      {streamError === undefined || finished ? null : <p class="error" role="alert">Live updates stopped: {streamError}</p>}
      <dl class="facts">
        <div><dt>State</dt><dd><StateBadge state={run.state} />{finished ? null : <span class="muted"> ({live ? "live" : "updating"})</span>}</dd></div>
        <div><dt>Run id</dt><dd><code>{run.run_id}</code></dd></div>
        <div><dt>Created</dt><dd>{formatTime(run.created_at)}</dd></div>
        <div><dt>Started</dt><dd>{formatTime(run.started_at)}</dd></div>
        <div><dt>Ended</dt><dd>{formatTime(run.ended_at)}</dd></div>
        <div><dt>Duration</dt><dd>{formatDuration(run.started_at, run.ended_at)}</dd></div>
        <div><dt>Creator</dt><dd>{run.creator.display_name} <span class="muted">({run.creator.uid})</span></dd></div>
        <div><dt>Source</dt><dd>{run.source}</dd></div>
        <div><dt>Environment</dt><dd>{run.environment_id ?? "none"}</dd></div>
        {run.schedule == null ? null : <div><dt>Schedule</dt><dd>{run.schedule.schedule_name}</dd></div>}
        {skill == null ? null : (
          <div><dt>Skill</dt><dd>{skill.name} <span class="muted">({skill.full_path ?? skill.bundled_skill_id})</span></dd></div>
        )}
        <div><dt>Executions</dt><dd>{run.execution_count}</dd></div>
        <div>
          <dt>Spent</dt>
          <dd>
            {formatUsd(run.request_usage.inference_cost + run.request_usage.compute_cost)}
            {run.agent_config.max_cost_usd == null ? null : <span class="muted"> of {formatUsd(run.agent_config.max_cost_usd)}</span>}
          </dd>
        </div>
        {run.agent_config.max_turns == null ? null : <div><dt>Max turns</dt><dd>{run.agent_config.max_turns} per execution</dd></div>}
        {run.agent_config.priority == null ? null : <div><dt>Priority</dt><dd>{run.agent_config.priority}</dd></div>}
        {run.trace_id === undefined ? null : <div><dt>Trace</dt><dd><code title="the run's OpenTelemetry trace id">{run.trace_id}</code></dd></div>}
      </dl>
      <DebugBanner run={run} />
      <Actions run={run} finished={finished} onDone={() => setTick((n) => n + 1)} />
      {run.status_message == null ? null : (
        <p class={run.state === "SUCCEEDED" ? "status" : "status error"}>
          {run.status_message.error_code == null ? null : <code>{run.status_message.error_code}</code>} {run.status_message.message}
        </p>
      )}
      <section aria-labelledby="prompt-heading">
        <h2 id="prompt-heading">Prompt</h2>
        <pre class="prompt">{run.prompt}</pre>
      </section>
      <section aria-labelledby="config-heading">
        <h2 id="config-heading">Configuration</h2>
        <pre>{formatJson(run.agent_config)}</pre>
      </section>
      <section aria-labelledby="conversation-heading">
        <h2 id="conversation-heading">Conversation</h2>
        {conversationError !== undefined
          ? <p class="error">{conversationError}</p>
          : conversation === undefined ? <p class="muted">No conversation yet.</p> : <Dialogue conversation={conversation} />}
      </section>
      <section aria-labelledby="timeline-heading">
        <h2 id="timeline-heading">Timeline</h2>
        <ol class="timeline">
          {timeline.map((event) => (
            <li key={event.sequence}>
              <time dateTime={event.occurred_at}>{formatTime(event.occurred_at)}</time> <code>{event.event_type}</code>
              {event.message === undefined ? null : <span> {event.message}</span>}
            </li>
          ))}
        </ol>
      </section>
      <section aria-labelledby="artifacts-heading">
        <h2 id="artifacts-heading">Artifacts and transcript</h2>
        <Artifacts artifacts={run.artifacts} />
        <Transcript runId={run.run_id} />
      </section>
    </>
  )
}
