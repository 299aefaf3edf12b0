/**
 * Secrets only team admins may hand to an agent (docs/security.md): a harness auth secret other
 * than its harness's conventional name, team secrets referenced inline in an MCP server's
 * configuration (registered servers are for every member), and the team's GitHub token
 * (`github_token`, AgentGitHubToken.ts). A run whose agent holds one is shaped
 * by team admins alone: a follow-up from anyone else is refused (it steers an agent that could
 * print the secret; lowering the run's token would not take the secret back), a run whose
 * environment someone else last changed is refused at create, and an execution that someone else
 * shaped since (Access.runTokenRole below admin) fails its setup instead of starting the agent.
 */
import { Effect } from "effect"
import type { Viewer } from "./Access.js"
import { NotAuthorized } from "./Errors.js"
import { adminOnlyAuthSecretOf } from "./HarnessSelection.js"
import { type McpDirectServer, secretReferences } from "./McpServers.js"
import type { AgentConfig } from "./Run.js"

/** The first secret only admins may hand out that the run's agent would hold, described; none otherwise. */
export const adminOnlySecretOf = (config: AgentConfig): string | undefined => {
  if (config.github_token === true) return "the team's GitHub token (config.github_token)"
  const auth = adminOnlyAuthSecretOf(config)
  if (auth !== undefined) return `the team secret ${auth}`
  for (const [name, server] of Object.entries(config.mcp_servers ?? {})) {
    if ("server_id" in server && server.server_id !== undefined) continue
    const [reference] = secretReferences(server as McpDirectServer)
    if (reference !== undefined) return `the team secret ${reference.name} (MCP server ${name})`
  }
  return undefined
}

/** Refuses (403) a follow-up of someone other than a team admin to a run whose agent holds such a secret. */
export const checkFollowupSender = (viewer: Viewer, config: AgentConfig) =>
  Effect.gen(function*() {
    const secret = adminOnlySecretOf(config)
    if (secret === undefined || viewer.role === "admin") return
    return yield* new NotAuthorized({ message: `only team admins may follow up this run: its agent uses ${secret}` })
  })

/**
 * Why an execution shaped with `role` (Access.runTokenRole; undefined: no rights) may not hand its
 * agent the admin-only secrets of `config`; undefined when it may.
 */
export const shapedSecretProblem = (config: AgentConfig, role: string | undefined): string | undefined => {
  const secret = adminOnlySecretOf(config)
  if (secret === undefined || role === "admin") return undefined
  return `its agent would hold ${secret}, which only team admins may hand to an agent, but someone with fewer rights ` +
    "shaped the run (changed its environment or sent it a follow-up); a team admin must set up the environment again"
}
