/**
 * This release of Agent Runs: every package of it carries this version (CHANGELOG.md lists what
 * each release changed and how to upgrade to it). A server and a self-hosted worker may be one
 * minor release apart (WorkerProtocol.ts); migrations keep the schema usable by the previous
 * release's code (docs/operations.md, "Upgrading and rolling back").
 */
export const VERSION = "0.2.0"
