/**
 * The team's GitHub token in an agent's own environment (`github_token: true` on a run or its
 * environment; docs/github.md), for agents that push and open pull requests themselves (Claude
 * Code with `gh`, say). Off by default: the service pushes and opens pull requests from outside
 * the sandbox, and the agent never holds the credential.
 *
 * Decisions:
 * - Only team admins may hand the token to an agent: a member's run or environment asking for it
 *   is a 403 naming `config.github_token`; a run holding it follows the rules of the other secrets
 *   only admins hand out (AdminOnlySecrets.ts: admins alone follow it up; an environment or
 *   execution someone with fewer rights shaped is refused).
 * - The variables: `GH_TOKEN` and `GITHUB_TOKEN` (read by `gh` and most tools); for a GitHub
 *   Enterprise Server also `GH_HOST` and `GH_ENTERPRISE_TOKEN`; and git's configuration through
 *   `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` naming a credential helper for the
 *   host's URL only, which answers the token from the environment (so `git push` to `origin`
 *   works, and no file holds the token). The agent's process gets them (and what it starts), over
 *   the environment's own variables; not the setup commands, nor a debug agent in a failed
 *   setup's retained sandbox (which is started with the environment as it is then).
 * - The token is the connection's: a personal token as it is, an App's installation token minted
 *   for the run (an hour long). A run asking for it in a team not connected fails its setup.
 */
import { Effect } from "effect"
import type { Viewer } from "./Access.js"
import { NotAuthorized } from "./Errors.js"
import { GITHUB_COM } from "./GitHub.js"

/** Refuses (403 naming `field`) a request of someone other than a team admin that hands the token to an agent. */
export const checkGitHubTokenRequest = (viewer: Viewer, requested: boolean | undefined, field: string) =>
  requested !== true || viewer.role === "admin"
    ? Effect.void
    : Effect.fail(new NotAuthorized({ message: `${field}: only team admins may hand the team's GitHub token to an agent` }))

/** A git credential helper answering the token from `$GH_TOKEN` (git runs it with `get`, `store` or `erase`). */
const CREDENTIAL_HELPER = "!f() { test \"$1\" = get && echo username=x-access-token && echo \"password=$GH_TOKEN\"; }; f"

/** Whether an agent's variables hold the team's GitHub token. */
export const holdsGitHubToken = (vars: Readonly<Record<string, string>>): boolean => vars["GH_TOKEN"] !== undefined

/** The variables an agent gets for the team's host at `baseUrl`, with `token`. */
export const agentGitHubVariables = (baseUrl: string, token: string): Record<string, string> => ({
  GH_TOKEN: token,
  GITHUB_TOKEN: token,
  ...(baseUrl === GITHUB_COM ? {} : { GH_HOST: new URL(baseUrl).host, GH_ENTERPRISE_TOKEN: token }),
  GIT_CONFIG_COUNT: "1",
  GIT_CONFIG_KEY_0: `credential.${baseUrl}.helper`,
  GIT_CONFIG_VALUE_0: CREDENTIAL_HELPER
})
