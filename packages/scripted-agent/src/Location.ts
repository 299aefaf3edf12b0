/**
 * Where the scripted agent is, for the processes that start it as their default harness (the
 * bundled server and the self-hosted worker): its package directory, and the harness command for
 * the process executor (this Node running `dist/main.js`) or for containers (at `AGENT_MOUNT`, run
 * by the image's `node`: mounted read-only there in Docker sandboxes, and part of the agent image
 * `agent-runs image build --local` makes, which Kubernetes pods run), and a copy of it that users
 * other than the service's can run.
 */
import { chmodSync, copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** The package directory (the parent of `src/` and `dist/`). */
export const packageDir: string = dirname(dirname(fileURLToPath(import.meta.url)))

/** Where the package is in containers (mounted in Docker sandboxes, in the agent image). */
export const AGENT_MOUNT = "/opt/agent-runs/scripted-agent"

/** Quotes a word for `/bin/sh`. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`

/** The default harness command (a shell command) for an executor. */
export const defaultHarness = (executor: "process" | "docker" | "kubernetes"): string =>
  executor !== "process"
    ? `node ${AGENT_MOUNT}/dist/main.js`
    : `${quote(process.execPath)} ${quote(join(packageDir, "dist", "main.js"))}`

/**
 * Copies the agent's program (`dist/*.js` and `package.json`) into `dir` (replacing what is
 * there), readable by every user, for a process executor whose sandboxes run as users of their own
 * that cannot read the installation (a checkout below `/root`, say). Returns the harness command
 * that runs the copy with this Node. The program needs nothing but Node's own modules.
 */
export const installCopy = (dir: string): string => {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(join(dir, "dist"), { recursive: true })
  chmodSync(dir, 0o755)
  chmodSync(join(dir, "dist"), 0o755)
  const files = [
    "package.json",
    ...readdirSync(join(packageDir, "dist")).filter((name) => name.endsWith(".js")).map((name) => join("dist", name))
  ]
  for (const file of files) {
    copyFileSync(join(packageDir, file), join(dir, file))
    chmodSync(join(dir, file), 0o644)
  }
  return `${quote(process.execPath)} ${quote(join(dir, "dist", "main.js"))}`
}
