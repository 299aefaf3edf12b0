/**
 * `/`: what this service is and where to go from here (the dashboard, the API docs, the OpenAPI
 * document, the error reference, health and readiness), with the mount prefix in every link.
 */
import { escapeHtml, page } from "./Page.js"

export const homePage = (basePath: string) => {
  const link = (path: string, text: string) => `<a href="${escapeHtml(`${basePath}${path}`)}">${text}</a>`
  return page(
    "Agent Runs",
    `<h1>Agent Runs</h1>
<p>This service runs coding agents: create a run from a prompt, watch it, read its conversation and transcript,
send follow-ups, cancel it; schedule agents and start them from webhooks.</p>
<ul>
<li>${link("/app", "Dashboard")}: watch and start runs in the browser (sign in with a token)</li>
<li>${link("/docs", "API documentation")}: every endpoint, with its parameters, bodies and answers</li>
<li>${link("/openapi.json", "OpenAPI document")}: for clients and tools</li>
<li>${link("/docs/errors", "Errors")}: what each <code>error_code</code> means and what to do</li>
<li>${link("/healthz", "Health")} and ${link("/readyz", "readiness")}</li>
</ul>
<p>Every API call is under <code>${escapeHtml(basePath)}/api/v1</code> and needs <code>Authorization: Bearer &lt;token&gt;</code>, for example:</p>
<pre><code>curl -H "Authorization: Bearer $AGENT_RUNS_TOKEN" -H "content-type: application/json" \\
  -d '{"prompt":"Say hello"}' ${escapeHtml(basePath)}/api/v1/agent/runs</code></pre>`
  )
}
