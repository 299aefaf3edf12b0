/** @agent-runs/client: a typed client of the Agent Runs HTTP API. */
export {}
