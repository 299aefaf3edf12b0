/**
 * Clone benchmark (issue 32): the runs of one repository on a Git host, cloned through the team's
 * mirror cache (`@agent-runs/git`: the first run downloads the repository once, every later one
 * fetches what changed and clones from the local mirror) against a fresh shallow clone from the
 * host for every run (`git clone --depth 1` over HTTP, the baseline), both against the GitHub
 * double on 127.0.0.1 (git's own `http-backend` behind a token check).
 *
 * BENCH_CLONE_MB (200) of incompressible files in one repository, BENCH_CLONE_RUNS (50) runs
 * through the cache and BENCH_CLONE_FRESH_RUNS (at most 10) fresh clones (each downloads the whole
 * repository: a sample is enough for its p50), a small commit pushed on the host every 10 runs (so
 * fetches have something to fetch).
 * Records two rows: a run's clone time (p50) and the bytes the host sends per run after the first
 * (mean; the first downloads the repository on both sides).
 *
 *   npm run bench:clones
 *   BENCH_CLONE_MB=20 BENCH_CLONE_RUNS=10 npm run bench:clones     # a quick run
 *
 * Everything is in a temporary directory, removed at the end. Never part of `npm test`.
 */
import { checkout, MirrorCache } from "@agent-runs/git"
import { startFakeGitHub } from "@agent-runs/testing"
import { Effect, Redacted } from "effect"
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { promisify } from "node:util"
import { lowerIsBetter, record } from "../support/results.js"

const execFileAsync = promisify(execFile)
const MB = Number(process.env.BENCH_CLONE_MB ?? "200")
const RUNS = Number(process.env.BENCH_CLONE_RUNS ?? "50")
const FRESH_RUNS = Number(process.env.BENCH_CLONE_FRESH_RUNS ?? String(Math.min(RUNS, 10)))
const FILE_MB = 4

const p50 = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const mean = (values: ReadonlyArray<number>) => values.reduce((a, b) => a + b, 0) / values.length

const main = async () => {
  const dir = mkdtempSync(join(tmpdir(), "bench-clones-"))
  const host = await startFakeGitHub()
  try {
    const files: Record<string, string> = {}
    for (let i = 0; i < Math.max(1, Math.round(MB / FILE_MB)); i++) files[`data/${i}.bin`] = randomBytes(FILE_MB * 1024 * 1024 * 3 / 4).toString("base64")
    console.log(`repository: ${Object.keys(files).length} files, ${MB} MB`)
    host.createRepository("acme", "big", files)
    const token = host.addToken({ repositories: ["acme/big"], permission: "read" })
    const url = `${host.url}/acme/big.git`
    const sent = () => host.gitRequests.reduce((n, r) => n + r.bytesSent, 0)
    /** Someone's commit on the host every 10 runs of a side (its own files: each side's commits are new). */
    const change = (side: string, i: number) => {
      if (i > 0 && i % 10 === 0) host.commit("acme", "big", "main", { [`changes/${side}-${i}.txt`]: `change ${i}\n` })
    }

    // Ours: the mirror cache, then a checkout from it.
    const mirrors = MirrorCache.make({ root: join(dir, "mirrors") })
    const ours: Array<number> = []
    const oursBytes: Array<number> = []
    for (let i = 0; i < RUNS; i++) {
      change("ours", i)
      const before = sent()
      const started = performance.now()
      await Effect.runPromise(mirrors.use("team", { url, name: "acme/big", token: Redacted.make(token) }, (mirror) =>
        checkout(mirror, join(dir, `ours-${i}`), { name: "acme/big", depth: 1, originUrl: url, timeoutMs: 600_000 })))
      ours.push(performance.now() - started)
      oursBytes.push(sent() - before)
      rmSync(join(dir, `ours-${i}`), { recursive: true, force: true })
    }

    // The baseline: a fresh shallow clone from the host for every run.
    const header = `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`
    const fresh: Array<number> = []
    const freshBytes: Array<number> = []
    for (let i = 0; i < FRESH_RUNS; i++) {
      change("fresh", i)
      const before = sent()
      const started = performance.now()
      // Not a synchronous call: the host answers from this very process.
      await execFileAsync("git", ["-c", `http.extraHeader=${header}`, "clone", "--quiet", "--depth", "1", url, join(dir, `fresh-${i}`)], {
        env: { ...process.env, GIT_TERMINAL_PROMPT: "0" }
      })
      fresh.push(performance.now() - started)
      freshBytes.push(sent() - before)
      rmSync(join(dir, `fresh-${i}`), { recursive: true, force: true })
    }

    console.log(`ours: first ${Math.round(ours[0]!)} ms, p50 ${Math.round(p50(ours))} ms, host bytes per run ${Math.round(mean(oursBytes))}`)
    console.log(`fresh clones: first ${Math.round(fresh[0]!)} ms, p50 ${Math.round(p50(fresh))} ms, host bytes per run ${Math.round(mean(freshBytes))}`)
    const notes = `${RUNS} runs of one ${MB} MB repository; baseline: git clone --depth 1 from the host, ${FRESH_RUNS} runs; first run ours ${Math.round(ours[0]!)} ms`
    record(lowerIsBetter("clone per run through the mirror cache (p50)", p50(ours), p50(fresh), "ms", { maxRatio: 1, text: "faster than a fresh clone" }, notes))
    record(lowerIsBetter("bytes the host sends per run after the first (mean)", mean(oursBytes.slice(1)), mean(freshBytes.slice(1)), "bytes", {
      maxRatio: 0.01,
      text: "≤ 0.01× a fresh clone's: the host is asked for the objects once, then for what changed"
    }, `${notes}; first run ours ${oursBytes[0]} bytes`))
  } finally {
    await host.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
