/**
 * Test helper: a Docker engine that answers and the test image `agent-runs-test:latest`.
 *
 * - The engine: `.ci/docker-engine.sh` (the one implementation of "install docker.io when dockerd
 *   is missing, start dockerd without bridge or iptables, wait for `docker info`"), shared with
 *   `.ci/run`. Quick when the engine already answers.
 * - The image: there is no registry, so it is imported (`docker import`) from a root file system
 *   made here: busybox-static (installed with apt-get when /bin/busybox is missing) and its applets,
 *   plus this Node binary and the shared libraries `ldd` lists. The image carries the Node version
 *   as a label and is rebuilt when it differs; otherwise it is reused across runs.
 * - `removeSandboxesUnder(dir)`: what a test's server left running in a temporary directory it is
 *   about to delete (containers, and the work directories' nosuid mounts, which `rm` cannot remove).
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as DockerExecutor from "../src/DockerExecutor.js"
import { parseMountInfo } from "../src/internal/HostMounts.js"

export const testImage = "agent-runs-test:latest"

const repoRoot = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../../..")

const run = (command: string, args: ReadonlyArray<string>, input?: Buffer): string =>
  execFileSync(command, args, {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    stdio: [input === undefined ? "ignore" : "pipe", "pipe", "inherit"],
    ...(input === undefined ? {} : { input })
  })

/** Starts the engine when it does not answer (installing it first when dockerd is missing). */
export const ensureEngine = (): void => {
  execFileSync("bash", [Path.join(repoRoot, ".ci/docker-engine.sh")], { stdio: ["ignore", "inherit", "inherit"] })
}

const imageNodeVersion = (): string | undefined => {
  const result = spawnSync("docker", ["image", "inspect", "--format", "{{ index .Config.Labels \"agent-runs.node\" }}", testImage], {
    encoding: "utf8"
  })
  return result.status === 0 ? result.stdout.trim() : undefined
}

const ensureBusybox = (): string => {
  const busybox = "/bin/busybox"
  if (!Fs.existsSync(busybox)) {
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
    execFileSync("apt-get", ["-o", "DPkg::Lock::Timeout=600", "update", "-q"], { stdio: "inherit", env })
    execFileSync("apt-get", ["-o", "DPkg::Lock::Timeout=600", "install", "-y", "-q", "busybox-static"], { stdio: "inherit", env })
  }
  return busybox
}

const copyInto = (rootfs: string, file: string, as: string = file): void => {
  const target = Path.join(rootfs, as)
  Fs.mkdirSync(Path.dirname(target), { recursive: true })
  Fs.copyFileSync(Fs.realpathSync(file), target)
  Fs.chmodSync(target, Fs.statSync(Fs.realpathSync(file)).mode & 0o777)
}

/** Builds `agent-runs-test:latest` when it is missing or was made with another Node version. */
export const ensureTestImage = (): void => {
  if (imageNodeVersion() === process.version) return
  const busybox = ensureBusybox()
  const rootfs = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agent-runs-rootfs-"))
  try {
    copyInto(rootfs, busybox, "/bin/busybox")
    for (const applet of run(busybox, ["--list"]).split("\n").filter((name) => name !== "" && name !== "busybox")) {
      Fs.symlinkSync("busybox", Path.join(rootfs, "bin", applet))
    }
    copyInto(rootfs, process.execPath, "/usr/local/bin/node")
    for (const line of run("ldd", [process.execPath]).split("\n")) {
      const library = /(\/\S+)\s+\(0x/.exec(line)?.[1]
      if (library !== undefined) copyInto(rootfs, library)
    }
    for (const dir of ["tmp", "workspace", "etc", "root"]) Fs.mkdirSync(Path.join(rootfs, dir), { recursive: true })
    Fs.chmodSync(Path.join(rootfs, "tmp"), 0o1777)
    Fs.writeFileSync(Path.join(rootfs, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")
    Fs.writeFileSync(Path.join(rootfs, "etc/group"), "root:x:0:\n")
    const tar = execFileSync("tar", ["-C", rootfs, "-c", "."], { maxBuffer: 1024 * 1024 * 1024 })
    // A temporary tag first, then the real one: two concurrent builders cannot leave half an image.
    const temporary = `agent-runs-test:build-${process.pid}`
    run("docker", [
      "import",
      "--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin",
      "--change", `LABEL agent-runs.node=${process.version}`,
      "-",
      temporary
    ], tar)
    run("docker", ["tag", temporary, testImage])
    run("docker", ["rmi", temporary])
  } finally {
    Fs.rmSync(rootfs, { recursive: true, force: true })
  }
}

/**
 * Removes the Docker sandboxes still mounted under `dir` (a server that stops keeps its sandboxes
 * for its next life): their containers, then their work directories' mounts, so that `dir` can be
 * deleted. Asks nothing of the engine when nothing is mounted there.
 */
export const removeSandboxesUnder = (dir: string): void => {
  if (!Fs.existsSync("/proc/self/mountinfo") || !Fs.existsSync(dir)) return
  const real = Fs.realpathSync(dir)
  const points = parseMountInfo(Fs.readFileSync("/proc/self/mountinfo", "utf8"))
    .map((entry) => entry.mountPoint)
    .filter((point) => point.startsWith(`${real}/`))
  for (const point of [...new Set(points)].reverse()) {
    const ids = spawnSync("docker", ["ps", "-aq", "--filter", `label=agent-runs.workdir=${point}`], { encoding: "utf8" })
      .stdout?.split("\n").filter((id) => id !== "") ?? []
    if (ids.length > 0) spawnSync("docker", ["rm", "-f", ...ids], { stdio: "ignore" })
    if (spawnSync("umount", [point], { stdio: "ignore" }).status !== 0) spawnSync("umount", ["-l", point], { stdio: "ignore" })
  }
}

/**
 * A Docker executor for a harness test in `root` (its `sandboxes` and `repos` inside): the test
 * image on the host's network (the fake model servers listen on 127.0.0.1), with an agent CLI's
 * directory mounted read-only at the same path.
 */
export const testExecutorWithCli = (root: string, cliDir: string) => {
  Fs.mkdirSync(Path.join(root, "repos"), { recursive: true })
  return DockerExecutor.layer({
    root: Path.join(root, "sandboxes"),
    reposDir: Path.join(root, "repos"),
    image: testImage,
    network: "host",
    mounts: [{ host: cliDir, container: cliDir, readOnly: true }]
  })
}
