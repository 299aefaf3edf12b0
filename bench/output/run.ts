/**
 * Output cost: what an agent printing as fast as it can costs the server. For each size
 * (`BENCH_OUTPUT_MB`, default `5,20,80`), a fresh server process (SQLite, process executor) runs
 * one run whose agent prints that many megabytes in lines of 100 bytes (`message` events, or
 * plain text lines with `BENCH_OUTPUT_LINE=text`) and exits. Measured on the server process: CPU
 * time (user + system, from `/proc/<pid>/stat`) from the create to the run's end, peak RSS
 * (`VmHWM`), wall time; then the time to read the conversation back and its size.
 *
 * Baseline, in the same script: the same agent's output piped into a bare Node reader that splits
 * it into lines and parses each as JSON (the least any consumer does), its CPU and peak RSS.
 *
 * Reading back: `GET …/conversation` against the download of the same run's transcript
 * (`GET …/transcript`, its redirect followed), each read whole `READS` times, alternately, the
 * median of each kept (the first conversation read, which keeps the ended run's text for the
 * later ones, is also recorded on its own); the server's peak RSS over the reads alone (its peak reset through
 * `/proc/<pid>/clear_refs` first). Recorded as one row per size (bench/support/results.ts), goal
 * ≤ 2× the download. `BENCH_SERVER_NODE_OPTIONS` as in the HTTP bench (a profile of the reads
 * alone with bench/support/cpu-profile.cjs). Writes `bench/results/output.json`.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Exit, Scope } from "effect"
import { call, type ServerProcess, spawnServer, tempDataDir } from "../../examples/server/test/process.js"
import { lowerIsBetter, record } from "../support/results.js"
import { buildUnlessSkipped, expectStatus, markProfile, serverNodeOptions, teamPrincipal } from "../support/server.js"

const SIZES_MB = (process.env.BENCH_OUTPUT_MB ?? "5,20,80").split(",").map(Number)
const LINE_KIND = process.env.BENCH_OUTPUT_LINE === "text" ? "text" : "message"
const LINE_BYTES = 100
const RESULTS = fileURLToPath(new URL("../results/output.json", import.meta.url))
/** How many times each read-back is measured (the median is kept). */
const READS = 5

/** The agent: after its start line, prints `lines` lines of 100 bytes (respecting backpressure), then succeeds. */
const AGENT = `
const [lines, kind] = [Number(process.argv[1]), process.argv[2]]
const head = kind === "text" ? "" : JSON.stringify({ type: "message", role: "assistant", text: "" }).slice(0, -2)
const line = (i) => {
  const text = "line " + String(i).padStart(8, "0") + " "
  const pad = ${LINE_BYTES} - 1 - (kind === "text" ? text.length : head.length + text.length + 2)
  return kind === "text" ? text + "x".repeat(pad) + "\\n" : head + text + "x".repeat(pad) + "\\"}\\n"
}
let i = 0
const write = () => {
  let ok = true
  while (i < lines && ok) {
    let chunk = ""
    for (let j = 0; j < 200 && i < lines; j++, i++) chunk += line(i)
    ok = process.stdout.write(chunk)
  }
  if (i < lines) process.stdout.once("drain", write)
  else process.stdout.write(JSON.stringify({ type: "result", outcome: "succeeded" }) + "\\n", () => process.exit(0))
}
process.stdin.once("data", write)
`

/** The baseline reader: splits stdin into lines, parses each; prints its CPU ms and peak RSS. */
const READER = `
let rest = ""
let n = 0
process.stdin.setEncoding("utf8").on("data", (chunk) => {
  const parts = (rest + chunk).split("\\n")
  rest = parts.pop()
  for (const p of parts) { try { JSON.parse(p) } catch {} n++ }
}).on("end", () => {
  const u = process.resourceUsage()
  console.log(JSON.stringify({ lines: n, cpu_ms: (u.userCPUTime + u.systemCPUTime) / 1000, peak_rss_mb: u.maxRSS / 1024 }))
})
`

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`
const TICKS = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim())

/** CPU seconds (user + system) a process used so far. */
const cpuOf = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")
  return (Number(fields[11]) + Number(fields[12])) / TICKS
}
/** Peak resident memory of a process so far, in MB. */
const peakRssOf = (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024
/** Resets a process's peak resident memory to its current one (Linux: `5` to `clear_refs`); false when refused. */
const resetPeakRss = (pid: number) => {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5")
    return true
  } catch {
    return false
  }
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Seconds to GET `url` and read its whole body (redirects followed), and the body's length in bytes. */
const timedRead = (url: string, token: string) =>
  Effect.promise(async () => {
    const t0 = performance.now()
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
    const body = await response.arrayBuffer()
    const seconds = (performance.now() - t0) / 1000
    if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${new TextDecoder().decode(body.slice(0, 300))}`)
    return { seconds, bytes: body.byteLength, body }
  })

const baseline = (lines: number) => {
  const out = spawnSync("/bin/sh", ["-c", `echo start | ${quote(process.execPath)} -e ${quote(AGENT)} ${lines} ${LINE_KIND} | ${quote(process.execPath)} -e ${quote(READER)}`], {
    encoding: "utf8",
    maxBuffer: 1024 * 1024
  })
  if (out.status !== 0) throw new Error(`baseline failed: ${out.stderr}`)
  return JSON.parse(out.stdout) as { lines: number; cpu_ms: number; peak_rss_mb: number }
}

const measure = (mb: number) =>
  Effect.gen(function*() {
    const lines = Math.round((mb * 1_000_000) / LINE_BYTES)
    const adminToken = `ar_${randomBytes(32).toString("base64url")}`
    const dataDir = yield* tempDataDir
    const server: ServerProcess = yield* spawnServer({
      dataDir,
      env: {
        ...serverNodeOptions,
        AGENT_RUNS_ADMIN_TOKEN: adminToken,
        AGENT_RUNS_CONCURRENCY: "1",
        AGENT_RUNS_MAX_OUTPUT_BYTES: String(200 * 1024 * 1024),
        AGENT_RUNS_HARNESS: `${quote(process.execPath)} -e ${quote(AGENT)} ${lines} ${LINE_KIND}`
      }
    })
    const { token } = yield* teamPrincipal(server, adminToken, "member")
    const idleRss = peakRssOf(server.pid)
    const cpu0 = cpuOf(server.pid)
    const t0 = performance.now()
    const created = yield* expectStatus<{ run_id: string }>(
      "create run",
      yield* Effect.promise(() => call(server, "POST", "/api/v1/agent/runs", { token, body: { prompt: "print" } })),
      200
    )
    let state = ""
    while (!["SUCCEEDED", "FAILED", "ERROR", "CANCELLED", "BLOCKED"].includes(state)) {
      yield* Effect.sleep("50 millis")
      state = (yield* Effect.promise(() => call(server, "GET", `/api/v1/agent/runs/${created.run_id}`, { token }))).body.state
    }
    const wallS = (performance.now() - t0) / 1000
    const cpuS = cpuOf(server.pid) - cpu0
    const peakRss = peakRssOf(server.pid)
    if (state !== "SUCCEEDED") return yield* Effect.dieMessage(`the run ended ${state}`)
    const runUrl = `${server.url}/api/v1/agent/runs/${created.run_id}`
    const rssReset = resetPeakRss(server.pid)
    // Profiled (BENCH_SERVER_NODE_OPTIONS, bench/support/cpu-profile.cjs): the reads are a profile of their own.
    yield* markProfile(server)
    const conversationReads: Array<number> = []
    const transcriptReads: Array<number> = []
    let conversationBytes = 0
    let transcriptBytes = 0
    // The server's CPU seconds per read too: on a loaded machine they vary less than the wall time.
    const conversationCpu: Array<number> = []
    const transcriptCpu: Array<number> = []
    for (let i = 0; i < READS; i++) {
      const c0 = cpuOf(server.pid)
      const conversation = yield* timedRead(`${runUrl}/conversation`, token)
      conversationCpu.push(cpuOf(server.pid) - c0)
      // The body is JSON (a stream cut short would not parse).
      if (i === 0) JSON.parse(new TextDecoder().decode(conversation.body))
      conversationReads.push(conversation.seconds)
      conversationBytes = conversation.bytes
      const t0 = cpuOf(server.pid)
      const transcript = yield* timedRead(`${runUrl}/transcript`, token)
      transcriptCpu.push(cpuOf(server.pid) - t0)
      transcriptReads.push(transcript.seconds)
      transcriptBytes = transcript.bytes
    }
    const readS = median(conversationReads)
    const downloadS = median(transcriptReads)
    const readPeakRss = rssReset ? peakRssOf(server.pid) : undefined
    yield* markProfile(server)
    const base = baseline(lines)
    const row = {
      mb,
      lines,
      line_kind: LINE_KIND,
      server_cpu_s: +cpuS.toFixed(2),
      server_peak_rss_mb: Math.round(peakRss),
      server_idle_rss_mb: Math.round(idleRss),
      wall_s: +wallS.toFixed(2),
      read_back_s: +readS.toFixed(3),
      // The first read after the run ended also keeps the conversation's text (later reads serve it).
      first_read_back_s: +conversationReads[0]!.toFixed(3),
      transcript_download_s: +downloadS.toFixed(3),
      read_back_server_cpu_s: +median(conversationCpu).toFixed(2),
      transcript_server_cpu_s: +median(transcriptCpu).toFixed(2),
      read_back_ratio: +(readS / downloadS).toFixed(2),
      read_back_peak_rss_mb: readPeakRss === undefined ? null : Math.round(readPeakRss),
      conversation_mb: +(conversationBytes / 1e6).toFixed(1),
      transcript_mb: +(transcriptBytes / 1e6).toFixed(1),
      baseline_cpu_s: +(base.cpu_ms / 1000).toFixed(2),
      baseline_peak_rss_mb: Math.round(base.peak_rss_mb),
      cpu_ratio: +(cpuS / (base.cpu_ms / 1000)).toFixed(1)
    }
    console.log(JSON.stringify(row))
    record(lowerIsBetter(
      `GET …/conversation of a ${mb} MB run vs its transcript download`,
      readS,
      downloadS,
      "s",
      { maxRatio: 2, text: "≤ 2×" },
      `${lines.toLocaleString("en")} ${LINE_KIND} lines; median of ${READS} reads each, alternately ` +
        `(conversation ${conversationReads.map((s) => s.toFixed(3)).join(", ")} s; transcript ${transcriptReads.map((s) => s.toFixed(3)).join(", ")} s); ` +
        `server CPU per read (median) ${row.read_back_server_cpu_s} s vs ${row.transcript_server_cpu_s} s; ` +
        `conversation ${row.conversation_mb} MB, transcript ${row.transcript_mb} MB` +
        (row.read_back_peak_rss_mb === null ? "" : `; server peak RSS over the reads ${row.read_back_peak_rss_mb} MB`)
    ))
    return row
  }).pipe(Effect.scoped)

const program = Effect.gen(function*() {
  yield* buildUnlessSkipped
  console.log(`output benchmark: ${SIZES_MB.join(", ")} MB in ${LINE_BYTES}-byte ${LINE_KIND} lines, node ${process.version}`)
  const rows = []
  for (const mb of SIZES_MB) rows.push(yield* measure(mb))
  console.log("")
  console.log(
    "| MB | lines | server CPU | server peak RSS (idle) | wall | read back | transcript download | read-back peak RSS | conversation | baseline CPU | CPU ratio |"
  )
  console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
  for (const r of rows) {
    console.log(
      `| ${r.mb} | ${r.lines.toLocaleString("en")} | ${r.server_cpu_s} s | ${r.server_peak_rss_mb} MB (${r.server_idle_rss_mb}) | ${r.wall_s} s | ` +
        `${r.read_back_s} s | ${r.transcript_download_s} s | ${r.read_back_peak_rss_mb ?? "—"} MB | ${r.conversation_mb} MB | ` +
        `${r.baseline_cpu_s} s | ${r.cpu_ratio}× |`
    )
  }
  mkdirSync(join(RESULTS, ".."), { recursive: true })
  writeFileSync(RESULTS, `${JSON.stringify({ at: new Date().toISOString(), node: process.version, rows }, null, 2)}\n`)
  console.log(`\nwritten to ${RESULTS}`)
})

const scope = Effect.runSync(Scope.make())
Effect.runPromise(Scope.extend(program, scope)).then(
  () => Effect.runPromise(Scope.close(scope, Exit.void)).then(() => process.exit(0)),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
