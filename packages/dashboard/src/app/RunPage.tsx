/**
 * One run: its state, timing, creator, configuration and environment; the conversation as a
 * dialogue (user and agent messages, tool calls and their results collapsed, errors); the
 * timeline. While the run is not finished the page reads it again every two seconds.
 */
import { useEffect, useState } from "preact/hooks"
import {
  ApiError,
  type ContentBlock,
  type Conversation,
  type ConversationMessage,
  type ConversationStep,
  request,
  type Run,
  TERMINAL_STATES,
  type TimelineEvent
} from "./api.js"
import { formatDuration, formatJson, formatTime } from "./format.js"
import { followLink, hrefOf } from "./router.js"
import { StateBadge } from "./RunsPage.js"

const POLL_MS = 2_000

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

export const RunPage = (props: { readonly runId: string }) => {
  const [loaded, setLoaded] = useState<Loaded | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [tick, setTick] = useState(0)

  useEffect(() => {
    const controller = new AbortController()
    load(props.runId, controller.signal).then(
      (answer) => {
        setLoaded(answer)
        setError(undefined)
      },
      (failure: unknown) => {
        if (!controller.signal.aborted) setError(failure instanceof ApiError ? failure.message : String(failure))
      }
    )
    return () => controller.abort()
  }, [props.runId, tick])

  const finished = loaded !== undefined && TERMINAL_STATES.includes(loaded.run.state)
  useEffect(() => {
    if (loaded === undefined || finished) return
    const timer = window.setTimeout(() => setTick((n) => n + 1), POLL_MS)
    return () => window.clearTimeout(timer)
  }, [loaded, finished])

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
  const skill = run.agent_skill === undefined ? undefined : run.agent_skill["skill_spec"]
  return (
    <>
      {back}
      <h1>{run.title === "" ? "Run" : run.title}</h1>
      {error === undefined ? null : <p class="error" role="alert">{error}</p>}
      <dl class="facts">
        <div><dt>State</dt><dd><StateBadge state={run.state} />{finished ? null : <span class="muted"> (updating)</span>}</dd></div>
        <div><dt>Run id</dt><dd><code>{run.run_id}</code></dd></div>
        <div><dt>Created</dt><dd>{formatTime(run.created_at)}</dd></div>
        <div><dt>Started</dt><dd>{formatTime(run.started_at)}</dd></div>
        <div><dt>Ended</dt><dd>{formatTime(run.ended_at)}</dd></div>
        <div><dt>Duration</dt><dd>{formatDuration(run.started_at, run.ended_at)}</dd></div>
        <div><dt>Creator</dt><dd>{run.creator.display_name} <span class="muted">({run.creator.uid})</span></dd></div>
        <div><dt>Source</dt><dd>{run.source}</dd></div>
        <div><dt>Environment</dt><dd>{run.environment_id ?? "none"}</dd></div>
        {run.schedule === undefined ? null : <div><dt>Schedule</dt><dd>{run.schedule.schedule_name}</dd></div>}
        {typeof skill === "string" ? <div><dt>Skill</dt><dd>{skill}</dd></div> : null}
        <div><dt>Executions</dt><dd>{run.execution_count}</dd></div>
      </dl>
      {run.status_message === undefined ? null : (
        <p class={run.state === "SUCCEEDED" ? "status" : "status error"}>
          {run.status_message.error_code === undefined ? null : <code>{run.status_message.error_code}</code>} {run.status_message.message}
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
      {run.artifacts.length === 0 ? null : (
        <section aria-labelledby="artifacts-heading">
          <h2 id="artifacts-heading">Artifacts</h2>
          <ul>
            {run.artifacts.map((artifact, index) => (
              <li key={index}><code>{artifact.artifact_type}</code> <pre>{formatJson(artifact.data)}</pre></li>
            ))}
          </ul>
        </section>
      )}
    </>
  )
}
