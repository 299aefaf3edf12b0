#!/usr/bin/env node
/**
 * `agent-runs`: the command line (see Cli.ts). A failure prints one line on stderr and sets the
 * exit code (Failure.ts: 1 API error, 2 usage, 4 auth, 5/6/7 a watched run's outcome); colour on a
 * terminal only (Colour.ts).
 */
import { NodeRuntime } from "@effect/platform-node"
import { main } from "./Cli.js"
import { wantsColour, withoutColour } from "./Colour.js"
import * as Failure from "./Failure.js"

const program = main(process.argv)
// Colour for a terminal only (and not with NO_COLOR): piped, the help and errors are plain text.
const shown = wantsColour(process.stdout, process.env) ? program : withoutColour(program)
shown.pipe(NodeRuntime.runMain({ disableErrorReporting: true, teardown: Failure.teardown }))
