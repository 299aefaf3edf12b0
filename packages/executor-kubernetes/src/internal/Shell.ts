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

/**
 * The files of a lasting agent `tag` (one that outlives the server's connections to it): its stdin
 * a FIFO, its stdout a file, and its exit status once it has ended. They are the agent's own (the
 * pod's one user runs everything in it): what it does to them changes only what it is told and
 * what it says, as its stdin and stdout would.
 */
const lastingFile = (tag: string, suffix: "in" | "out" | "status") => `${CONTROL_DIR}/${tag}.${suffix}`

/** The exit code of `launchLastingCommand` when the image lacks what a lasting agent needs (`mkfifo`, `tail`). */
export const LASTING_UNSUPPORTED = 3

/**
 * Starts `agent` (the argv of `agentCommand`) as the lasting agent `tag`, in the background, and
 * ends at once: its stdin the FIFO (opened for reading and writing, so that it never sees it
 * closed while no writer is there), its stdout appended to its file, stderr dropped (as an
 * exec's is), its own session when `setsid` is there (its process group is then its own), and its
 * exit status written whole once it ends. Without `mkfifo` or `tail` it starts nothing and exits
 * with `LASTING_UNSUPPORTED`, its variables file removed.
 */
export const launchLastingCommand = (tag: string, agent: ReadonlyArray<string>): ReadonlyArray<string> => {
  const [input, output, status] = [lastingFile(tag, "in"), lastingFile(tag, "out"), lastingFile(tag, "status")]
  return [
    "/bin/sh",
    "-c",
    `command -v mkfifo >/dev/null 2>&1 && command -v tail >/dev/null 2>&1 || { rm -f ${envFile(tag)}; exit ${LASTING_UNSUPPORTED}; }; ` +
    `umask 077 && mkdir -p ${CONTROL_DIR} && rm -f ${input} ${status} && mkfifo ${input} && : > ${output} || exit 1; ` +
    `if command -v setsid >/dev/null 2>&1; then set -- setsid "$@"; fi; ` +
    `( "$@" 0<>${input} 1>>${output} 2>/dev/null; echo $? > ${status}.part && mv ${status}.part ${status} ) </dev/null >/dev/null 2>&1 &`,
    "agent-runs-launch",
    ...agent
  ]
}

/** Appends its stdin to the lasting agent `tag`'s stdin (never blocking on a FIFO nobody reads: it is opened for both). */
export const sendLastingCommand = (tag: string): ReadonlyArray<string> => ["/bin/sh", "-c", `cat 1<>${lastingFile(tag, "in")}`]

/**
 * What the lasting agent `tag` wrote from byte `from` (0-based) on, as it comes, until it has
 * ended (its status is there); then at most about a second more of it (the rest is read with
 * `readLastingCommand`).
 */
export const followLastingCommand = (tag: string, from: number): ReadonlyArray<string> => [
  "/bin/sh",
  "-c",
  `tail -c +${from + 1} -f ${lastingFile(tag, "out")} & t=$!; ` +
  `while [ ! -e ${lastingFile(tag, "status")} ]; do sleep 1; done; kill $t 2>/dev/null; wait $t; true`
]

/** What the lasting agent `tag` wrote from byte `from` (0-based) to its file's end. */
export const readLastingCommand = (tag: string, from: number): ReadonlyArray<string> =>
  ["tail", "-c", `+${from + 1}`, lastingFile(tag, "out")]

/** The word `waitLastingCommand` prints for an agent that ended without a status (killed with its waiting shell). */
export const LASTING_GONE = "gone"

/**
 * Waits until the lasting agent `tag` has ended: prints its exit status, or `LASTING_GONE` when
 * its process is no longer there and no status came (it was killed with the shell that waited
 * for it: SIGKILL to every process of the sandbox's user).
 */
export const waitLastingCommand = (tag: string): ReadonlyArray<string> => [
  "/bin/sh",
  "-c",
  `s=${lastingFile(tag, "status")}; p=; while [ ! -e $s ]; do ` +
  `[ -n "$p" ] || p=$(cat ${pidFile(tag)} 2>/dev/null); case "$p" in *[!0-9]*) p=;; esac; ` +
  `if [ -n "$p" ] && ! kill -0 "$p" 2>/dev/null; then sleep 1; [ -e $s ] || { echo ${LASTING_GONE}; exit 0; }; fi; ` +
  `sleep 0.2; done; cat $s`
]

/** Whether `tag` is an agent's tag as `newTag` (PodAgent.ts) makes them (one read back from a Job goes into commands). */
export const isTag = (tag: string): boolean => /^agent-[0-9a-z]+-[0-9a-z]+$/.test(tag)
