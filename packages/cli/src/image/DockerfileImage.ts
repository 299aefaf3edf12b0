/**
 * The agent image built from its Dockerfile (`docker/agent/` at the repository's root; needs the
 * registry and the network): `docker build -t TAG DIR`. The directory is the one given, else
 * `docker/agent` in the current directory or one of its ancestors, else in an ancestor of this
 * package (the repository it is installed in). Docker's layer cache makes a repeated build quick;
 * `force` builds without it.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as Docker from "./Docker.js"
import { ImageError } from "./ImageError.js"

/** The Dockerfile's folder, relative to the repository's root. */
export const DOCKERFILE_DIR = Path.join("docker", "agent")

const holdsDockerfile = (dir: string): boolean => Fs.existsSync(Path.join(dir, "Dockerfile"))

const ancestors = (dir: string): ReadonlyArray<string> => {
  const all: Array<string> = []
  for (let current = Path.resolve(dir); ; current = Path.dirname(current)) {
    all.push(current)
    if (Path.dirname(current) === current) return all
  }
}

/** The folder of the agent Dockerfile: `given` when set (it must hold a Dockerfile), else the first found. */
export const findDockerfileDir = (given: string | undefined, from: ReadonlyArray<string> = [process.cwd(), Path.dirname(fileURLToPath(import.meta.url))]): string => {
  if (given !== undefined) {
    const dir = Path.resolve(given)
    if (!holdsDockerfile(dir)) throw new ImageError({ message: `${dir} holds no Dockerfile` })
    return dir
  }
  const found = from.flatMap(ancestors).map((dir) => Path.join(dir, DOCKERFILE_DIR)).find(holdsDockerfile)
  if (found === undefined) {
    throw new ImageError({
      message: "the agent Dockerfile was not found: pass --dockerfile-dir DIR (docker/agent in the agent-runs repository), or use --local"
    })
  }
  return found
}

export interface DockerfileImageOptions {
  readonly tag: string
  readonly dockerfileDir: string | undefined
  /** Build without Docker's layer cache. */
  readonly force: boolean
  readonly log: (line: string) => void
  readonly signal?: AbortSignal
}

/** Builds the image from the Dockerfile; its progress on stderr. */
export const build = async (options: DockerfileImageOptions): Promise<{ readonly tag: string; readonly seconds: number; readonly bytes: number }> => {
  const started = Date.now()
  Docker.checkEngine()
  const dir = findDockerfileDir(options.dockerfileDir)
  options.log(`docker build -t ${options.tag}${options.force ? " --no-cache" : ""} ${dir}`)
  await Docker.buildImage(dir, options.tag, { noCache: options.force, ...(options.signal === undefined ? {} : { signal: options.signal }) })
  const seconds = Math.round((Date.now() - started) / 100) / 10
  const bytes = Docker.imageSize(options.tag)
  options.log(`built ${options.tag} (${(bytes / 1024 ** 2).toFixed(0)} MB) in ${seconds} s`)
  return { tag: options.tag, seconds, bytes }
}
