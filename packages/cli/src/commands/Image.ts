/**
 * `agent-runs image build [--tag agent-runs-agent:latest] [--local] [--dockerfile-dir DIR]
 * [--force]`: builds the agent image, the Docker executor's default sandbox image (Node, git, and
 * the agent CLIs claude, codex, gemini and opencode on `PATH`; docs/execution.md, "Running real
 * agents on Docker").
 *
 * - Without `--local`: `docker build -t TAG docker/agent` (the Dockerfile of the repository, found
 *   from the current directory or this package, or `--dockerfile-dir`); needs a registry and the
 *   network. `--force` builds without Docker's cache.
 * - With `--local`: no registry, no network: a root file system assembled from this machine
 *   (busybox-static, this Node, git, the CLIs installed in `node_modules` with their dependencies)
 *   and `docker import`ed (image/LocalImage.ts). Skipped when the tag already carries the same
 *   build hash (the label `agent-runs.build`), so it is cheap to run every time; `--force`
 *   rebuilds.
 *
 * Progress goes to stderr, the built tag to stdout; a failure is one line on stderr (exit code 1).
 */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import * as DockerfileImage from "../image/DockerfileImage.js"
import { toImageError } from "../image/ImageError.js"
import * as LocalImage from "../image/LocalImage.js"

const tag = Options.text("tag").pipe(
  Options.withDefault(LocalImage.DEFAULT_TAG),
  Options.withDescription(`the image's name (default ${LocalImage.DEFAULT_TAG}, the bundled server's AGENT_RUNS_DOCKER_IMAGE)`)
)

const local = Options.boolean("local").pipe(
  Options.withDescription("assemble the image from this machine and docker import it: no registry, no network")
)

const dockerfileDir = Options.directory("dockerfile-dir").pipe(
  Options.optional,
  Options.withDescription("without --local: the folder of the Dockerfile (default: docker/agent of the repository)")
)

const force = Options.boolean("force").pipe(
  Options.withDescription("rebuild: with --local even when the image is up to date, else without Docker's cache")
)

const log = (line: string) => process.stderr.write(`agent-runs image: ${line}\n`)

export const buildCommand = Command.make(
  "build",
  { tag, local, dockerfileDir, force },
  (options) =>
    Effect.gen(function*() {
      const built = yield* Effect.tryPromise({
        try: (signal) =>
          options.local
            ? LocalImage.build({ tag: options.tag, force: options.force, log, signal })
            : DockerfileImage.build({ tag: options.tag, dockerfileDir: Option.getOrUndefined(options.dockerfileDir), force: options.force, log, signal }),
        catch: toImageError
      })
      yield* Console.log(built.tag)
    }).pipe(Effect.tapError((error) => Console.error(`agent-runs image: ${error.message}`)))
).pipe(
  Command.withDescription(
    "Build the agent image (Node, git and the agent CLIs claude, codex, gemini, opencode): from docker/agent/Dockerfile, " +
      "or with --local from this machine without a registry or the network (skipped when up to date; --force rebuilds)."
  )
)

/** `agent-runs image …`: the agent image. */
export const imageCommand = Command.make("image").pipe(
  Command.withDescription("The agent image of Docker sandboxes."),
  Command.withSubcommands([buildCommand])
)
