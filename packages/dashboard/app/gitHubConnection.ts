/**
 * The team's connection to GitHub (`/agent/github`; docs/github.md): the wire shapes the GitHub
 * page reads and the calls it makes, in the team of the tab. A credential is named by the team
 * secrets holding it: the API never answers a secret's value.
 */
import { request } from "./api.js"

/** Where a team connects when it names no host. */
export const GITHUB_COM = "https://github.com"

/** A fine-grained personal access token, or a GitHub App's installation (its private key a secret). */
export type GitHubAuth =
  | { readonly type: "token"; readonly token_secret: string }
  | { readonly type: "app"; readonly app_id: number; readonly installation_id: number; readonly private_key_secret: string }

export interface GitHubConnection {
  readonly base_url: string
  readonly auth: GitHubAuth
  readonly connected_by: string
  readonly connected_at: string
  readonly updated_at: string
}

/** `GET /agent/github` (and what `PUT` answers). */
export interface GitHubState {
  readonly connected: boolean
  readonly connection: GitHubConnection | null
}

/** `PUT /agent/github`: the host and the credential. */
export interface ConnectGitHub {
  readonly base_url: string
  readonly auth: GitHubAuth
}

export interface ReachableRepository {
  readonly owner: string
  readonly repo: string
  readonly default_branch: string
  readonly can_push: boolean
}

/** `GET /agent/github/repositories`: what the credential reaches; `truncated` past the API's cap. */
export interface ReachableRepositories {
  readonly repositories: ReadonlyArray<ReachableRepository>
  readonly truncated: boolean
}

export const GITHUB_PATH = "/agent/github"
export const REPOSITORIES_PATH = "/agent/github/repositories"

/** Connects the team, or changes its connection (team admins). */
export const connectGitHub = (body: ConnectGitHub): Promise<GitHubState> => request(GITHUB_PATH, { method: "PUT", body })

/** Disconnects the team (team admins); its secrets stay. */
export const disconnectGitHub = (): Promise<unknown> => request(GITHUB_PATH, { method: "DELETE" })

