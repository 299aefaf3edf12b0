#!/usr/bin/env node
// `agent-runs`: starts the built command line (dist/main.js). This file is not built, so npm links
// the command on the first install, before the workspace's `prepare` builds dist.
import process from "node:process"

import("../dist/main.js").catch((error) => {
  if (error?.code === "ERR_MODULE_NOT_FOUND" && String(error.message).includes("dist/main.js")) {
    process.stderr.write("agent-runs is not built yet: run `npm run build` (or `npm install`) in the Agent Runs checkout\n")
    process.exit(1)
  }
  throw error
})
