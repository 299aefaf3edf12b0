#!/usr/bin/env node
/**
 * `agent-runs`: the command line (see Cli.ts). A failure prints one line on stderr and sets the
 * exit code (Failure.ts: 1 API error, 2 usage, 4 auth, 5/6/7 a watched run's outcome).
 */
import { NodeRuntime } from "@effect/platform-node"
import { main } from "./Cli.js"
import * as Failure from "./Failure.js"

main(process.argv).pipe(NodeRuntime.runMain({ disableErrorReporting: true, teardown: Failure.teardown }))
