/** File-system helpers the Node packages of Agent Runs share. */
export * as Directories from "./Directories.js"
