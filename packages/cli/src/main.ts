#!/usr/bin/env node
/**
 * `agent-runs`: the command line (see Cli.ts). A failure prints one line on stderr and sets the
 * exit code (Failure.ts: 1 API error, 2 usage, 4 auth, 5/6/7 a watched run's outcome).
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { run } from "./Cli.js"
import * as Failure from "./Failure.js"

run(process.argv).pipe(
  Failure.report,
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true, teardown: Failure.teardown })
)
