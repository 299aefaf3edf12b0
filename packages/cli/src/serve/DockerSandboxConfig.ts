/**
 * The confinement and limits of Docker sandboxes (docs/security.md), from the environment:
 * `AGENT_RUNS_DOCKER_USER` (`65534:65534`: the uid:gid every process of a sandbox runs as, neither
 * 0), `AGENT_RUNS_DOCKER_MEMORY_BYTES` (4 GiB), `AGENT_RUNS_DOCKER_CPUS` (2, fractions allowed),
 * `AGENT_RUNS_DOCKER_PIDS` (4096 processes) and `AGENT_RUNS_DOCKER_TMP_BYTES` (1 GiB: the size of
 * the tmpfs `/tmp`, which is memory).
 */
import { DockerExecutor } from "@agent-runs/executor-docker"
import { Config } from "effect"

export interface DockerSandboxConfig {
  readonly user: { readonly uid: number; readonly gid: number }
  readonly memoryBytes: number
  readonly nanoCpus: number
  readonly pidsLimit: number
  readonly tmpBytes: number
}

/** `uid:gid` as numbers, neither root's; undefined otherwise. */
export const parseUser = (text: string): DockerSandboxConfig["user"] | undefined => {
  const match = /^(\d{1,10}):(\d{1,10})$/.exec(text.trim())
  if (match === null) return undefined
  const uid = Number(match[1])
  const gid = Number(match[2])
  return DockerExecutor.isUnprivilegedId(uid) && DockerExecutor.isUnprivilegedId(gid) ? { uid, gid } : undefined
}

const atLeast = (name: string, minimum: number, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: `must be an integer of at least ${minimum}`, validation: (n) => n >= minimum }),
    Config.withDefault(fallback)
  )

export const DockerSandboxConfig: Config.Config<DockerSandboxConfig> = Config.all({
  user: Config.string("AGENT_RUNS_DOCKER_USER").pipe(
    Config.validate({ message: "must be uid:gid, two numbers other than 0 (root)", validation: (text) => parseUser(text) !== undefined }),
    Config.map((text) => parseUser(text)!),
    Config.withDefault<DockerSandboxConfig["user"]>(DockerExecutor.defaultUser)
  ),
  memoryBytes: atLeast("AGENT_RUNS_DOCKER_MEMORY_BYTES", 64 * 1024 ** 2, 4 * 1024 ** 3),
  nanoCpus: Config.number("AGENT_RUNS_DOCKER_CPUS").pipe(
    Config.validate({ message: "must be a number of CPUs of at least 0.01", validation: (n) => n >= 0.01 }),
    Config.withDefault(2),
    Config.map((cpus) => Math.round(cpus * 1e9))
  ),
  pidsLimit: atLeast("AGENT_RUNS_DOCKER_PIDS", 16, 4096),
  tmpBytes: atLeast("AGENT_RUNS_DOCKER_TMP_BYTES", 1024 ** 2, 1024 ** 3)
})
