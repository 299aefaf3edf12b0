/**
 * `npm run bench`: every benchmark once, in quick mode (about 10 minutes on a 2-CPU machine), one
 * after the other, and their figures gathered into `bench/results/latest.json`:
 *
 *   { generated_at, node, cpus, load_average, mode, seconds, rows: [{ name, ours, baseline, unit,
 *     ratio, goal, met, notes? }], failed: [{ bench, code, log }] }
 *
 * Each row's ours and baseline were measured in the same run of the same script
 * (bench/support/results.ts). Each bench's output goes to `bench/results/<bench>.log`.
 *
 *   npm run bench                      # quick mode: every bench, ≤ ~10 minutes
 *   BENCH_MODE=full npm run bench      # each bench with its own (larger) defaults
 *   BENCH_ONLY=http,ingress npm run bench
 *
 * The benchmarks listen on 127.0.0.1 only, use the PostgreSQL at 127.0.0.1:5432 (fresh databases
 * they drop), and stop by themselves; a bench that fails or overruns its limit is listed under
 * `failed` and the others still run. Never part of `npm test`.
 */
import { spawn, spawnSync } from "node:child_process"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { join } from "node:path"
import type { ResultRow } from "./support/results.js"

const ROOT = join(import.meta.dirname, "..")
const RESULTS = join(ROOT, "bench", "results")
const QUICK = process.env.BENCH_MODE !== "full"

interface Bench {
  readonly name: string
  /** The quick mode's settings (full mode: the bench's defaults). */
  readonly quick: Readonly<Record<string, string>>
  /** Its time limit, in seconds (quick mode; full mode gets four times as long). */
  readonly limitSeconds: number
}

const BENCHES: ReadonlyArray<Bench> = [
  { name: "http", quick: { BENCH_RUNS: "100000", BENCH_SECONDS: "5" }, limitSeconds: 900 },
  { name: "ingress", quick: { BENCH_SECONDS: "4" }, limitSeconds: 300 },
  { name: "scheduler", quick: {}, limitSeconds: 240 },
  { name: "queue", quick: {}, limitSeconds: 180 },
  { name: "output", quick: { BENCH_OUTPUT_MB: "20" }, limitSeconds: 300 },
  { name: "engine", quick: { BENCH_ENGINE_RUNS: "200" }, limitSeconds: 240 },
  { name: "dispatch", quick: { BENCH_RUNS: "60", BENCH_THROUGHPUT_RUNS: "200", BENCH_DOCKER: "0" }, limitSeconds: 180 },
  { name: "storage", quick: { BENCH_ADAPTERS: "sqlite", BENCH_RUNS: "100000" }, limitSeconds: 300 },
  { name: "cost", quick: { BENCH_CONCURRENCIES: "10,100", BENCH_WINDOW_SECONDS: "10" }, limitSeconds: 240 },
  { name: "clones", quick: { BENCH_CLONE_MB: "40", BENCH_CLONE_RUNS: "10" }, limitSeconds: 240 }
]

const only = process.env.BENCH_ONLY?.split(",").map((s) => s.trim()).filter((s) => s !== "")

const run = (bench: Bench, resultsFile: string): Promise<{ readonly code: number | null; readonly log: string }> =>
  new Promise((resolve) => {
    const log = join(RESULTS, `${bench.name}.log`)
    const output: Array<Buffer> = []
    const child = spawn(
      process.execPath,
      [join(ROOT, "node_modules", "vite-node", "vite-node.mjs"), "--config", "bench/vite.config.ts", `bench/${bench.name}/run.ts`],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          ...(QUICK ? bench.quick : {}),
          BENCH_SKIP_BUILD: "1",
          BENCH_RESULTS_FILE: resultsFile
        },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true
      }
    )
    const keep = (chunk: Buffer) => {
      output.push(chunk)
      process.stdout.write(chunk)
    }
    child.stdout.on("data", keep)
    child.stderr.on("data", keep)
    const limit = bench.limitSeconds * (QUICK ? 1 : 4) * 1000
    const timer = setTimeout(() => {
      console.error(`bench:${bench.name} is over its limit of ${limit / 1000} s: stopping it`)
      try {
        process.kill(-child.pid!, "SIGKILL")
      } catch {
        // already gone
      }
    }, limit)
    child.on("exit", (code) => {
      clearTimeout(timer)
      writeFileSync(log, Buffer.concat(output))
      resolve({ code, log: `bench/results/${bench.name}.log` })
    })
  })

const main = async () => {
  mkdirSync(RESULTS, { recursive: true })
  const started = performance.now()
  const load = loadavg()[0]!
  console.log(`npm run bench: ${QUICK ? "quick" : "full"} mode, node ${process.version}, ${cpus().length} CPUs, load ${load.toFixed(2)}`)
  console.log("building (npx tsc -b tsconfig.json)…")
  const build = spawnSync("npx", ["tsc", "-b", "tsconfig.json"], { cwd: ROOT, encoding: "utf8" })
  if (build.status !== 0) {
    console.error(`the build failed:\n${build.stdout}${build.stderr}`)
    process.exit(1)
  }
  const rows: Array<ResultRow> = []
  const failed: Array<{ readonly bench: string; readonly code: number | null; readonly log: string }> = []
  for (const bench of BENCHES) {
    if (only !== undefined && !only.includes(bench.name)) continue
    const file = join(RESULTS, `.${bench.name}.rows.jsonl`)
    rmSync(file, { force: true })
    console.log(`\n=== bench:${bench.name} ===`)
    const { code, log } = await run(bench, file)
    let recorded: Array<ResultRow> = []
    try {
      recorded = readFileSync(file, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as ResultRow)
    } catch {
      // no rows
    }
    rmSync(file, { force: true })
    rows.push(...recorded)
    if (code !== 0 || recorded.length === 0) failed.push({ bench: bench.name, code, log })
  }
  const seconds = Math.round((performance.now() - started) / 1000)
  const result = {
    generated_at: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    load_average: Math.round(load * 100) / 100,
    mode: QUICK ? "quick" : "full",
    seconds,
    rows,
    failed
  }
  writeFileSync(join(RESULTS, "latest.json"), `${JSON.stringify(result, null, 2)}\n`)
  console.log(`\n${rows.length} figures in ${seconds} s → bench/results/latest.json\n`)
  const width = Math.max(...rows.map((r) => r.name.length), 10)
  for (const r of rows) {
    console.log(
      `${r.met ? "met " : "MISS"}  ${r.name.padEnd(width)}  ours ${String(r.ours).padStart(9)}  baseline ${
        String(r.baseline ?? "—").padStart(9)
      } ${r.unit.padEnd(22)} ratio ${String(r.ratio ?? "—").padStart(7)}  goal ${r.goal}`
    )
  }
  for (const f of failed) console.log(`FAILED bench:${f.bench} (exit ${f.code}); see ${f.log}`)
  process.exit(failed.length === 0 ? 0 : 1)
}

void main()
