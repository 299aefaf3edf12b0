#!/usr/bin/env node
/**
 * The scripted agent as a process: `node dist/main.js`, JSON Lines on stdin and stdout
 * (docs/reference/harness-protocol.md). Only `node:` built-ins, so it runs in any container with
 * Node and this package's `dist` mounted. Exits once every byte written to stdout and stderr has been flushed.
 */
import { readFile } from "node:fs/promises"
import { createInterface } from "node:readline"
import { setTimeout as sleep } from "node:timers/promises"
import { runAgent } from "./Runner.js"

/** Calls back once everything written to `stream` so far has been handed to the OS. */
const flushed = (stream: NodeJS.WriteStream): Promise<void> =>
  new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) resolve()
    else stream.write("", () => resolve())
  })

// A reader that went away (EPIPE) must not crash the agent with a stack trace: its output is lost anyway.
process.stdout.on("error", () => {})
process.stderr.on("error", () => {})

const code = await runAgent({
  lines: createInterface({ input: process.stdin, crlfDelay: Infinity }),
  writeLine: (line) => {
    process.stdout.write(`${line}\n`)
  },
  writeStderr: (text) => {
    process.stderr.write(text)
  },
  readFile: (path) => readFile(path, "utf8"),
  fetch: (url, init) => fetch(url, init),
  sleep: (ms, signal) => sleep(ms, undefined, { signal })
})
await Promise.all([flushed(process.stdout), flushed(process.stderr)])
process.exit(code)
