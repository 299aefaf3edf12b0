export * as OctokitHost from "./OctokitHost.js"
