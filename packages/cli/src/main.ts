#!/usr/bin/env node
/** `agent-runs`: the command line (see Cli.ts). Exits 1 when the command fails (it has said why). */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { run } from "./Cli.js"

run(process.argv).pipe(Effect.provide(NodeContext.layer), NodeRuntime.runMain({ disableErrorReporting: true }))
