/**
 * The executor conformance suite: the contract in the header of `ports/Executor.ts`, checked
 * against a real executor (local processes, Docker). Every check goes through the sandbox (a node
 * one-liner started in it), never through the host's file system, so the suite runs unchanged
 * against any executor.
 *
 * Call `executorConformance(name, { layer, reposDir, node })` in a vitest file: `layer` provides the
 * Executor built over `reposDir`, where the suite creates its test repositories before the first
 * test (`createTestRepositories`: `acme/widgets`, non-bare, and `acme/tools`, bare, of the team
 * `TEST_TEAM`, at `<reposDir>/<team_uid>/<owner>/<repo>`); `node` is the
 * command that runs node inside the sandbox (an absolute path on the host for the process
 * executor, `node` in the image for Docker), used as argv[0] and, quoted, in setup commands. The
 * leftovers test builds `layer` a second time: a second executor instance over the same place.
 */
import { beforeAll, expect, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Layer, Stream } from "effect"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type ExecutionId, formatUuidV7, type RunId, type TeamUid } from "../src/domain/Ids.js"
import { concatBytes } from "../src/internal/Bytes.js"
import { type AgentProcess, Executor, type Sandbox, type SandboxSpec } from "../src/ports/Executor.js"

export interface ExecutorConformanceOptions<E> {
  /** The executor under test, built over `reposDir`. */
  readonly layer: Layer.Layer<Executor, E>
  /** The repositories directory the layer was built with; the suite fills it. */
  readonly reposDir: string
  /** The command running node inside the sandbox. */
  readonly node: string
}

/** The team the suite's sandboxes run for; the test repositories are its own. */
export const TEST_TEAM = "ConformanceTeam0000001" as TeamUid
/** Another team, which has no repository. */
export const OTHER_TEAM = "ConformanceTeam0000002" as TeamUid

/** What the test repositories hold. */
export const TEST_REPOSITORIES = {
  "acme/widgets": { "README.md": "# widgets\n", "src/index.txt": "widgets source\n" },
  "acme/tools": { "TOOLS.md": "tools\n" }
} as const

const git = (args: ReadonlyArray<string>) =>
  execFileSync("git", ["-c", "user.email=conformance@example.com", "-c", "user.name=Conformance", ...args], { stdio: "pipe" })

/** Commits `files` on main in a new repository at `work`. */
const commitFiles = (work: string, files: Readonly<Record<string, string>>) => {
  mkdirSync(work, { recursive: true })
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(work, path, ".."), { recursive: true })
    writeFileSync(join(work, path), content)
  }
  git(["init", "-q", "-b", "main", work])
  git(["-C", work, "add", "-A"])
  git(["-C", work, "commit", "-q", "-m", "initial"])
}

/**
 * Creates (or replaces) the bare repository `owner/repo` (`name`) of `team` in `reposDir`
 * (`<reposDir>/<team>/<owner>/<repo>`) with `files` committed on main.
 */
export const writeRepository = (reposDir: string, team: string, name: string, files: Readonly<Record<string, string>>): void => {
  const target = join(reposDir, team, ...name.split("/"))
  const work = mkdtempSync(join(tmpdir(), "agent-runs-repo-"))
  commitFiles(work, files)
  rmSync(target, { recursive: true, force: true })
  mkdirSync(join(target, ".."), { recursive: true })
  git(["clone", "-q", "--bare", work, target])
  rmSync(work, { recursive: true, force: true })
}

/** Creates the test repositories of `team` (`TEST_TEAM`) in `reposDir` (once): `acme/widgets` non-bare, `acme/tools` bare. */
export const createTestRepositories = (reposDir: string, team: string = TEST_TEAM): void => {
  for (const [name, files] of Object.entries(TEST_REPOSITORIES)) {
    const target = join(reposDir, team, ...name.split("/"))
    if (existsSync(target)) continue
    if (name === "acme/widgets") commitFiles(target, files)
    else writeRepository(reposDir, team, name, files)
  }
}

const randomBytes = (n: number): Uint8Array => globalThis.crypto.getRandomValues(new Uint8Array(n))
const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** A sandbox spec with fresh ids and nothing in it but `overrides`. */
export const sandboxSpec = (overrides: Partial<SandboxSpec> = {}): SandboxSpec => ({
  run_id: formatUuidV7(Date.now(), randomBytes(10)) as RunId,
  execution_id: formatUuidV7(Date.now(), randomBytes(10)) as ExecutionId,
  team_uid: TEST_TEAM,
  docker_image: null,
  repos: [],
  setup_commands: [],
  attachments: [],
  env: {},
  ...overrides
})

/** A word quoted for `/bin/sh`. */
const shQuote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`

const collect = (stdout: Stream.Stream<Uint8Array, unknown>) =>
  Effect.map(Stream.runFold(stdout, [] as Array<Uint8Array>, (chunks, chunk) => (chunks.push(chunk), chunks)), concatBytes)

/** Parses every non-empty line of `text` as JSON. */
const jsonLines = (text: string): Array<unknown> => text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))

/** Prepares a sandbox released when the scope closes. */
const prepared = (spec: SandboxSpec) =>
  Effect.flatMap(Executor, (executor) => Effect.acquireRelease(executor.prepare(spec), (sandbox) => sandbox.release))

/** Waits until the agent has printed a line `ready` (or ended); the rest of stdout is drained. */
const whenReady = (agent: AgentProcess) =>
  Effect.gen(function*() {
    const ready = yield* Deferred.make<boolean>()
    let seen = ""
    yield* agent.stdout.pipe(
      Stream.tap((chunk) => {
        seen += decoder.decode(chunk)
        return seen.includes("ready\n") ? Deferred.succeed(ready, true) : Effect.void
      }),
      Stream.runDrain,
      Effect.ensuring(Deferred.succeed(ready, false)),
      Effect.fork
    )
    expect(yield* Deferred.await(ready)).toBe(true)
  })

/** Registers the suite against one executor. */
export const executorConformance = <E>(name: string, options: ExecutorConformanceOptions<E>): void => {
  const node = options.node
  beforeAll(() => createTestRepositories(options.reposDir))

  /** Runs a node script in the sandbox to its end: what it printed and its exit code. */
  const runNode = (sandbox: Sandbox, script: string, env: Record<string, string> = {}) =>
    Effect.scoped(Effect.gen(function*() {
      const agent = yield* sandbox.start([node, "-e", script], env)
      const [stdout, exitCode] = yield* Effect.all([collect(agent.stdout), agent.exitCode], { concurrency: 2 })
      return { text: decoder.decode(stdout), exitCode }
    }))

  /** Runs a node script that prints one JSON value; that value. */
  const nodeValue = (sandbox: Sandbox, script: string, env: Record<string, string> = {}) =>
    Effect.map(runNode(sandbox, script, env), ({ exitCode, text }) => {
      expect(exitCode).toBe(0)
      return JSON.parse(text) as unknown
    })

  /** Starts a script that prints `ready` once it is set up and then waits forever. */
  const startWaiting = (sandbox: Sandbox, setup = "") =>
    Effect.tap(
      sandbox.start([node, "-e", `${setup}; process.stdout.write("ready\\n"); setInterval(() => {}, 1000)`], {}),
      whenReady
    )

  const isLeftover = (sandbox: Sandbox) =>
    Effect.flatMap(Executor, (executor) =>
      Effect.map(executor.leftovers, (all) => all.some((s) => s.execution_id === sandbox.execution_id && s.run_id === sandbox.run_id)))

  layer(options.layer, { excludeTestServices: true, timeout: "60 seconds" })(`executor conformance (${name})`, (it) => {
    it.scoped("prepare clones each repository (bare or not) into <workdir>/<repo> with its files", () =>
      Effect.gen(function*() {
        const sandbox = yield* prepared(sandboxSpec({ repos: [{ owner: "acme", repo: "widgets" }, { owner: "acme", repo: "tools" }] }))
        const files = yield* nodeValue(sandbox, `const fs = require("fs"); console.log(JSON.stringify({
          readme: fs.readFileSync("widgets/README.md", "utf8"), source: fs.readFileSync("widgets/src/index.txt", "utf8"),
          tools: fs.readFileSync("tools/TOOLS.md", "utf8"), git: fs.existsSync("widgets/.git") && fs.existsSync("tools/.git") }))`)
        expect(files).toEqual({
          readme: TEST_REPOSITORIES["acme/widgets"]["README.md"],
          source: TEST_REPOSITORIES["acme/widgets"]["src/index.txt"],
          tools: TEST_REPOSITORIES["acme/tools"]["TOOLS.md"],
          git: true
        })
      }))

    it.scoped("an agent that rewrites every object file of its clones leaves the repositories they came from as they were", () =>
      Effect.gen(function*() {
        const sources = [join(options.reposDir, TEST_TEAM, "acme", "widgets", ".git", "objects"), join(options.reposDir, TEST_TEAM, "acme", "tools", "objects")]
        const snapshot = () =>
          sources.flatMap((dir) =>
            readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())
              .map((e) => `${join(e.parentPath, e.name)} ${readFileSync(join(e.parentPath, e.name)).toString("base64")}`)
          ).sort()
        const before = snapshot()
        const sandbox = yield* prepared(sandboxSpec({ repos: [{ owner: "acme", repo: "widgets" }, { owner: "acme", repo: "tools" }] }))
        const rewritten = yield* nodeValue(sandbox, `const fs = require("fs"); let n = 0
          const walk = (dir) => { for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
            const path = dir + "/" + e.name
            if (e.isDirectory()) walk(path)
            else { fs.chmodSync(path, 0o644); fs.writeFileSync(path, "tampered"); n++ }
          } }
          walk("widgets/.git/objects"); walk("tools/.git/objects")
          console.log(JSON.stringify(n))`)
        expect(rewritten).toBeGreaterThan(0)
        expect(snapshot()).toEqual(before)
      }))

    it.scoped("attachments are written into <workdir>/attachments and listed with their paths", () =>
      Effect.gen(function*() {
        const binary = Uint8Array.from({ length: 256 }, (_, i) => i)
        const sandbox = yield* prepared(sandboxSpec({
          attachments: [
            { name: "notes.md", media_type: "text/markdown", bytes: encoder.encode("# notes\n") },
            { name: "blob.bin", media_type: "application/octet-stream", bytes: binary }
          ]
        }))
        expect(sandbox.attachments.map(({ media_type, name }) => ({ name, media_type }))).toEqual([
          { name: "notes.md", media_type: "text/markdown" },
          { name: "blob.bin", media_type: "application/octet-stream" }
        ])
        for (const attachment of sandbox.attachments) {
          expect(attachment.path.startsWith("/")).toBe(true)
          expect(attachment.path.endsWith(`/attachments/${attachment.name}`)).toBe(true)
        }
        const seen = yield* nodeValue(
          sandbox,
          `const fs = require("fs"); const path = require("path"); console.log(JSON.stringify(JSON.parse(process.env.PATHS).map((p) => ({
            content: fs.readFileSync(p).toString("base64"), relative: path.relative(process.cwd(), p) }))))`,
          { PATHS: JSON.stringify(sandbox.attachments.map((a) => a.path)) }
        )
        expect(seen).toEqual([
          { content: Buffer.from("# notes\n").toString("base64"), relative: "attachments/notes.md" },
          { content: Buffer.from(binary).toString("base64"), relative: "attachments/blob.bin" }
        ])
      }))

    it.scoped("setup commands run one by one with /bin/sh in the work directory with the env, after the clones", () =>
      Effect.gen(function*() {
        const sandbox = yield* prepared(sandboxSpec({
          repos: [{ owner: "acme", repo: "widgets" }],
          env: { GREETING: "hello there" },
          setup_commands: [
            `echo "first $GREETING" >> log.txt`,
            "test -f widgets/README.md && echo second >> log.txt",
            `${shQuote(node)} -e 'require("fs").appendFileSync("log.txt", "third " + process.env.GREETING + "\\n")'`
          ]
        }))
        expect(yield* nodeValue(sandbox, `console.log(JSON.stringify(require("fs").readFileSync("log.txt", "utf8")))`))
          .toBe("first hello there\nsecond\nthird hello there\n")
      }))

    it.scoped("a failing setup command: SetupFailed naming it, its exit code and the end of its output; the sandbox is kept", () =>
      Effect.gen(function*() {
        const executor = yield* Executor
        const failing = `echo "out-marker"; echo "err-marker" >&2; exit 7`
        const error = yield* Effect.flip(executor.prepare(sandboxSpec({
          setup_commands: ["echo one > one.txt", failing, "echo three > three.txt"]
        })))
        expect(error._tag).toBe("SetupFailed")
        if (error._tag !== "SetupFailed") return
        yield* Effect.addFinalizer(() => error.sandbox.release)
        expect(error.message).toContain(failing)
        expect(error.message).toMatch(/\b7\b/)
        expect(error.message).toContain("out-marker")
        expect(error.message).toContain("err-marker")
        // The kept sandbox takes commands (a debug agent): the first command ran, the third did not.
        expect(yield* nodeValue(error.sandbox, `const fs = require("fs"); console.log(JSON.stringify([fs.existsSync("one.txt"), fs.existsSync("three.txt")]))`))
          .toEqual([true, false])
        expect(yield* isLeftover(error.sandbox)).toBe(true)
        yield* error.sandbox.release
        expect(yield* isLeftover(error.sandbox)).toBe(false)
      }))

    it.scoped("a repository that does not exist is SetupFailed naming it", () =>
      Effect.gen(function*() {
        const executor = yield* Executor
        const error = yield* Effect.flip(executor.prepare(sandboxSpec({
          repos: [{ owner: "acme", repo: "widgets" }, { owner: "acme", repo: "missing" }],
          setup_commands: ["echo never > never.txt"]
        })))
        expect(error._tag).toBe("SetupFailed")
        if (error._tag !== "SetupFailed") return
        yield* Effect.addFinalizer(() => error.sandbox.release)
        expect(error.message).toContain("acme/missing")
      }))

    it.scoped("a repository of another team is not there: SetupFailed naming it (a team uses only its own)", () =>
      Effect.gen(function*() {
        const executor = yield* Executor
        const error = yield* Effect.flip(executor.prepare(sandboxSpec({
          team_uid: OTHER_TEAM,
          repos: [{ owner: "acme", repo: "widgets" }],
          setup_commands: ["echo never > never.txt"]
        })))
        expect(error._tag).toBe("SetupFailed")
        if (error._tag !== "SetupFailed") return
        yield* Effect.addFinalizer(() => error.sandbox.release)
        expect(error.message).toContain("acme/widgets")
        expect(yield* nodeValue(error.sandbox, `const fs = require("fs"); console.log(JSON.stringify([fs.existsSync("widgets"), fs.existsSync("never.txt")]))`))
          .toEqual([false, false])
      }))

    it.scoped("start: the sandbox's env plus the given variables, in the work directory; stdin takes JSON lines", () =>
      Effect.gen(function*() {
        const sandbox = yield* prepared(sandboxSpec({
          repos: [{ owner: "acme", repo: "widgets" }],
          env: { SPEC_ONLY: "from spec", SHARED: "spec" }
        }))
        const agent = yield* sandbox.start([node, "-e", `
          const env = process.env
          console.log(JSON.stringify({ env: { SPEC_ONLY: env.SPEC_ONLY, SHARED: env.SHARED, START_ONLY: env.START_ONLY }, repo: require("fs").existsSync("widgets/README.md") }))
          require("readline").createInterface({ input: process.stdin }).on("line", (line) => {
            const message = JSON.parse(line)
            console.log(JSON.stringify({ got: message }))
            if (message.type === "stop") process.exit(0)
          })`], { SHARED: "start", START_ONLY: "from start" })
        const output = yield* Effect.fork(collect(agent.stdout))
        yield* agent.send({ type: "hello", text: "line\nbreak ✓" })
        yield* agent.send({ type: "stop" })
        expect(yield* agent.exitCode).toBe(0)
        expect(jsonLines(decoder.decode(yield* output))).toEqual([
          { env: { SPEC_ONLY: "from spec", SHARED: "start", START_ONLY: "from start" }, repo: true },
          { got: { type: "hello", text: "line\nbreak ✓" } },
          { got: { type: "stop" } }
        ])
      }))

    it.scoped("stdout: many small writes arrive in full and in order", () =>
      Effect.gen(function*() {
        const sandbox = yield* prepared(sandboxSpec())
        const { exitCode, text } = yield* runNode(sandbox, `
          let i = 0
          const next = () => { for (let j = 0; j < 20; j++) process.stdout.write("line " + i++ + "\\n"); if (i < 4000) setImmediate(next) }
          next()`)
        expect(exitCode).toBe(0)
        expect(text).toBe(Array.from({ length: 4000 }, (_, i) => `line ${i}\n`).join(""))
      }))

    it.scoped("stdout: one line of 10 MB arrives in full", () =>
      Effect.gen(function*() {
        const sandbox = yield* prepared(sandboxSpec())
        const size = 10 * 1024 * 1024
        const agent = yield* sandbox.start([node, "-e", `process.stdout.write("x".repeat(${size}) + "\\n")`], {})
        const bytes = yield* collect(agent.stdout)
        expect(yield* agent.exitCode).toBe(0)
        expect(bytes.byteLength).toBe(size + 1)
        expect(bytes[size]).toBe(10)
        expect(bytes.subarray(0, size).every((b) => b === 120)).toBe(true)
      }))

    it.scoped("stdout: what the agent wrote before anyone read it is kept, even once it has exited", () =>
      Effect.gen(function*() {
        const sandbox = yield* prepared(sandboxSpec())
        const agent = yield* sandbox.start([node, "-e", `process.stdout.write("early\\n"); process.stderr.write("e".repeat(1 << 20) + "\\n")`], {})
        expect(yield* agent.exitCode).toBe(0)
        expect(decoder.decode(yield* collect(agent.stdout))).toBe("early\n")
      }))

    it.scoped("exit codes: 0 and 3 from commands run one after the other in one sandbox", () =>
      Effect.gen(function*() {
        const sandbox = yield* prepared(sandboxSpec())
        expect((yield* runNode(sandbox, "process.exit(0)")).exitCode).toBe(0)
        expect((yield* runNode(sandbox, "process.exit(3)")).exitCode).toBe(3)
      }))

    it.scoped("terminate: SIGTERM stops the agent, whose exit code is 128 + 15", () =>
      Effect.gen(function*() {
        const sandbox = yield* prepared(sandboxSpec())
        const agent = yield* startWaiting(sandbox)
        yield* agent.terminate(5_000)
        expect(yield* agent.exitCode).toBe(128 + 15)
      }))

    it.scoped("terminate: an agent that ignores SIGTERM is killed after the grace period (128 + 9)", () =>
      Effect.gen(function*() {
        const sandbox = yield* prepared(sandboxSpec())
        const agent = yield* startWaiting(sandbox, `process.on("SIGTERM", () => {})`)
        yield* agent.terminate(300)
        expect(yield* agent.exitCode).toBe(128 + 9)
      }))

    it.scoped("the scope of start closing stops an agent that still runs", () =>
      Effect.gen(function*() {
        const sandbox = yield* prepared(sandboxSpec())
        const agent = yield* Effect.scoped(startWaiting(sandbox))
        expect(yield* agent.exitCode).toBe(128 + 15)
      }))

    it.scoped("release stops what still runs and removes the sandbox; releasing again is fine", () =>
      Effect.gen(function*() {
        const executor = yield* Executor
        const sandbox = yield* executor.prepare(sandboxSpec({ repos: [{ owner: "acme", repo: "widgets" }] }))
        expect(yield* isLeftover(sandbox)).toBe(true)
        const agent = yield* startWaiting(sandbox)
        yield* sandbox.release
        expect(yield* agent.exitCode).not.toBe(0)
        expect(yield* isLeftover(sandbox)).toBe(false)
        yield* sandbox.release
        expect(yield* isLeftover(sandbox)).toBe(false)
      }))

    it.scoped("a run's next execution is prepared while its previous one is released", () =>
      Effect.gen(function*() {
        const executor = yield* Executor
        for (let i = 0; i < 10; i++) {
          const previous = yield* executor.prepare(sandboxSpec())
          const [, next] = yield* Effect.all(
            [previous.release, executor.prepare(sandboxSpec({ run_id: previous.run_id }))],
            { concurrency: 2 }
          )
          expect((yield* runNode(next, "console.log('ok')")).text).toBe("ok\n")
          yield* next.release
        }
        // Ten rounds of containers on Docker take a while on a busy machine.
      }), { timeout: 120_000 })

    it.scoped("leftovers: a second executor over the same place finds the sandbox, starts in it and releases it", () =>
      Effect.gen(function*() {
        const first = yield* Executor
        const sandbox = yield* first.prepare(sandboxSpec({
          repos: [{ owner: "acme", repo: "widgets" }],
          setup_commands: ["echo prepared > state.txt"]
        }))
        yield* Effect.addFinalizer(() => sandbox.release)
        const second = Context.get(yield* Layer.build(options.layer), Executor)
        const found = (yield* second.leftovers).filter((s) => s.execution_id === sandbox.execution_id)
        expect(found.map((s) => ({ id: s.id, run_id: s.run_id }))).toEqual([{ id: sandbox.id, run_id: sandbox.run_id }])
        const leftover = found[0]!
        expect(yield* nodeValue(leftover, `const fs = require("fs"); console.log(JSON.stringify([fs.readFileSync("state.txt", "utf8"), fs.existsSync("widgets/README.md")]))`))
          .toEqual(["prepared\n", true])
        yield* leftover.release
        expect(yield* isLeftover(sandbox)).toBe(false)
        expect((yield* second.leftovers).some((s) => s.execution_id === sandbox.execution_id)).toBe(false)
      }))
  })
}
