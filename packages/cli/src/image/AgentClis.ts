/**
 * The agent CLIs an agent image carries and how each is found and started: `claude`
 * (`@anthropic-ai/claude-code`), `codex` (`@openai/codex`), `gemini` (`@google/gemini-cli`) and
 * `opencode` (`opencode-ai`), the commands the engine starts by name (packages/harness-*).
 *
 * - Found by Node's resolution from the directories given (the current one, then this package's),
 *   in the `node_modules` npm installed them in; one that is not installed is left out.
 * - Its command is the file its `package.json` `bin` names for it. A native executable (an ELF
 *   file: the binary the package's postinstall copied over its placeholder) is run directly, and
 *   the package's optional dependencies are then not needed (they are the per-platform builds it
 *   was copied from); anything else is a Node script, run with the image's `node`.
 * - In the image it is started by a wrapper `/usr/local/bin/<command>` that `exec`s it.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { type InstalledPackage, readManifest, resolvePackage } from "./Closure.js"
import { isElf } from "./RootFs.js"

export interface AgentCli {
  /** The command the engine runs (`claude`). */
  readonly command: string
  /** The npm package that carries it. */
  readonly packageName: string
}

/** The CLIs of the image, in the order of the harnesses. */
export const agentClis: ReadonlyArray<AgentCli> = [
  { command: "claude", packageName: "@anthropic-ai/claude-code" },
  { command: "codex", packageName: "@openai/codex" },
  { command: "gemini", packageName: "@google/gemini-cli" },
  { command: "opencode", packageName: "opencode-ai" }
]

/** A CLI installed on this machine. */
export interface InstalledCli {
  readonly cli: AgentCli
  readonly pkg: InstalledPackage
  /** The file of its command, relative to the package directory (`bin/codex.js`). */
  readonly bin: string
  /** Whether that file is a native executable (else a Node script). */
  readonly native: boolean
}

/** The file `bin` names for `command`: `bin` is a path, or an object by command name. */
const binOf = (bin: unknown, command: string): string | undefined => {
  if (typeof bin === "string") return bin
  if (typeof bin === "object" && bin !== null) {
    const entry = (bin as Record<string, unknown>)[command]
    return typeof entry === "string" ? entry : undefined
  }
  return undefined
}

/** Where `cli` is installed, searching from each directory in turn; undefined when nowhere. */
export const findCli = (cli: AgentCli, searchFrom: ReadonlyArray<string>): InstalledCli | undefined => {
  for (const from of searchFrom) {
    const dir = resolvePackage(cli.packageName, from)
    if (dir === undefined) continue
    const manifest = readManifest(dir)
    const bin = binOf(manifest?.bin, cli.command)
    if (manifest === undefined || bin === undefined) continue
    const file = Path.join(dir, bin)
    if (!Fs.existsSync(file)) continue
    return {
      cli,
      pkg: { name: cli.packageName, version: typeof manifest.version === "string" ? manifest.version : "0.0.0", dir },
      bin: Path.posix.normalize(bin.split(Path.sep).join("/")),
      native: isElf(file)
    }
  }
  return undefined
}

/** A word for `sh`, quoted. */
const quote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`

/** The wrapper `/usr/local/bin/<command>` that starts a CLI whose package is at `imageDir` in the image. */
export const wrapperScript = (installed: InstalledCli, imageDir: string, node: string): string => {
  const file = Path.posix.join(imageDir, installed.bin)
  return [
    "#!/bin/sh",
    `# ${installed.pkg.name}@${installed.pkg.version} (made by agent-runs image build --local)`,
    installed.native ? `exec ${quote(file)} "$@"` : `exec ${quote(node)} ${quote(file)} "$@"`,
    ""
  ].join("\n")
}
