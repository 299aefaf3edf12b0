/**
 * Security of Docker sandboxes through the bundled server (issue 15, finding 2). The executor's own
 * attack test is packages/executor-docker/test/security.test.ts; this one checks the server's
 * wiring and defaults.
 *
 * Threat: a team's environment (its setup commands and its harness) runs whatever it likes in the
 * container, whose work directory is a folder of the server's host. As root it could plant a
 * setuid-root binary or a device node there, and change the image's files; without limits it
 * could take the host's memory, CPUs and process table.
 *
 * Attack: an environment whose setup command and agent each copy a shell into the work directory,
 * make it root's and setuid (`chown 0:0; chmod 6755`), `mknod` a device, write to `/etc` and
 * record their uid and capabilities.
 *
 * What must happen: on the host, no file of the run's work directory is a setuid file of root's,
 * a setgid file of root's group, or a device; both ran as 65534 with no capabilities and could not
 * write `/etc`; the run's container has the server's default limits (4 GiB, 2 CPUs, 4096
 * processes). The bundled scripted agent, mounted read-only, still runs as that user. The
 * settings refuse root (`AGENT_RUNS_DOCKER_USER=0:0`, or gid 0).
 */
import { testImage } from "@agent-runs/executor-docker/testing"
import { ConfigProvider, Effect, Either, Exit, Scope } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ServerConfig } from "@agent-runs/cli"
import { call, makeTeam, startServer, type TestServer } from "../harness.js"

const parse = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(Effect.withConfigProvider(ServerConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))))

/** The server's Docker sandbox settings with nothing set. */
const defaults = () => {
  const parsed = parse({})
  if (Either.isLeft(parsed)) throw new Error(String(parsed.left))
  return parsed.right.execution.dockerSandbox
}

/** A word quoted for `/bin/sh`. */
const shQuote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`

/** The attack as one shell command; `who` names its files. */
const attack = (who: string) =>
  [
    `id -u > ${who}-uid`,
    `cp /bin/sh ${who}-sh; chown 0:0 ${who}-sh; chmod 6755 ${who}-sh`,
    `mknod ${who}-null c 1 3`,
    `if touch /etc/${who}-x 2>/dev/null; then echo written; else echo refused; fi > ${who}-etc`,
    `grep CapEff /proc/self/status > ${who}-caps`,
    "true"
  ].join("; ")

/** Every entry under `dir` (symbolic links not followed). */
const walk = (dir: string): Array<{ readonly path: string; readonly stat: Fs.Stats }> =>
  Fs.readdirSync(dir).flatMap((name) => {
    const path = Path.join(dir, name)
    const stat = Fs.lstatSync(path)
    return [{ path, stat }, ...(stat.isDirectory() ? walk(path) : [])]
  })

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("Docker sandbox settings", () => {
  it("default to 65534:65534, 4 GiB, 2 CPUs, 4096 processes and a 1 GiB /tmp", () => {
    expect(defaults()).toEqual({
      user: { uid: 65534, gid: 65534 },
      memoryBytes: 4 * 1024 ** 3,
      nanoCpus: 2_000_000_000,
      pidsLimit: 4096,
      tmpBytes: 1024 ** 3
    })
    const set = parse({ AGENT_RUNS_DOCKER_USER: "1000:1000", AGENT_RUNS_DOCKER_CPUS: "0.5" })
    expect(Either.isRight(set) && set.right.execution.dockerSandbox).toMatchObject({ user: { uid: 1000, gid: 1000 }, nanoCpus: 500_000_000 })
  })

  it("refuse root and what is not uid:gid", () => {
    for (const user of ["0:0", "1000:0", "0:1000", "nobody", "1000", "-1:5"]) {
      const parsed = parse({ AGENT_RUNS_DOCKER_USER: user })
      expect(Either.isLeft(parsed), user).toBe(true)
      if (Either.isLeft(parsed)) expect(String(parsed.left)).toContain("AGENT_RUNS_DOCKER_USER")
    }
    expect(Either.isLeft(parse({ AGENT_RUNS_DOCKER_PIDS: "0" }))).toBe(true)
  })
})

describe("Docker sandbox through the server", () => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer
  let admin = ""
  let member = ""
  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(
      startServer("sqlite", {}, {
        concurrency: 2,
        cancelGraceSeconds: 1,
        executor: "docker",
        dockerImage: testImage,
        dockerSandbox: defaults()
      }),
      scope
    ))
    const team = await makeTeam(server, "docker-sandbox")
    admin = team.tokens.admin
    member = team.tokens.member
  }, 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

  const run = async (prompt: string, config: Record<string, unknown> = {}) => {
    const created = await call(server, "POST", "/api/v1/agent/runs", { token: member, body: { prompt, config } })
    expect(created.status).toBe(200)
    return created.body.run_id as string
  }
  const waitForRun = async (runId: string, done: (run: Json) => boolean, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const body = (await call(server, "GET", `/api/v1/agent/runs/${runId}`, { token: member })).body
      if (done(body) || Date.now() > deadline) return body
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const ended = (r: Json) => ["SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"].includes(r.state)

  it("an environment's setup command and agent plant no setuid-root file or device on the host; they run unprivileged, within limits", async () => {
    const env = await call(server, "POST", "/api/v1/agent/environments", {
      token: admin,
      body: {
        config: {
          name: "attacker",
          setup_commands: [attack("setup")],
          harness: `sh -c ${shQuote(`${attack("agent")}; touch agent-done; exec sleep 60`)}`
        },
        team: true
      }
    })
    expect(env.status).toBe(201)
    const runId = await run("attack", { environment_id: env.body.uid })

    // The agent holds the sandbox open once its attack is done: find its work directory on the host.
    const runDir = Path.join(server.dataDir, "sandboxes", runId)
    let workdir: string | undefined
    const deadline = Date.now() + 20_000
    while (workdir === undefined && Date.now() < deadline) {
      const done = Fs.existsSync(runDir) ? Fs.readdirSync(runDir).find((e) => Fs.existsSync(Path.join(runDir, e, "agent-done"))) : undefined
      if (done !== undefined) workdir = Path.join(runDir, done)
      else await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(workdir, JSON.stringify((await waitForRun(runId, () => true)).status_message)).toBeDefined()
    const read = (name: string) => Fs.readFileSync(Path.join(workdir!, name), "utf8").trim()

    expect(Fs.existsSync(Path.join(workdir!, "setup-sh")) && Fs.existsSync(Path.join(workdir!, "agent-sh"))).toBe(true)
    const dangerous = walk(workdir!)
      .filter(({ stat }) =>
        (stat.uid === 0 && (stat.mode & 0o4000) !== 0) || (stat.gid === 0 && (stat.mode & 0o2000) !== 0) ||
        stat.isCharacterDevice() || stat.isBlockDevice()
      )
      .map(({ path }) => Path.relative(workdir!, path))
    expect(dangerous).toEqual([])
    for (const who of ["setup", "agent"]) {
      expect({ uid: read(`${who}-uid`), etc: read(`${who}-etc`), caps: read(`${who}-caps`).replace(/\s+/g, " ") })
        .toEqual({ uid: "65534", etc: "refused", caps: "CapEff: 0000000000000000" })
    }

    const id = execFileSync("docker", ["ps", "-q", "--filter", `label=agent-runs.run-id=${runId}`]).toString().trim()
    const [info] = JSON.parse(execFileSync("docker", ["inspect", id]).toString()) as Array<Json>
    expect(info.Config.User).toBe("65534:65534")
    expect(info.HostConfig).toMatchObject({
      Memory: 4 * 1024 ** 3,
      NanoCpus: 2_000_000_000,
      PidsLimit: 4096,
      ReadonlyRootfs: true,
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"]
    })

    expect((await call(server, "POST", `/api/v1/agent/runs/${runId}/cancel`, { token: member })).status).toBe(200)
    expect((await waitForRun(runId, ended)).state).toBe("CANCELLED")
  }, 60_000)

  it("the bundled scripted agent, mounted read-only, runs as the unprivileged user", async () => {
    const runId = await run("@say hello from nobody")
    const finished = await waitForRun(runId, ended)
    expect(finished.state, JSON.stringify(finished.status_message)).toBe("SUCCEEDED")
  }, 60_000)
})
