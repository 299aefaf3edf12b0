/**
 * The Docker engine through the `docker` command, for building agent images: whether it answers,
 * an image's labels, id and size, the images that carry a label, `docker import` of a tar stream,
 * `docker build`, tagging and removing. Every failure is an `ImageError` of one line that says what
 * to do (`docker is not running: start the engine first`); the engine's own words follow when
 * they add something.
 */
import { spawn, spawnSync } from "node:child_process"
import type { Writable } from "node:stream"
import { ImageError } from "./ImageError.js"

/** The gist of what docker printed on stderr: its last line (the error; notices come before it). */
const gist = (stderr: string): string =>
  stderr.split("\n").map((line) => line.trim()).filter((line) => line !== "").pop() ?? ""

/** A failure of the engine as the readable line it deserves. */
export const engineError = (stderr: string, doing: string): ImageError => {
  if (/cannot connect to the docker daemon|is the docker daemon running|no such file or directory.*docker\.sock/i.test(stderr)) {
    return new ImageError({ message: "docker is not running: start the engine first" })
  }
  if (/permission denied/i.test(stderr)) {
    return new ImageError({
      message: "docker refused access to its socket: run as root or as a member of the docker group"
    })
  }
  return new ImageError({ message: `docker could not ${doing}: ${gist(stderr) || "no reason given"}` })
}

const notInstalled = () => new ImageError({ message: "docker is not installed: install Docker (the docker command) first" })

/** Runs `docker ARGS` to its end: its stdout, or the failure. */
const docker = (args: ReadonlyArray<string>, doing: string): string => {
  const result = spawnSync("docker", args, { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 })
  if (result.error !== undefined) {
    throw (result.error as NodeJS.ErrnoException).code === "ENOENT" ? notInstalled() : new ImageError({ message: `docker could not ${doing}: ${result.error.message}` })
  }
  if (result.status !== 0) throw engineError(result.stderr ?? "", doing)
  return result.stdout ?? ""
}

/** Fails unless the engine answers. */
export const checkEngine = (): void => {
  docker(["version", "--format", "{{.Server.Version}}"], "reach the engine")
}

/** The labels of an image; undefined when there is no such image. */
export const imageLabels = (ref: string): Readonly<Record<string, string>> | undefined => {
  const result = spawnSync("docker", ["image", "inspect", "--format", "{{json .Config.Labels}}", ref], { encoding: "utf8" })
  if (result.error !== undefined) throw notInstalled()
  if (result.status !== 0) {
    if (/no such image/i.test(result.stderr ?? "")) return undefined
    throw engineError(result.stderr ?? "", `inspect ${ref}`)
  }
  const parsed: unknown = JSON.parse(result.stdout.trim() || "null")
  return typeof parsed === "object" && parsed !== null ? parsed as Record<string, string> : {}
}

/** The id of an image; undefined when there is no such image. */
export const imageId = (ref: string): string | undefined => {
  const result = spawnSync("docker", ["image", "inspect", "--format", "{{.Id}}", ref], { encoding: "utf8" })
  return result.status === 0 ? result.stdout.trim() : undefined
}

/** An image's size in bytes, as the engine counts it (unpacked). */
export const imageSize = (ref: string): number =>
  Number(docker(["image", "inspect", "--format", "{{.Size}}", ref], `inspect ${ref}`).trim())

/** The ids of the images whose label `name` is `value`. */
export const imagesWithLabel = (name: string, value: string): ReadonlyArray<string> => [
  ...new Set(docker(["images", "--no-trunc", "-q", "--filter", `label=${name}=${value}`], "list images").split("\n").filter((id) => id !== ""))
]

/** Gives the image `source` the name `tag`. */
export const tagImage = (source: string, tag: string): void => {
  docker(["tag", source, tag], `tag ${tag}`)
}

/** Removes an image that no tag names any more, unless a container holds it (then it quietly stays). */
export const removeImageIfUntagged = (id: string): void => {
  const tags = spawnSync("docker", ["image", "inspect", "--format", "{{len .RepoTags}}", id], { encoding: "utf8" })
  if (tags.status === 0 && tags.stdout.trim() === "0") spawnSync("docker", ["rmi", id], { stdio: "ignore" })
}

const pipeClosed = (error: unknown): boolean =>
  ["EPIPE", "ECONNRESET", "ERR_STREAM_DESTROYED", "ERR_STREAM_WRITE_AFTER_END"].includes((error as NodeJS.ErrnoException | undefined)?.code ?? "")

/**
 * `docker import` of the tar stream `writeTar` writes (and ends) on its stdin, with these Dockerfile
 * instructions (`--change`), untagged: the new image's id.
 */
export const importImage = async (
  writeTar: (stdin: Writable) => Promise<void>,
  changes: ReadonlyArray<string>,
  signal?: AbortSignal
): Promise<string> => {
  const child = spawn("docker", ["import", ...changes.flatMap((change) => ["--change", change]), "-"], {
    stdio: ["pipe", "pipe", "pipe"],
    ...(signal === undefined ? {} : { signal })
  })
  let stdout = ""
  let stderr = ""
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
  const exited = new Promise<number>((resolve, reject) => {
    child.on("error", reject)
    child.on("close", (code) => resolve(code ?? 1))
  })
  // A closed pipe shows in docker's exit code and words; the writer sees it too.
  child.stdin.on("error", () => undefined)
  const written = writeTar(child.stdin).then(() => undefined, (error: unknown) => {
    child.kill("SIGTERM")
    return error
  })
  let code: number
  try {
    code = await exited
  } catch (error) {
    throw (error as NodeJS.ErrnoException).code === "ENOENT" ? notInstalled() : error
  }
  const writeError = await written
  if (writeError !== undefined && !pipeClosed(writeError)) throw writeError
  if (code !== 0) throw engineError(stderr, "import the image")
  if (writeError !== undefined) throw writeError
  const id = stdout.trim().split("\n").pop() ?? ""
  if (id === "") throw new ImageError({ message: "docker import printed no image id" })
  return id
}

/**
 * `docker build -t TAG DIR` (`--no-cache` when asked), its progress on this process's stderr;
 * fails with the engine's last words.
 */
export const buildImage = (dir: string, tag: string, options: { readonly noCache: boolean; readonly signal?: AbortSignal }): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn("docker", ["build", ...(options.noCache ? ["--no-cache"] : []), "-t", tag, dir], {
      stdio: ["ignore", 2, "pipe"],
      ...(options.signal === undefined ? {} : { signal: options.signal })
    })
    let tail = ""
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      process.stderr.write(chunk)
      tail = (tail + chunk).slice(-4096)
    })
    child.on("error", (error: NodeJS.ErrnoException) => reject(error.code === "ENOENT" ? notInstalled() : error))
    child.on("close", (code) => (code === 0 ? resolve() : reject(engineError(tail, `build ${tag}`))))
  })
