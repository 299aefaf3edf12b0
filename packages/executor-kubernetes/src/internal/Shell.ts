/**
 * The shell commands the executor runs in a pod (pure; test/Shell.test.ts). Everything is sent to
 * the pod as argv of an exec (which the API server may log), except credentials: a process's own
 * variables travel on the stdin of an exec, into a file of mode 0600 that its wrapper reads and
 * removes before the agent starts.
 */
import { WORK_DIR } from "../Manifests.js"

/** The executor's own files in the work directory (pid files, variables on their way). */
export const CONTROL_DIR = `${WORK_DIR}/.agent-runs`

/** `$0` of the agent wrapper (how its processes are told apart in `ps`). */
export const AGENT_MARKER = "agent-runs-agent"

/** A word quoted for `/bin/sh`. */
export const shQuote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`

/** A name `/bin/sh` takes as a variable. */
export const isVariableName = (name: string): boolean => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)

/** The file of `export` lines that sets `env` when sourced. */
export const exportsOf = (env: Readonly<Record<string, string>>): string =>
  Object.entries(env).map(([name, value]) => `export ${name}=${shQuote(value)}\n`).join("")

const pidFile = (tag: string) => `${CONTROL_DIR}/${tag}.pid`
const envFile = (tag: string) => `${CONTROL_DIR}/${tag}.env`

/** Writes its stdin to the agent `tag`'s variables file, readable by its owner only. */
export const writeEnvCommand = (tag: string): ReadonlyArray<string> => [
  "/bin/sh",
  "-c",
  `umask 077 && mkdir -p ${CONTROL_DIR} && cat > ${envFile(tag)}`
]

/**
 * Runs `command` as the agent `tag`: its variables file read and removed, its pid recorded, then
 * the command in its place (the pid is the agent's own).
 */
export const agentCommand = (tag: string, command: ReadonlyArray<string>): ReadonlyArray<string> => [
  "/bin/sh",
  "-c",
  `if [ -f ${envFile(tag)} ]; then . ${envFile(tag)} && rm -f ${envFile(tag)} || exit 126; fi; ` +
  `mkdir -p ${CONTROL_DIR} && echo $$ > ${pidFile(tag)} && exec "$@"`,
  AGENT_MARKER,
  ...command
]

/**
 * Sends `signal` to the agent `tag`'s process group (its pid when it has none), once its pid file
 * is there (up to about 5 s); without one, to every process it may signal but the pod's keeper.
 * The agent may rewrite its pid file: SIGKILL does not trust it (`killCommand`).
 */
export const signalCommand = (tag: string, signal: "INT" | "TERM"): ReadonlyArray<string> => [
  "/bin/sh",
  "-c",
  `i=0; while [ ! -s ${pidFile(tag)} ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; ` +
  `p=$(cat ${pidFile(tag)} 2>/dev/null); ` +
  `case "$p" in ''|*[!0-9]*) kill -s ${signal} -1 2>/dev/null;; *) kill -s ${signal} -$p 2>/dev/null || kill -s ${signal} $p 2>/dev/null;; esac; true`
]

/**
 * SIGKILL to every process of the sandbox's user but the pod's keeper (pid 1) and the killing
 * shell: nothing the agent wrote (its pid file) can turn it aside, and one agent runs in a pod at
 * a time.
 */
export const killCommand: ReadonlyArray<string> = ["/bin/sh", "-c", "kill -s KILL -1 2>/dev/null; true"]

/** Unpacks a tar stream on stdin into the work directory. */
export const unpackCommand: ReadonlyArray<string> = ["tar", "-x", "-f", "-", "-C", WORK_DIR]
