export * as OctokitHost from "./OctokitHost.js"
export * as GitHubRepoSource from "./GitHubRepoSource.js"
