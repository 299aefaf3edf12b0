/**
 * `npm start`: serves Agent Runs with the configuration of the environment (see @agent-runs/cli's
 * serve/Config.ts); a failed start prints one line and exits 1 (serve/Startup.ts).
 */
import { NodeRuntime } from "@effect/platform-node"
import { serve } from "@agent-runs/cli"

serve.pipe(NodeRuntime.runMain({ disableErrorReporting: true }))
