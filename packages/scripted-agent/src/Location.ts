/**
 * Where the scripted agent is, for the processes that start it as their default harness (the
 * bundled server and the self-hosted worker): its package directory, and the harness command for
 * the process executor (this Node running `dist/main.js`) or for Docker sandboxes (the package
 * mounted read-only at `AGENT_MOUNT`, run by the image's `node`).
 */
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** The package directory (the parent of `src/` and `dist/`). */
export const packageDir: string = dirname(dirname(fileURLToPath(import.meta.url)))

/** Where the package is mounted in Docker sandboxes. */
export const AGENT_MOUNT = "/opt/agent-runs/scripted-agent"

/** Quotes a word for `/bin/sh`. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`

/** The default harness command (a shell command) for an executor. */
export const defaultHarness = (executor: "process" | "docker"): string =>
  executor === "docker"
    ? `node ${AGENT_MOUNT}/dist/main.js`
    : `${quote(process.execPath)} ${quote(join(packageDir, "dist", "main.js"))}`
