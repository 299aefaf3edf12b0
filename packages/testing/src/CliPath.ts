/**
 * Where an installed agent CLI's command is: the `bin` of its npm package (a devDependency of the
 * harness package that tests it), resolved from the repository's `node_modules`.
 */
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"

const require = createRequire(import.meta.url)

/** The absolute path of the command `bin` of the npm package `pkg`. */
export const cliPath = (pkg: string, bin: string): string => {
  const manifest = require.resolve(`${pkg}/package.json`)
  const bins = (require(manifest) as { bin?: string | Record<string, string> }).bin
  const relative = typeof bins === "string" ? bins : bins?.[bin]
  if (relative === undefined) throw new Error(`${pkg} has no command ${bin}`)
  return Path.join(Path.dirname(manifest), relative)
}

/**
 * A copy of an agent CLI's binary that every user can run, as `name` in a fresh directory under
 * the system's temporary directory: sandboxes isolated as users of their own cannot reach the
 * checkout's `node_modules` when the checkout sits under a private directory (`mktemp -d`, as CI's
 * fresh clone does). Remove `dir` when done.
 */
export const runnableCopy = (file: string, name: string): { readonly dir: string; readonly file: string } => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agent-runs-cli-"))
  Fs.chmodSync(dir, 0o755)
  const copy = Path.join(dir, name)
  Fs.copyFileSync(Fs.realpathSync(file), copy)
  Fs.chmodSync(copy, 0o755)
  return { dir, file: copy }
}

/**
 * The npm package of the pinned Claude Code for a Node version (default this Node's): the newest
 * release whose `engines` accepts it. Releases after 2.1.197 declare `node >=22`, so Node 20 gets
 * `@anthropic-ai/claude-code` (2.1.197) and Node 22 and later `claude-code-node22` (an npm alias of
 * `@anthropic-ai/claude-code@2.1.332`): both devDependencies of packages/harness-claude.
 */
export const claudeCodePackage = (nodeVersion: string = process.versions.node): string =>
  Number(nodeVersion.split(".")[0]) >= 22 ? "claude-code-node22" : "@anthropic-ai/claude-code"
