/**
 * Security of the Docker sandbox (issue 15, finding 2: "Docker runs as root on a host folder").
 *
 * Threat: a member's setup command or agent runs whatever it likes in the container, and the
 * container's work directory is a host folder. Run as root with the default capabilities, it
 * could plant a setuid-root binary (or a device node) there, which anyone on the host who runs it
 * (or opens it) gets root (or the device) from; it could also change the image's own files.
 *
 * Attack: a setup command and an agent each copy a shell into the work directory, try to make it
 * root's and setuid/setgid (`chown 0:0; chmod 6755`), try `mknod`, write to `/etc`, and report
 * their uid, capabilities and how `/workspace` is mounted.
 *
 * What must happen: on the host, no file of the work directory is a setuid file of root's, a
 * setgid file of root's group, or a device; both ran as the sandbox's unprivileged user (65534),
 * with no capabilities (CapEff, CapPrm, CapBnd all 0) and `no-new-privileges`; `/etc` could not be
 * written (read-only root file system) while `/tmp` and the work directory could; the work
 * directory is `nosuid,nodev` both on the host and inside the container (the run's directory
 * closed to other users of the host), and its mount goes with
 * the sandbox; the memory, CPU and process limits stay. An agent that tampers with the executor's
 * pid file (a FIFO in its place, or none) cannot hang the host's reads or escape `terminate`.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import type { Sandbox } from "@agent-runs/core/ports/Executor"
import { Effect } from "effect"
import { containerOf, executorLayer, prepare, runIn, waitFor, workdirOf } from "./helpers.js"

/** Every entry under `dir` (not following symbolic links) with its lstat. */
const walk = (dir: string): Array<{ readonly path: string; readonly stat: Fs.Stats }> =>
  Fs.readdirSync(dir).flatMap((name) => {
    const path = Path.join(dir, name)
    const stat = Fs.lstatSync(path)
    return [{ path, stat }, ...(stat.isDirectory() ? walk(path) : [])]
  })

/** The files of the work directory that give root (or a device) to whoever runs (or opens) them. */
const dangerous = (workdir: string) =>
  walk(workdir)
    .filter(({ stat }) =>
      (stat.uid === 0 && (stat.mode & 0o4000) !== 0) ||
      (stat.gid === 0 && (stat.mode & 0o2000) !== 0) ||
      stat.isCharacterDevice() ||
      stat.isBlockDevice()
    )
    .map(({ path }) => Path.relative(workdir, path))

/** The per-mount options of the host mount `dir` lies on (the top one of the longest mount point). */
const hostMountOptions = (dir: string): Array<string> => {
  const real = Fs.realpathSync(dir)
  let best: { point: string; options: string } | undefined
  for (const line of Fs.readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
    const [, , , , point, options] = line.split(" ")
    if (point === undefined || options === undefined) continue
    const within = point === "/" || real === point || real.startsWith(`${point}/`)
    if (within && (best === undefined || point.length >= best.point.length)) best = { point, options }
  }
  return best?.options.split(",") ?? []
}

const isMountPoint = (dir: string) =>
  Fs.readFileSync("/proc/self/mountinfo", "utf8").split("\n").some((line) => line.split(" ")[4] === dir)

/** The attack, as one shell command: `who` names its files. */
const plant = (who: string) =>
  [
    `id -u > ${who}-uid`,
    `cp /bin/sh ${who}-sh; chown 0:0 ${who}-sh; chmod 6755 ${who}-sh`,
    `mknod ${who}-null c 1 3`,
    `if touch /etc/${who}-x; then echo written; else echo refused; fi > ${who}-etc`,
    `touch /tmp/${who}-tmp && echo ok > ${who}-tmp`,
    `grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs):' /proc/self/status > ${who}-status`,
    `while read -r _a _b _c _d point options _rest; do [ "$point" = /workspace ] && echo "$options"; done < /proc/self/mountinfo > ${who}-mount`,
    "true"
  ].join("; ")

const read = (workdir: string, name: string) => Fs.readFileSync(Path.join(workdir, name), "utf8").trim()

/** What one side of the attack saw, read on the host. */
const seenBy = (workdir: string, who: string) => ({
  uid: read(workdir, `${who}-uid`),
  etc: read(workdir, `${who}-etc`),
  tmp: read(workdir, `${who}-tmp`),
  status: read(workdir, `${who}-status`).split("\n").map((line) => line.replace(/\s+/g, " ")),
  mount: read(workdir, `${who}-mount`).split(",")
})

const expectedSeen = {
  uid: "65534",
  etc: "refused",
  tmp: "ok",
  status: ["CapPrm: 0000000000000000", "CapEff: 0000000000000000", "CapBnd: 0000000000000000", "NoNewPrivs: 1"],
  mount: expect.arrayContaining(["rw", "nosuid", "nodev"])
}

describe("Docker sandbox security", () => {
  it.layer(executorLayer({ memoryBytes: 256 * 1024 * 1024, nanoCpus: 500_000_000, pidsLimit: 200 }), { timeout: 60_000 })(
    "one executor",
    (it) => {
      it.scoped("setup commands and agents run unprivileged: no setuid-root file or device lands in the host work directory", () =>
        Effect.gen(function*() {
          const sandbox: Sandbox = yield* prepare({ setup_commands: [plant("setup")] })
          const agent = yield* runIn(sandbox, ["/bin/sh", "-c", plant("agent")])
          expect(agent.exitCode).toBe(0)
          const workdir = yield* workdirOf(sandbox)

          // The attack ran: its copies of the shell are there, but none of them is root's and set-id.
          expect(Fs.existsSync(Path.join(workdir, "setup-sh"))).toBe(true)
          expect(Fs.existsSync(Path.join(workdir, "agent-sh"))).toBe(true)
          expect(dangerous(workdir)).toEqual([])
          expect(seenBy(workdir, "setup")).toEqual(expectedSeen)
          expect(seenBy(workdir, "agent")).toEqual(expectedSeen)

          // The host's view of the work directory: nosuid,nodev as well, and out of other users' reach.
          expect(hostMountOptions(workdir)).toEqual(expect.arrayContaining(["nosuid", "nodev"]))
          expect(Fs.statSync(Path.dirname(workdir)).mode & 0o077).toBe(0)
        }))

      it.scoped("the container: non-root user, no capabilities, no new privileges, read-only root, tmpfs /tmp; limits kept", () =>
        Effect.gen(function*() {
          const sandbox = yield* prepare()
          const info = yield* containerOf(sandbox)
          expect(info.Config.User).toBe("65534:65534")
          expect(info.HostConfig.CapDrop).toEqual(["ALL"])
          expect(info.HostConfig.CapAdd ?? []).toEqual([])
          expect(info.HostConfig.Privileged).toBe(false)
          expect(info.HostConfig.SecurityOpt).toContain("no-new-privileges")
          expect(info.HostConfig.ReadonlyRootfs).toBe(true)
          expect(info.HostConfig.Tmpfs?.["/tmp"]).toMatch(/nosuid/)
          expect(info.HostConfig.Memory).toBe(256 * 1024 * 1024)
          expect(info.HostConfig.NanoCpus).toBe(500_000_000)
          expect(info.HostConfig.PidsLimit).toBe(200)
          // HOME is writable although the root file system is not.
          const home = yield* runIn(sandbox, ["/bin/sh", "-c", "echo $HOME; touch \"$HOME/.probe\" && echo writable"])
          expect(home.stdout).toBe("/tmp\nwritable\n")
        }))

      it.scoped("the work directory's nosuid mount goes with the sandbox", () =>
        Effect.gen(function*() {
          const sandbox = yield* prepare()
          const workdir = Fs.realpathSync(yield* workdirOf(sandbox))
          expect(isMountPoint(workdir)).toBe(true)
          yield* sandbox.release
          expect(isMountPoint(workdir)).toBe(false)
          expect(Fs.existsSync(workdir)).toBe(false)
        }))

      it.scoped("an agent that puts a FIFO in place of its pid file, or removes it, is still terminated", () =>
        Effect.gen(function*() {
          const sandbox = yield* prepare()
          for (const tamper of ["rm -f \"$f\"; mkfifo \"$f\"", "rm -f \"$f\""]) {
            const agent = yield* sandbox.start([
              "/bin/sh",
              "-c",
              `for f in /workspace/.agent-runs/agent-*.pid; do ${tamper}; done; echo ready; sleep 300`
            ], {})
            yield* waitFor(agent, "ready")
            yield* agent.terminate(2_000)
            expect(yield* agent.exitCode).toBe(143)
            yield* runIn(sandbox, ["/bin/sh", "-c", "rm -f /workspace/.agent-runs/agent-*.pid"])
          }
        }), { timeout: 30_000 })
    }
  )
})
