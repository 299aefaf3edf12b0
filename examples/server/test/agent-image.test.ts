/**
 * The agent image made without a registry (`agent-runs image build --local`, packages/cli
 * src/image/LocalImage.ts) and a real agent CLI in it through the whole service.
 *
 * - The image `agent-runs-agent:test` is built by the command itself, in-process; it is skipped
 *   when the image already carries the same build hash, so only the first run on a machine pays
 *   for the import (about a minute for a gigabyte).
 * - In it, without a network, each agent CLI, git and Node answer `--version` with the pinned
 *   versions (the harness packages' devDependencies, this Node, this machine's git).
 * - Claude Code runs a run end to end: the bundled server in-process on the Docker executor with
 *   that image (as the environment's `docker_image`), on the host's network so that the container
 *   reaches the fake Anthropic server on 127.0.0.1, authenticated with the team secret
 *   `ANTHROPIC_API_KEY`; its tool runs inside the container, as the sandbox's user.
 */
import { Cli } from "@agent-runs/cli"
import { ensureEngine } from "@agent-runs/executor-docker/testing"
import { fakeModel } from "@agent-runs/testing"
import { NodeContext } from "@effect/platform-node"
import { Effect, Exit, Scope } from "effect"
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeTeam, startServer, type TestServer } from "./harness.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const image = "agent-runs-agent:test"
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url))

/** The version of a CLI a harness package pins (its devDependency). */
const pinned = (harness: string, name: string): string =>
  JSON.parse(readFileSync(join(repoRoot, "packages", harness, "package.json"), "utf8")).devDependencies[name]

/** Runs a command to its end, its stdout; never blocking the server that runs in this process. */
const run = async (command: string, args: ReadonlyArray<string>): Promise<string> =>
  (await promisify(execFile)(command, [...args], { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 })).stdout

const blocks = (steps: ReadonlyArray<Json>): Array<Json> =>
  steps.flatMap((step) => [...step.messages.flatMap((m: Json) => m.content), ...blocks(step.steps)])

describe("the agent image built locally", () => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer
  let modelUrl = ""
  let team: Awaited<ReturnType<typeof makeTeam>>

  beforeAll(async () => {
    ensureEngine()
    await Effect.runPromise(
      Cli.run(["node", "agent-runs", "image", "build", "--local", "--tag", image]).pipe(Effect.provide(NodeContext.layer))
    )
    const model = await Effect.runPromise(Scope.extend(fakeModel({ apiKey: "sk-team-key" }), scope))
    modelUrl = model.url
    server = await Effect.runPromise(
      Scope.extend(
        startServer("sqlite", {}, {
          concurrency: 2,
          cancelGraceSeconds: 1,
          executor: "docker",
          dockerImage: "agent-runs-test:latest",
          // The host's network: the container reaches the fake model on 127.0.0.1.
          dockerNetwork: "host"
        }),
        scope
      )
    )
    team = await makeTeam(server, "agent-image")
  }, 15 * 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

  it("carries the labels of an agent image and of its build", async () => {
    const labels = JSON.parse(await run("docker", ["image", "inspect", "--format", "{{json .Config.Labels}}", image]))
    expect(labels["agent-runs.image"]).toBe("agent")
    expect(labels["agent-runs.build"]).toMatch(/^[0-9a-f]{16}$/)
    expect(labels["agent-runs.contents"]).toContain(`@anthropic-ai/claude-code@${pinned("harness-claude", "@anthropic-ai/claude-code")}`)
  })

  it("runs each agent CLI, git and Node offline, at the pinned versions", async () => {
    const script = ["claude", "codex", "gemini", "opencode", "git", "node"]
      .map((command) => `echo "${command}=$(${command} --version 2>/dev/null | head -n 1)"`)
      .join("; ")
    const output = await run("docker", ["run", "--rm", "--network", "none", image, "sh", "-c", script])
    const versions = Object.fromEntries(output.trim().split("\n").map((line) => line.split("=", 2) as [string, string]))
    expect(versions["claude"]).toContain(pinned("harness-claude", "@anthropic-ai/claude-code"))
    expect(versions["claude"]).toContain("Claude Code")
    expect(versions["codex"]).toBe(`codex-cli ${pinned("harness-codex", "@openai/codex")}`)
    expect(versions["gemini"]).toBe(pinned("harness-gemini", "@google/gemini-cli"))
    expect(versions["opencode"]).toBe(pinned("harness-opencode", "opencode-ai"))
    expect(versions["git"]).toBe((await run("git", ["--version"])).trim())
    expect(versions["node"]).toBe(process.version)
  }, 60_000)

  it("runs Claude Code in a Docker sandbox of that image to SUCCEEDED, its tool inside the container", async () => {
    const token = team.tokens.admin
    expect((await call(server, "PUT", "/api/v1/agent/secrets/ANTHROPIC_API_KEY", { token, body: { value: "sk-team-key" } })).status)
      .toBeLessThan(300)
    const env = await call(server, "POST", "/api/v1/agent/environments", {
      token,
      body: {
        config: {
          name: "claude-docker",
          docker_image: image,
          harness: { type: "claude", model_id: "claude-sonnet-4-5" },
          env: { ANTHROPIC_BASE_URL: modelUrl }
        },
        team: true
      }
    })
    expect(env.status).toBe(201)
    const created = await call(server, "POST", "/api/v1/agent/runs", {
      token: team.tokens.member,
      body: {
        prompt: "RUN: echo made-by-$(id -u) > g.txt && cat g.txt && ls /opt/agent-runs/node_modules/@anthropic-ai",
        config: { environment_id: env.body.uid }
      }
    })
    expect(created.status).toBe(200)
    const runId = created.body.run_id
    let run: Json
    const deadline = Date.now() + 120_000
    do {
      await new Promise((resolve) => setTimeout(resolve, 250))
      run = (await call(server, "GET", `/api/v1/agent/runs/${runId}`, { token: team.tokens.member })).body
    } while (!["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"].includes(run.state) && Date.now() < deadline)
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED")
    expect(run.agent_config.harness).toEqual({ type: "claude", model_id: "claude-sonnet-4-5" })
    expect(run.session_id).toBeTruthy()
    const conversation = await call(server, "GET", `/api/v1/agent/runs/${runId}/conversation`, { token: team.tokens.member })
    const all = blocks(conversation.body.steps)
    expect(all.find((b) => b.type === "action")).toMatchObject({ category: "command", name: "Bash" })
    // The tool ran in the container: as the sandbox's user (65534), next to the image's CLI packages.
    const done = all.find((b) => b.type === "text" && b.text.includes("DONE:"))
    expect(done?.text).toContain("made-by-65534")
    expect(done?.text).toContain("claude-code")
  }, 180_000)
})
