/**
 * Schedules: the list (each cron in words, one preview per distinct expression and zone) and a
 * schedule's page (its next fire times, prompt and recent runs, Pause / Resume and Run now), with
 * the preview of an expression they read.
 */
import { useEffect, useState } from "preact/hooks"
import { messageOf, request, type RunState } from "./api.js"
import { formatTime } from "./format.js"
import { followLink, hrefOf, useLocation } from "./router.js"
import { Empty, Section, useApi } from "./Section.js"

interface Schedule {
  readonly id: string
  readonly name: string
  readonly cron_schedule: string
  readonly timezone: string
  readonly enabled: boolean
  readonly prompt: string
  readonly history: {
    readonly last_ran: string | null
    readonly next_run: string | null
    readonly recent_runs: ReadonlyArray<{ readonly run_id: string; readonly state: RunState; readonly scheduled_for: string }>
  }
  readonly last_spawn_error: string | null
}

/** `POST /agent/schedules/preview`: a cron expression in words and its next fire times. */
interface SchedulePreview {
  readonly description: string
  readonly next_runs: ReadonlyArray<string>
}

/**
 * The preview of a schedule's expression in its zone (`count` fire times), or the API's error;
 * nothing until both are known. Not kept: the fire times move with the clock.
 */
const usePreview = (cron: string | undefined, timezone: string | undefined, count: number) => {
  const [preview, setPreview] = useState<{ data?: SchedulePreview; error?: string }>({})
  useEffect(() => {
    if (cron === undefined || timezone === undefined) return
    const controller = new AbortController()
    request<SchedulePreview>("/agent/schedules/preview", {
      method: "POST",
      body: { cron_schedule: cron, timezone, count },
      signal: controller.signal
    }).then(
      (data) => setPreview({ data }),
      (failure: unknown) => {
        if (!controller.signal.aborted) setPreview({ error: messageOf(failure) })
      }
    )
    return () => controller.abort()
  }, [cron, timezone, count])
  return preview
}

/**
 * The words of each (expression, zone) shown since the page loaded: rows with the same expression
 * share one `POST /agent/schedules/preview`. A failure is not kept (the next page asks again);
 * `forgetCronWords` empties it when someone signs in or the team changes.
 */
const cronWords = new Map<string, Promise<string>>()

export const forgetCronWords = (): void => cronWords.clear()

const wordsOf = (cron: string, timezone: string): Promise<string> => {
  const key = JSON.stringify([cron, timezone])
  const known = cronWords.get(key)
  if (known !== undefined) return known
  const words = request<SchedulePreview>("/agent/schedules/preview", {
    method: "POST",
    body: { cron_schedule: cron, timezone, count: 1 }
  }).then((preview) => preview.description)
  cronWords.set(key, words)
  words.catch(() => {
    if (cronWords.get(key) === words) cronWords.delete(key)
  })
  return words
}

/** A schedule's cron in words (the expression itself while the words load, or when they cannot be had). */
const CronWords = (props: { readonly cron: string; readonly timezone: string }) => {
  const [words, setWords] = useState<string | undefined>(undefined)
  useEffect(() => {
    let shown = true
    wordsOf(props.cron, props.timezone).then(
      (found) => {
        if (shown) setWords(found)
      },
      () => {}
    )
    return () => {
      shown = false
    }
  }, [props.cron, props.timezone])
  return (
    <>
      {words === undefined ? null : <span class="cron-words">{words}</span>}
      <div class="muted"><code>{props.cron}</code> {props.timezone}</div>
    </>
  )
}

/** `schedules` lists them; `schedules/<id>` is one schedule's page. */
export const SchedulesPage = () => {
  const id = useLocation().route.split("/")[1]
  return id === undefined || id === "" ? <ScheduleList /> : <SchedulePage id={id} />
}

const ScheduleList = () => {
  const read = useApi<{ schedules: ReadonlyArray<Schedule> }>("/agent/schedules")
  return (
    <Section title="Schedules" read={read}>
      {({ schedules }) => (
        <table class="list">
          <caption class="visually-hidden">Schedules</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">When</th><th scope="col">Enabled</th><th scope="col">Last ran</th><th scope="col" class="wide">Next run</th><th scope="col" class="wide">Runs</th></tr></thead>
          <tbody>
            {schedules.length === 0 ? <Empty columns={6} text="No schedules." /> : schedules.map((schedule) => {
              const runs = new URLSearchParams({ schedule_id: schedule.id })
              const route = `schedules/${schedule.id}`
              return (
                <tr key={schedule.id} data-schedule-id={schedule.id}>
                  <td>
                    <a href={hrefOf(route)} onClick={(e) => followLink(e, route)}>{schedule.name}</a>
                    {schedule.last_spawn_error === null ? null : <div class="error">{schedule.last_spawn_error}</div>}
                  </td>
                  <td><CronWords cron={schedule.cron_schedule} timezone={schedule.timezone} /></td>
                  <td>{schedule.enabled ? "yes" : "paused"}</td>
                  <td>{formatTime(schedule.history.last_ran)}</td>
                  <td class="wide">{formatTime(schedule.history.next_run)}</td>
                  <td class="wide"><a href={hrefOf("", runs)} onClick={(e) => followLink(e, "", runs)}>Its runs</a></td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
    </Section>
  )
}

/** What a schedule's action buttons did: the error beside the button, or the run started. */
interface ActionOutcome {
  readonly error?: string
  readonly started?: string
}

/**
 * A schedule: its cron in words, its next 5 fire times, its recent runs (links to their pages),
 * Pause / Resume and Run now (the API's error beside the button; the page is read again after).
 */
const SchedulePage = (props: { readonly id: string }) => {
  const path = `/agent/schedules/${encodeURIComponent(props.id)}`
  const read = useApi<Schedule>(path)
  const schedule = read.data
  const preview = usePreview(schedule?.cron_schedule, schedule?.timezone, 5)
  const [busy, setBusy] = useState(false)
  const [toggled, setToggled] = useState<ActionOutcome>({})
  const [ran, setRan] = useState<ActionOutcome>({})
  const act = async (action: "pause" | "resume" | "run") => {
    setBusy(true)
    const done = action === "run" ? setRan : setToggled
    try {
      const answer = await request<{ run_id?: string }>(`${path}/${action}`, { method: "POST" })
      done(answer.run_id === undefined ? {} : { started: answer.run_id })
    } catch (failure) {
      done({ error: messageOf(failure) })
    } finally {
      setBusy(false)
      read.reload()
    }
  }
  const runs = new URLSearchParams({ schedule_id: props.id })
  return (
    <>
      <p><a href={hrefOf("schedules")} onClick={(e) => followLink(e, "schedules")}>← All schedules</a></p>
      <Section title={schedule?.name ?? "Schedule"} read={read}>
        {(s) => (
          <>
            <dl class="facts">
              <div><dt>When</dt><dd><span class="cron-words">{preview.data?.description ?? "—"}</span></dd></div>
              <div><dt>Cron</dt><dd><code>{s.cron_schedule}</code> <span class="muted">{s.timezone}</span></dd></div>
              <div><dt>State</dt><dd class="schedule-state">{s.enabled ? "active" : "paused"}</dd></div>
              <div><dt>Last ran</dt><dd>{formatTime(s.history.last_ran)}</dd></div>
              <div><dt>Next run</dt><dd>{formatTime(s.history.next_run)}</dd></div>
            </dl>
            {s.last_spawn_error === null ? null : <p class="error">The last tick started no run: {s.last_spawn_error}</p>}
            <div class="actions-row">
              <div class="buttons">
                <button
                  type="button"
                  class="secondary"
                  disabled={busy}
                  aria-describedby={toggled.error === undefined ? undefined : "schedule-state-error"}
                  onClick={() => void act(s.enabled ? "pause" : "resume")}
                >
                  {s.enabled ? "Pause" : "Resume"}
                </button>
                {toggled.error === undefined ? null : <span class="error" id="schedule-state-error" role="alert">{toggled.error}</span>}
              </div>
              <div class="buttons">
                <button
                  type="button"
                  disabled={busy}
                  aria-describedby={ran.error === undefined ? undefined : "schedule-run-error"}
                  onClick={() => void act("run")}
                >
                  Run now
                </button>
                {ran.error === undefined ? null : <span class="error" id="schedule-run-error" role="alert">{ran.error}</span>}
                {ran.started === undefined ? null : (
                  <span role="status">
                    Started run <a href={hrefOf(`runs/${ran.started}`)} onClick={(e) => followLink(e, `runs/${ran.started}`)}><code>{ran.started}</code></a>
                  </span>
                )}
              </div>
            </div>
            <h2 id="next-runs-heading">Next runs</h2>
            {preview.error === undefined ? null : <p class="error" role="alert">{preview.error}</p>}
            {preview.data === undefined ? null : (
              <ol class="fire-times" aria-labelledby="next-runs-heading">
                {preview.data.next_runs.map((time) => <li key={time}><time dateTime={time}>{formatTime(time)}</time></li>)}
              </ol>
            )}
            <p class="muted">Times in this browser's time zone; the schedule fires on the clock of {s.timezone}.</p>
            <h2>Prompt</h2>
            <pre>{s.prompt}</pre>
            <h2 id="recent-runs-heading">Recent runs</h2>
            <table class="list recent-runs" aria-labelledby="recent-runs-heading">
              <thead><tr><th scope="col">Run</th><th scope="col">State</th><th scope="col">Started for</th></tr></thead>
              <tbody>
                {s.history.recent_runs.length === 0 ? <Empty columns={3} text="No run yet." /> : s.history.recent_runs.map((run) => (
                  <tr key={run.run_id} data-run-id={run.run_id}>
                    <td><a class="run-link" href={hrefOf(`runs/${run.run_id}`)} onClick={(e) => followLink(e, `runs/${run.run_id}`)}><code>{run.run_id}</code></a></td>
                    <td><span class={`state state-${run.state.toLowerCase()}`}>{run.state}</span></td>
                    <td>{formatTime(run.scheduled_for)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <p><a href={hrefOf("", runs)} onClick={(e) => followLink(e, "", runs)}>All its runs</a></p>
          </>
        )}
      </Section>
    </>
  )
}
