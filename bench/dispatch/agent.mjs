// The dispatch benchmark's agent (plain Node, no dependencies): reads the start line from stdin,
// writes its first output line, and at that moment appends `<id> <ms since the epoch, sub-ms>` to
// the log file named by its first argument (the id is the start message's run_id), then prints
// a message and exits 0. Started by the server as its harness and by the benchmark directly.
import { appendFileSync } from "node:fs"
import { performance } from "node:perf_hooks"
import process from "node:process"

const log = process.argv[2]
if (log === undefined) {
  process.stderr.write("usage: agent.mjs <log file>\n")
  process.exit(2)
}

let buffered = ""
const onData = (chunk) => {
  buffered += chunk
  const end = buffered.indexOf("\n")
  if (end < 0) return
  process.stdin.off("data", onData)
  let id = "unknown"
  try {
    id = String(JSON.parse(buffered.slice(0, end)).run_id ?? "unknown")
  } catch {
    // not JSON: log it as unknown
  }
  // Pipes are written synchronously on Linux: the line is out when write returns.
  process.stdout.write(`${JSON.stringify({ type: "session", session_id: `bench-${id}`, session_link: null })}\n`)
  const at = performance.timeOrigin + performance.now()
  appendFileSync(log, `${id} ${at.toFixed(3)}\n`)
  process.stdout.write(`${JSON.stringify({ type: "message", role: "assistant", text: "done" })}\n`)
  process.exit(0)
}
process.stdin.setEncoding("utf8").on("data", onData)
