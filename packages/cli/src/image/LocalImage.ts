/**
 * The agent image made from this machine, with neither a registry nor the network
 * (`agent-runs image build --local`): a root file system assembled from host files (RootFs.ts) and
 * streamed into `docker import` (Tar.ts, Docker.ts). It holds:
 *
 * - busybox (busybox-static: `/bin/busybox` and its applets in `/bin`, `/usr/bin/env`): the shell
 *   and the tools the engine needs (`sh`, `head`, `tr`, `base64`, `mkdir`); and this machine's
 *   bash as `/bin/bash` (`SHELL`): Claude Code runs its tools with bash or zsh only;
 * - this Node binary at `/usr/local/bin/node`, and git (its binary, its exec path
 *   `/usr/lib/git-core`, `/usr/share/git-core` with the templates) where they are on the host;
 * - the agent CLIs (AgentClis.ts) with their runtime dependency closures (Closure.ts), each package
 *   directory under `/opt/agent-runs/` at its path relative to where it is installed (so
 *   `/opt/agent-runs/node_modules/@openai/codex`; nested `node_modules` keep their place), and a
 *   wrapper `/usr/local/bin/<command>` for each; `rg` (the host's, else the one Codex carries);
 * - the shared libraries `ldd` lists for every ELF executable above and the CLIs' native addons;
 * - `/etc/passwd` and `/etc/group` (root, `agent` 1000, `nobody` 65534), `/etc/nsswitch.conf`,
 *   the host's `/etc/ssl/certs` and C.UTF-8 locale (`/usr/lib/locale/C.utf8`: Codex's shell asks
 *   for it), `/tmp` (1777), `/workspace` and `/home/agent` (the agent's);
 * - the scripted agent's program at `/opt/agent-runs/scripted-agent` (the default harness of
 *   containers: Kubernetes pods have nothing of the host to mount it from);
 * - `PATH=/usr/local/bin:/usr/bin:/bin`, `SHELL=/bin/bash`, user `agent`, working directory `/workspace`, labels
 *   `agent-runs.image=agent`, `agent-runs.build=<hash>` and `agent-runs.contents`.
 *
 * The build hash covers what went in (the layout's version, the architecture, Node's, busybox's,
 * bash's, git's and rg's versions, the scripted agent's program, each CLI and each package of their closures as name@version). A build
 * is skipped when the tag already carries the same hash, and is a mere `docker tag` when another
 * image does; `force` rebuilds. The image replaced under the tag is removed when no other tag names
 * it (and no container uses it).
 */
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { AGENT_MOUNT, packageDir as scriptedAgentDir } from "@agent-runs/scripted-agent/Location"
import { agentClis, findCli, type InstalledCli, wrapperScript } from "./AgentClis.js"
import { type Closure, installRoot, walk } from "./Closure.js"
import * as Docker from "./Docker.js"
import { ImageError } from "./ImageError.js"
import { RootFs } from "./RootFs.js"
import { writeTar } from "./Tar.js"

/** The label every agent image carries (`agent`), whichever way it was built. */
export const IMAGE_LABEL = "agent-runs.image"
/** The label of a local build: the hash of what went in. */
export const BUILD_LABEL = "agent-runs.build"
/** The image the bundled server runs sandboxes in by default (`AGENT_RUNS_DOCKER_IMAGE`). */
export const DEFAULT_TAG = "agent-runs-agent:latest"
/** Where the CLIs' packages are in the image. */
export const CLI_ROOT = "/opt/agent-runs"
/** Node in the image. */
export const NODE_PATH = "/usr/local/bin/node"
/** The version of this layout: part of the hash, raised when what the image holds changes. */
const LAYOUT_VERSION = 4
const AGENT = { uid: 1000, gid: 1000 } as const

export interface LocalImageOptions {
  /** The image's name (`agent-runs-agent:latest`). */
  readonly tag: string
  /** Rebuild even when the tag already carries the same build hash. */
  readonly force: boolean
  /** Where progress lines go (one line each, no newline). */
  readonly log: (line: string) => void
  /** Where the CLIs are looked for, in turn (the current directory, then this package's). */
  readonly searchFrom?: ReadonlyArray<string>
  readonly signal?: AbortSignal
}

export interface LocalImageResult {
  readonly tag: string
  readonly hash: string
  /** `built`: imported now; `up to date`: the tag already had this hash; `tagged`: another image had it. */
  readonly outcome: "built" | "up to date" | "tagged"
  readonly seconds: number
  /** The image's size in bytes (unpacked). */
  readonly bytes: number
}

/** An installed CLI with the closure the image copies. */
export interface CliContents {
  readonly installed: InstalledCli
  readonly closure: Closure
}

/** What goes into the image, found on this machine. */
export interface Ingredients {
  readonly node: { readonly path: string; readonly version: string }
  readonly busybox: { readonly path: string; readonly version: string }
  /** This machine's bash, if any. */
  readonly bash: { readonly path: string; readonly version: string } | undefined
  readonly git: { readonly path: string; readonly execPath: string; readonly share: string | undefined; readonly version: string } | undefined
  /** The host's `rg`, if any. */
  readonly ripgrep: { readonly path: string; readonly version: string } | undefined
  readonly certs: string | undefined
  readonly clis: ReadonlyArray<CliContents>
  /** The directory the CLIs' packages are placed relative to (the common root of their `node_modules`). */
  readonly base: string
}

const firstLine = (text: string): string => text.split("\n").map((line) => line.trim()).find((line) => line !== "") ?? ""

/** The output of a command, or undefined when it fails. */
const output = (command: string, args: ReadonlyArray<string>): string | undefined => {
  const result = spawnSync(command, args, { encoding: "utf8" })
  return result.status === 0 ? result.stdout : undefined
}

/** A command on `PATH` (its path as found), or undefined. */
export const which = (command: string): string | undefined =>
  (process.env["PATH"] ?? "").split(":").filter((dir) => dir !== "").map((dir) => Path.join(dir, command)).find((file) => {
    try {
      Fs.accessSync(file, Fs.constants.X_OK)
      return Fs.statSync(file).isFile()
    } catch {
      return false
    }
  })

const megabytes = (bytes: number): string => `${(bytes / 1024 ** 2).toFixed(0)} MB`

/** The deepest directory holding all of these. */
const commonAncestor = (dirs: ReadonlyArray<string>): string =>
  dirs.reduce((common, dir) => {
    let current = common
    while (current !== dir && !dir.startsWith(current.endsWith(Path.sep) ? current : current + Path.sep)) current = Path.dirname(current)
    return current
  })

const findBusybox = (): { readonly path: string; readonly version: string } => {
  const path = ["/bin/busybox", "/usr/bin/busybox"].find((file) => Fs.existsSync(file)) ?? which("busybox")
  if (path === undefined) {
    throw new ImageError({ message: "busybox is missing: install busybox-static first (apt-get install busybox-static)" })
  }
  return { path, version: firstLine(output(path, []) ?? "").replace(/ multi-call binary\.?$/, "") || "busybox" }
}

const findGit = (): Ingredients["git"] => {
  const path = which("git")
  if (path === undefined) return undefined
  const execPath = output(path, ["--exec-path"])?.trim()
  if (execPath === undefined || !Fs.existsSync(execPath)) return undefined
  const share = Path.join(Path.dirname(Path.dirname(Fs.realpathSync(path))), "share", "git-core")
  return { path, execPath, share: Fs.existsSync(share) ? share : undefined, version: firstLine(output(path, ["--version"]) ?? "") }
}

/** glibc's C.UTF-8 locale. */
const C_UTF8 = "/usr/lib/locale/C.utf8"

/** The directories the CLIs are looked for from by default: the current one, then this package's. */
export const defaultSearchFrom = (): ReadonlyArray<string> => [process.cwd(), Path.dirname(fileURLToPath(import.meta.url))]

/** Finds what goes into the image on this machine, saying what it found. */
export const gather = (options: Pick<LocalImageOptions, "log" | "searchFrom">): Ingredients => {
  const { log } = options
  const node = { path: process.execPath, version: process.version }
  log(`node ${node.version} (${node.path})`)
  const busybox = findBusybox()
  log(`${busybox.version} (${busybox.path})`)
  const bashPath = ["/bin/bash", "/usr/bin/bash"].find((file) => Fs.existsSync(file)) ?? which("bash")
  const bash = bashPath === undefined ? undefined : { path: bashPath, version: firstLine(output(bashPath, ["--version"]) ?? "") }
  log(bash === undefined ? "bash: not found on this machine, left out (Claude Code needs it)" : `${bash.version} (${bash.path})`)
  const git = findGit()
  log(git === undefined ? "git: not found on this machine, left out" : `${git.version} (${git.path}, ${git.execPath})`)
  const rgPath = which("rg")
  const ripgrep = rgPath === undefined ? undefined : { path: rgPath, version: firstLine(output(rgPath, ["--version"]) ?? "") }
  const certs = Fs.existsSync("/etc/ssl/certs") ? "/etc/ssl/certs" : undefined
  const clis: Array<CliContents> = []
  for (const cli of agentClis) {
    const installed = findCli(cli, options.searchFrom ?? defaultSearchFrom())
    if (installed === undefined) {
      log(`${cli.command}: ${cli.packageName} is not installed here, left out`)
      continue
    }
    const closure = walk(installed.pkg.dir, {
      // A native command needs none of the per-platform builds it was copied from.
      followOptional: (pkg) => !(installed.native && pkg.dir === installed.pkg.dir)
    })
    for (const missing of closure.missing.filter((m) => !m.optional)) {
      log(`${cli.command}: warning: ${missing.name} (needed by ${Path.basename(missing.from)}) is not installed`)
    }
    log(`${cli.command}: ${installed.pkg.name}@${installed.pkg.version} (${installed.native ? "native" : "node"}, ${closure.packages.length} package${closure.packages.length === 1 ? "" : "s"})`)
    clis.push({ installed, closure })
  }
  const base = commonAncestor(clis.flatMap(({ closure }) => closure.packages.map((pkg) => installRoot(pkg.dir))).concat(clis.length === 0 ? ["/"] : []))
  return { node, busybox, bash, git, ripgrep, certs, clis, base }
}

/** The hash of the scripted agent's program (a changed agent makes another image). */
const scriptedAgentVersion = (): string => {
  const hash = createHash("sha256")
  const dist = Path.join(scriptedAgentDir, "dist")
  for (const name of Fs.existsSync(dist) ? Fs.readdirSync(dist).sort() : []) {
    const file = Path.join(dist, name)
    if (Fs.statSync(file).isFile()) hash.update(name).update(Fs.readFileSync(file))
  }
  return hash.digest("hex").slice(0, 16)
}

/** The hash of what goes in (the `agent-runs.build` label): 16 hex digits. */
export const buildHash = (ingredients: Ingredients): string =>
  createHash("sha256").update(JSON.stringify({
    layout: LAYOUT_VERSION,
    arch: process.arch,
    node: ingredients.node.version,
    busybox: ingredients.busybox.version,
    bash: ingredients.bash?.version ?? null,
    git: ingredients.git?.version ?? null,
    ripgrep: ingredients.ripgrep?.version ?? null,
    scriptedAgent: scriptedAgentVersion(),
    clis: ingredients.clis.map(({ installed }) => `${installed.cli.command}=${installed.pkg.name}@${installed.pkg.version}`),
    packages: [...new Set(ingredients.clis.flatMap(({ closure }) => closure.packages.map((pkg) => `${pkg.name}@${pkg.version}`)))].sort()
  })).digest("hex").slice(0, 16)

/** The `agent-runs.contents` label: Node's version and each CLI's name@version. */
export const contents = (ingredients: Ingredients): string =>
  [`node@${ingredients.node.version}`, ...ingredients.clis.map(({ installed }) => `${installed.pkg.name}@${installed.pkg.version}`)].join(",")

/** Where a host package directory goes in the image. */
export const imagePathOf = (ingredients: Ingredients, dir: string): string =>
  Path.posix.join(CLI_ROOT, Path.relative(ingredients.base, dir).split(Path.sep).join("/"))

const passwd = [
  "root:x:0:0:root:/root:/bin/sh",
  `agent:x:${AGENT.uid}:${AGENT.gid}:agent:/home/agent:/bin/sh`,
  "nobody:x:65534:65534:nobody:/nonexistent:/bin/false",
  ""
].join("\n")
const group = ["root:x:0:", `agent:x:${AGENT.gid}:`, "nogroup:x:65534:", ""].join("\n")

/** The root file system of the image. */
export const assemble = (ingredients: Ingredients): RootFs => {
  const rootfs = new RootFs()
  const executables: Array<string> = []
  rootfs.directory("/tmp", 0o1777).directory("/root", 0o700).directory("/workspace", 0o755, AGENT).directory("/home/agent", 0o755, AGENT)
  rootfs.text("/etc/passwd", passwd).text("/etc/group", group)
  rootfs.text("/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n")
  // busybox and its applets: the shell and the tools of the engine's scripts.
  rootfs.file(ingredients.busybox.path, "/bin/busybox")
  executables.push(ingredients.busybox.path)
  for (const applet of (output(ingredients.busybox.path, ["--list"]) ?? "").split("\n").map((name) => name.trim())) {
    if (applet !== "" && applet !== "busybox" && !applet.includes("/")) rootfs.symlink(`/bin/${applet}`, "busybox")
  }
  rootfs.symlink("/usr/bin/env", "/bin/busybox")
  if (ingredients.bash !== undefined) {
    rootfs.file(ingredients.bash.path, "/bin/bash").symlink("/usr/bin/bash", "/bin/bash")
    executables.push(ingredients.bash.path)
  }
  rootfs.file(ingredients.node.path, NODE_PATH)
  executables.push(ingredients.node.path)
  if (ingredients.git !== undefined) {
    const { git } = ingredients
    rootfs.file(git.path)
    executables.push(git.path)
    rootfs.tree(git.execPath)
    for (const entry of rootfs.entries()) {
      if (entry.type === "file" && "source" in entry && entry.path.startsWith(`${git.execPath}/`)) executables.push(entry.source)
    }
    if (git.share !== undefined) rootfs.tree(git.share, "/usr/share/git-core")
  }
  if (ingredients.certs !== undefined) {
    for (const name of Fs.readdirSync(ingredients.certs).sort()) {
      const host = Path.join(ingredients.certs, name)
      const link = Fs.lstatSync(host).isSymbolicLink() ? Fs.readlinkSync(host) : undefined
      if (link !== undefined && !link.includes("/")) rootfs.symlink(`/etc/ssl/certs/${name}`, link)
      else if (Fs.existsSync(host) && Fs.statSync(host).isFile()) rootfs.file(host, `/etc/ssl/certs/${name}`)
    }
  }
  if (Fs.existsSync(C_UTF8)) rootfs.tree(C_UTF8)
  // The CLIs: each package of each closure once, without its nested node_modules (those that are
  // needed are packages of the closure themselves).
  const placed = new Set<string>()
  for (const { closure } of ingredients.clis) {
    for (const pkg of closure.packages) {
      if (placed.has(pkg.dir)) continue
      placed.add(pkg.dir)
      const nested = Path.join(pkg.dir, "node_modules")
      rootfs.tree(pkg.dir, imagePathOf(ingredients, pkg.dir), (host) => host === nested)
    }
  }
  for (const entry of rootfs.entries()) {
    if (entry.type === "file" && "source" in entry && entry.path.startsWith(`${CLI_ROOT}/`) && entry.path.endsWith(".node")) {
      executables.push(entry.source)
    }
  }
  for (const { installed } of ingredients.clis) {
    const dir = imagePathOf(ingredients, installed.pkg.dir)
    if (installed.native) executables.push(Path.join(installed.pkg.dir, installed.bin))
    rootfs.text(`/usr/local/bin/${installed.cli.command}`, wrapperScript(installed, dir, NODE_PATH), 0o755)
  }
  if (ingredients.ripgrep !== undefined) {
    rootfs.file(ingredients.ripgrep.path, "/usr/local/bin/rg")
    executables.push(ingredients.ripgrep.path)
  } else {
    const vendored = ingredients.clis
      .flatMap(({ closure }) => closure.packages)
      .flatMap((pkg) => {
        const vendor = Path.join(pkg.dir, "vendor")
        return Fs.existsSync(vendor) ? Fs.readdirSync(vendor).map((triple) => Path.join(vendor, triple, "codex-path", "rg")) : []
      })
      .find((file) => Fs.existsSync(file))
    if (vendored !== undefined) {
      const inImage = [...rootfs.entries()].find((entry) => entry.type === "file" && "source" in entry && entry.source === Fs.realpathSync(vendored))
      if (inImage !== undefined) rootfs.symlink("/usr/local/bin/rg", inImage.path)
    }
  }
  // The scripted agent, the default harness of containers (Node's own modules only): a Kubernetes
  // pod has nothing of the server's host to mount it from.
  rootfs.tree(Path.join(scriptedAgentDir, "dist"), `${AGENT_MOUNT}/dist`)
  rootfs.file(Path.join(scriptedAgentDir, "package.json"), `${AGENT_MOUNT}/package.json`)
  rootfs.sharedLibraries(new Set(executables))
  return rootfs
}

/** The `--change` instructions of the import. */
const changes = (ingredients: Ingredients, hash: string): ReadonlyArray<string> => [
  "ENV PATH=/usr/local/bin:/usr/bin:/bin",
  ...(ingredients.bash === undefined ? [] : ["ENV SHELL=/bin/bash"]),
  "WORKDIR /workspace",
  "USER agent",
  'CMD ["/bin/sh"]',
  `LABEL ${IMAGE_LABEL}=agent`,
  `LABEL ${BUILD_LABEL}=${hash}`,
  `LABEL agent-runs.contents=${contents(ingredients)}`
]

/** Removes the image that `tag` named before, when it was an agent image that no tag names any more. */
const dropReplaced = (previous: string | undefined, now: string): void => {
  if (previous === undefined || previous === now) return
  if (Docker.imageLabels(previous)?.[IMAGE_LABEL] === "agent") Docker.removeImageIfUntagged(previous)
}

/** Builds (or finds up to date) the agent image under `options.tag`. */
export const build = async (options: LocalImageOptions): Promise<LocalImageResult> => {
  const started = Date.now()
  const { log, tag } = options
  const seconds = () => Math.round((Date.now() - started) / 100) / 10
  Docker.checkEngine()
  const ingredients = gather(options)
  if (ingredients.clis.length === 0) log("warning: no agent CLI is installed here: the image will carry none")
  const hash = buildHash(ingredients)
  const previous = Docker.imageId(tag)
  if (!options.force) {
    if (Docker.imageLabels(tag)?.[BUILD_LABEL] === hash) {
      log(`${tag} is up to date (build ${hash}); --force rebuilds it`)
      return { tag, hash, outcome: "up to date", seconds: seconds(), bytes: Docker.imageSize(tag) }
    }
    const same = Docker.imagesWithLabel(BUILD_LABEL, hash)[0]
    if (same !== undefined) {
      Docker.tagImage(same, tag)
      dropReplaced(previous, same)
      log(`${tag}: tagged the image already built from the same contents (build ${hash})`)
      return { tag, hash, outcome: "tagged", seconds: seconds(), bytes: Docker.imageSize(tag) }
    }
  }
  const rootfs = assemble(ingredients)
  log(`importing ${rootfs.size} entries (${megabytes(rootfs.bytes)}) into docker…`)
  const id = await Docker.importImage((stdin) => writeTar(rootfs.entries(), stdin), changes(ingredients, hash), options.signal)
  Docker.tagImage(id, tag)
  dropReplaced(previous, id)
  const bytes = Docker.imageSize(tag)
  log(`built ${tag} (build ${hash}, ${megabytes(bytes)}) in ${seconds()} s`)
  return { tag, hash, outcome: "built", seconds: seconds(), bytes }
}
