/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS preload for --require */
/* global require, process */
/**
 * A preload that profiles the process it is loaded into (Node refuses `--cpu-prof` in
 * NODE_OPTIONS, a `--require`d file works): the V8 CPU profiler starts at once and the profile is
 * written to `$BENCH_PROFILE_DIR/<pid>.cpuprofile` when the process receives SIGUSR2 (the profile so
 * far; profiling restarts) or exits. Load it with
 *   BENCH_SERVER_NODE_OPTIONS="--require $PWD/bench/support/cpu-profile.cjs" BENCH_PROFILE_DIR=bench/profiles npm run bench:http
 * and summarize with `npx vite-node bench/support/profile-summary.ts bench/profiles/<pid>.cpuprofile`.
 */
const inspector = require("node:inspector")
const fs = require("node:fs")
const path = require("node:path")

const dir = process.env.BENCH_PROFILE_DIR ?? "bench/profiles"
const session = new inspector.Session()
session.connect()
session.post("Profiler.enable")
session.post("Profiler.setSamplingInterval", { interval: 200 })
session.post("Profiler.start")
let part = 0

const write = (restart) => {
  session.post("Profiler.stop", (error, result) => {
    if (!error) {
      fs.mkdirSync(dir, { recursive: true })
      fs.writeFileSync(path.join(dir, `${process.pid}-${part++}.cpuprofile`), JSON.stringify(result.profile))
    }
    if (restart) session.post("Profiler.start")
  })
}

process.on("SIGUSR2", () => write(true))
process.on("exit", () => write(false))
