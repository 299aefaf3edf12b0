/**
 * The app's shell: the sign-in page until the tab has a token, then the header (the team to act
 * in, sign out) and the page of the current route. A 401 from the API anywhere returns to the
 * sign-in page with the API's reason.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import { ApiError, request, session, whenUnauthorized } from "./api.js"
import { EnvironmentsPage, SchedulesPage, SecretsPage, WebhookPage, WebhooksPage, WorkersPage } from "./Factory.js"
import { followLink, hrefOf, type Location, useLocation } from "./router.js"
import { RunPage } from "./RunPage.js"
import { RunsPage } from "./RunsPage.js"
import { SignIn } from "./SignIn.js"

/** The team switcher: the team uid this tab acts in (the API has no list of a caller's teams). */
const TeamSwitcher = (props: { readonly onSwitched: () => void }) => {
  const [team, setTeam] = useState(session.team())
  const [error, setError] = useState<string | undefined>(undefined)
  const submit = async (event: Event) => {
    event.preventDefault()
    try {
      await request("/agent/runs?limit=1", { team: team.trim() })
      session.setTeam(team.trim())
      setError(undefined)
      props.onSwitched()
    } catch (failure) {
      setError(failure instanceof ApiError ? failure.message : String(failure))
    }
  }
  return (
    <form class="team" method="post" onSubmit={submit}>
      <label for="team">Team</label>
      <input
        id="team"
        placeholder="first team"
        autocomplete="off"
        value={team}
        onInput={(e) => setTeam(e.currentTarget.value)}
        aria-describedby={error === undefined ? undefined : "team-error"}
      />
      <button type="submit">Switch</button>
      {error === undefined ? null : <span class="error" id="team-error" role="alert">{error}</span>}
    </form>
  )
}

/** The sections of the app: their route and name in the navigation. */
const SECTIONS: ReadonlyArray<readonly [string, string]> = [
  ["", "Runs"],
  ["schedules", "Schedules"],
  ["webhooks", "Webhooks"],
  ["environments", "Environments"],
  ["workers", "Workers"],
  ["secrets", "Secrets"]
]

/** The page of a route (`key` makes a new team or another id load afresh). */
const pageOf = (location: Location, generation: number) => {
  const [section = "", id] = location.route.split("/")
  const key = `${generation}:${location.route}`
  switch (section) {
    case "runs":
      return id === undefined ? <RunsPage key={generation} query={location.query} /> : <RunPage key={key} runId={id} />
    case "schedules":
      return <SchedulesPage key={key} />
    case "webhooks":
      return id === undefined ? <WebhooksPage key={key} /> : <WebhookPage key={`${key}?${location.query.toString()}`} uid={id} query={location.query} />
    case "environments":
      return <EnvironmentsPage key={key} />
    case "workers":
      return <WorkersPage key={key} />
    case "secrets":
      return <SecretsPage key={key} />
    default:
      return <RunsPage key={generation} query={location.query} />
  }
}

export const App = () => {
  const [signedIn, setSignedIn] = useState(session.token() !== null)
  const [reason, setReason] = useState<string | undefined>(undefined)
  // Bumped when the team changes: pages load again.
  const [generation, setGeneration] = useState(0)
  const location = useLocation()

  // After moving to another page (not on the first load), focus goes to its content, so that
  // keyboard and screen-reader users start there.
  const firstRoute = useRef(true)
  useEffect(() => {
    if (firstRoute.current) {
      firstRoute.current = false
      return
    }
    document.getElementById("main")?.focus()
  }, [location.route])

  useEffect(() => {
    whenUnauthorized((why) => {
      session.signOut()
      setReason(`Signed out: ${why}`)
      setSignedIn(false)
    })
  }, [])

  if (!signedIn) {
    return (
      <SignIn
        reason={reason}
        onSignedIn={(token, team) => {
          session.signIn(token, team)
          setReason(undefined)
          setSignedIn(true)
        }}
      />
    )
  }

  const section = location.route.split("/")[0] ?? ""
  const current = section === "runs" ? "" : section
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <a class="brand" href={hrefOf("")} onClick={(e) => followLink(e, "")}>Agent Runs</a>
        <nav class="sections" aria-label="Sections">
          {SECTIONS.map(([route, name]) => (
            <a
              key={route}
              href={hrefOf(route)}
              onClick={(e) => followLink(e, route)}
              aria-current={current === route ? "page" : undefined}
            >
              {name}
            </a>
          ))}
        </nav>
        <TeamSwitcher onSwitched={() => setGeneration((n) => n + 1)} />
        <button
          type="button"
          class="secondary"
          onClick={() => {
            session.signOut()
            setReason("You signed out.")
            setSignedIn(false)
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {pageOf(location, generation)}
      </main>
    </>
  )
}
