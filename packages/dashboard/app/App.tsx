/**
 * The app's shell: the sign-in page until the tab has a token, then the header (who is signed in,
 * the team to act in from `GET /agent/me`, sign out) and the page of the current route. A 401 from
 * the API anywhere opens the sign-in form in a dialog over the page, with the API's reason: the
 * page stays mounted, so what was typed in it is still there after signing in again.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import { ApiError, type Me, messageOf, request, session, whenUnauthorized } from "./api.js"
import { EnvironmentsPage, SecretsPage, WorkersPage } from "./Factory.js"
import { GitHubPage } from "./GitHub.js"
import { AuditPage } from "./Audit.js"
import { MembersPage } from "./Members.js"
import { followLink, hrefOf, type Location, navigate, useLocation } from "./router.js"
import { RunPage } from "./RunPage.js"
import { RunsPage } from "./RunsPage.js"
import { forgetCronWords, SchedulesPage } from "./Schedules.js"
import { SignIn, SignInAgain } from "./SignIn.js"
import { OverviewPage } from "./Overview.js"
import { SpendPage } from "./Spend.js"
import { ExpiryBanner } from "./TokenExpiry.js"
import { WebhookPage, WebhooksPage } from "./Webhooks.js"
import { OutboundWebhookPage, OutboundWebhooksPage } from "./Outbound.js"

/**
 * The team this tab acts in: a select of the caller's teams when it has several (by name, the uid
 * beside a name two teams share), the team's name alone when it has one.
 */
const TeamSwitcher = (props: { readonly me: Me; readonly team: string; readonly onSwitch: (team: string) => void }) => {
  const { teams } = props.me
  if (teams.length === 0) return <span class="team muted">In no team</span>
  if (teams.length === 1) return <span class="team"><span class="muted">Team</span> {teams[0]!.name}</span>
  const shared = (name: string) => teams.filter((t) => t.name === name).length > 1
  return (
    <span class="team">
      <label for="team">Team</label>
      <select id="team" value={props.team} onChange={(e) => props.onSwitch(e.currentTarget.value)}>
        {teams.map((t) => <option key={t.uid} value={t.uid}>{shared(t.name) ? `${t.name} (${t.uid})` : t.name}</option>)}
      </select>
      {props.me.teams_truncated ? <span class="muted">(your first {teams.length} teams)</span> : null}
    </span>
  )
}

/** The team to act in: the tab's when the caller is still a member of it, else the caller's first. */
const teamFor = (me: Me, wanted: string): string =>
  me.teams.some((t) => t.uid === wanted) ? wanted : me.default_team_uid ?? ""

/** The sections of the app: their route and name in the navigation. */
const SECTIONS: ReadonlyArray<readonly [string, string]> = [
  ["", "Runs"],
  ["overview", "Overview"],
  ["schedules", "Schedules"],
  ["webhooks", "Webhooks"],
  ["environments", "Environments"],
  ["workers", "Workers"],
  ["secrets", "Secrets"],
  ["spend", "Spend"],
  ["github", "GitHub"],
  ["audit", "Audit log"]
]

/** Whether the caller is an admin of `team` (its role there, as its token limits it). */
const adminOf = (me: Me | undefined, team: string): boolean =>
  me !== undefined && me.teams.some((t) => t.uid === team && t.role === "admin")

/** The team's admins also manage its outbound webhooks; they and instance administrators, its members. */
const sectionsFor = (me: Me | undefined, team: string): ReadonlyArray<readonly [string, string]> => {
  const admin = adminOf(me, team)
  const manages = me !== undefined && (me.instance_admin || admin)
  return [
    ...SECTIONS,
    ...(admin ? [["outbound", "Outbound webhooks"] as const] : []),
    ...(manages ? [["members", "Members"] as const] : [])
  ]
}

/** The page of a route (`key` makes a new team or another id load afresh); `admin`: the caller is an admin of the team. */
const pageOf = (location: Location, generation: number, admin: boolean) => {
  const [section = "", id] = location.route.split("/")
  const key = `${generation}:${location.route}`
  switch (section) {
    case "runs":
      return id === undefined ? <RunsPage key={generation} query={location.query} /> : <RunPage key={key} runId={id} />
    case "schedules":
      return <SchedulesPage key={key} />
    case "webhooks":
      return id === undefined ? <WebhooksPage key={key} /> : <WebhookPage key={`${key}?${location.query.toString()}`} uid={id} query={location.query} />
    case "outbound":
      return id === undefined
        ? <OutboundWebhooksPage key={key} />
        : <OutboundWebhookPage key={`${key}?${location.query.toString()}`} uid={id} query={location.query} />
    case "environments":
      return <EnvironmentsPage key={key} />
    case "workers":
      return <WorkersPage key={key} />
    case "secrets":
      return <SecretsPage key={key} />
    case "spend":
      return <SpendPage key={key} admin={admin} />
    case "overview":
      return <OverviewPage key={key} admin={admin} />
    case "github":
      return <GitHubPage key={key} admin={admin} />
    case "audit":
      return <AuditPage key={`${key}?${location.query.toString()}`} query={location.query} />
    case "members":
      return <MembersPage key={`${key}?${location.query.toString()}`} query={location.query} />
    default:
      return <RunsPage key={generation} query={location.query} />
  }
}

export const App = () => {
  const [signedIn, setSignedIn] = useState(session.token() !== null)
  const [reason, setReason] = useState<string | undefined>(undefined)
  // Why the token stopped working while a page is open: the sign-in dialog is shown over it.
  const [expired, setExpired] = useState<string | undefined>(undefined)
  // The caller and its teams (GET /agent/me); an error when they could not be read.
  const [me, setMe] = useState<Me | undefined>(undefined)
  const [meError, setMeError] = useState<string | undefined>(undefined)
  const [team, setTeam] = useState(session.team())
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
      session.forgetToken()
      setExpired(`Signed out: ${why}`)
    })
  }, [])

  /** Acts in `next` from now on (the tab's TEAM header); pages load again when it changes. */
  const actIn = (next: string) => {
    session.setTeam(next)
    if (next !== team) {
      forgetCronWords()
      setTeam(next)
      setGeneration((n) => n + 1)
    }
  }

  // A tab opened with a token (a reload): who it is, before any page loads.
  useEffect(() => {
    if (!signedIn || me !== undefined) return
    request<Me>("/agent/me", { team: "" }).then(
      (found) => {
        setMe(found)
        actIn(teamFor(found, session.team()))
      },
      (failure: unknown) => {
        // A 401 opens the sign-in dialog; anything else leaves the tab's team as it was.
        if (!(failure instanceof ApiError && failure.status === 401)) {
          setMeError(`Your teams could not be read: ${messageOf(failure)}`)
        }
      }
    )
  }, [signedIn])

  /** Signs out: the sign-in page, at the app's root (whoever signs in next gets none of this route). */
  const signOut = () => {
    session.signOut()
    navigate("", undefined, true)
    setReason("You signed out.")
    setExpired(undefined)
    setMe(undefined)
    setMeError(undefined)
    setSignedIn(false)
  }

  /**
   * `token` works and is `found`'s, from the sign-in page or the dialog over a page. The same
   * caller keeps the page as it was (what was typed in it included); anyone else starts afresh at
   * the app's root, with no query: nothing of the page, its route or its filters is theirs.
   */
  const signedInAs = (token: string, found: Me) => {
    const same = me?.principal.uid === found.principal.uid
    const next = teamFor(found, session.team())
    session.signIn(token, next)
    forgetCronWords()
    setMe(found)
    setMeError(undefined)
    setReason(undefined)
    setExpired(undefined)
    setSignedIn(true)
    if (same) actIn(next)
    else {
      if (expired !== undefined) navigate("", undefined, true)
      setTeam(next)
      setGeneration((n) => n + 1)
    }
  }

  if (!signedIn) {
    return (
      <SignIn
        reason={reason}
        onSignedIn={signedInAs}
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
          {sectionsFor(me, team).map(([route, name]) => (
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
        {me === undefined ? null : <TeamSwitcher me={me} team={team} onSwitch={actIn} />}
        {meError === undefined ? null : <span class="error" role="alert">{meError}</span>}
        <span class="who">
          {me === undefined ? null : <>Signed in as <strong>{me.principal.display_name}</strong></>}
          <button type="button" class="secondary" onClick={signOut}>Sign out</button>
        </span>
      </header>
      <main id="main" tabIndex={-1}>
        {me === undefined ? null : <ExpiryBanner me={me} />}
        {me === undefined && meError === undefined ? <p class="muted">Loading…</p> : pageOf(location, generation, adminOf(me, team))}
      </main>
      {expired === undefined ? null : (
        <SignInAgain
          reason={expired}
          onSignOut={signOut}
          onSignedIn={signedInAs}
        />
      )}
    </>
  )
}
