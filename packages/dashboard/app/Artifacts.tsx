/**
 * A run's artifacts on its page: each one's type, its `http(s)` URL as a link (opened without
 * referrer: an artifact's URL is the agent's to choose) and its data collapsed. A pull request is
 * named as GitHub names it (`acme/app#12 on github.com`) when its data holds the repository and
 * the number and its URL is that pull request's page, by its URL otherwise, with its branch beside it.
 */
import type { Artifact } from "./api.js"
import { formatJson } from "./format.js"

/** A link the page may show: http(s) only. */
export const safeUrl = (value: unknown): string | undefined => {
  if (typeof value !== "string") return undefined
  try {
    const url = new URL(value)
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : undefined
  } catch {
    return undefined
  }
}

/**
 * What a link to an artifact says: a pull request's `owner/repo#number` with its host when its URL
 * is that pull request's page (`https://<host>/<owner>/<repo>/pull/<number>`), else the URL itself:
 * anyone reporting an artifact (an agent) cannot make a link to elsewhere look like a pull request.
 */
const linkText = (artifact: Artifact, url: string): string => {
  if (artifact.artifact_type !== "PULL_REQUEST") return url
  const { repository, number } = artifact.data
  if (repository === undefined || number === undefined) return url
  const parsed = new URL(url)
  return parsed.pathname === `/${repository}/pull/${number}` ? `${repository}#${number} on ${parsed.host}` : url
}

const ArtifactItem = (props: { readonly artifact: Artifact }) => {
  const { artifact } = props
  const link = safeUrl("url" in artifact.data ? artifact.data.url : undefined)
  const branch = artifact.artifact_type === "PULL_REQUEST" ? artifact.data.branch : undefined
  return (
    <li>
      <code>{artifact.artifact_type}</code>{" "}
      {link === undefined ? null : <a href={link} rel="noopener noreferrer" target="_blank">{linkText(artifact, link)}</a>}
      {typeof branch === "string" ? <span class="muted"> from the branch <code>{branch}</code></span> : null}
      <details><summary>Data</summary><pre>{formatJson(artifact.data)}</pre></details>
    </li>
  )
}

export const Artifacts = (props: { readonly artifacts: ReadonlyArray<Artifact> }) =>
  props.artifacts.length === 0
    ? <p class="muted">No artifacts.</p>
    : <ul class="artifacts">{props.artifacts.map((artifact, index) => <ArtifactItem key={index} artifact={artifact} />)}</ul>
