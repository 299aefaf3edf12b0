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

/** The exit code of `launchLastingCommand` when the image lacks what a lasting agent needs (`mkfifo`, `tail`, `mv`). */
export const LASTING_UNSUPPORTED = 3

/** `[ -f FILE ] && [ ! -L FILE ]`: a plain file, not a link (the agent may have replaced one of its files). */
const plainFile = (file: string) => `[ -f ${file} ] && [ ! -L ${file} ]`

/**
 * Starts `agent` (the argv of `agentCommand`) as the lasting agent `tag`, in the background, and
 * prints the pid of its runner (the shell that waits for it and writes its status), as
 * `runner=PID` on a line of its own (a shell's warning on stderr may come too), before it ends. The FIFO of its stdin is opened (for reading and writing) before the runner is forked and
 * held by it, so that a message written at once is not lost, nor does the agent see it closed
 * while no writer is there; its stdout is appended to its file, stderr dropped (as an exec's is);
 * its own session when `setsid` is there (its process group is then its own); its exit status
 * written whole once it ends. Without `mkfifo`, `tail` or `mv` it starts nothing and exits with
 * `LASTING_UNSUPPORTED`, its variables file removed.
 */
export const launchLastingCommand = (tag: string, agent: ReadonlyArray<string>): ReadonlyArray<string> => {
  const [input, output, status] = [lastingFile(tag, "in"), lastingFile(tag, "out"), lastingFile(tag, "status")]
  return [
    "/bin/sh",
    "-c",
    `for c in mkfifo tail mv; do command -v $c >/dev/null 2>&1 || { rm -f ${envFile(tag)}; exit ${LASTING_UNSUPPORTED}; }; done; ` +
    `umask 077 && mkdir -p ${CONTROL_DIR} && rm -f ${input} ${status} && mkfifo ${input} && : > ${output} && exec 3<>${input} || exit 1; ` +
    `if command -v setsid >/dev/null 2>&1; then set -- setsid "$@"; fi; ` +
    `( "$@" 0<&3 3<&- 1>>${output} 2>/dev/null; echo $? > ${status}.part && mv ${status}.part ${status} ) </dev/null >/dev/null 2>&1 & ` +
    `echo "runner=$!"`,
    "agent-runs-launch",
    ...agent
  ]
}

/** Appends its stdin to the lasting agent `tag`'s stdin (never blocking on a FIFO nobody reads: it is opened for both). */
export const sendLastingCommand = (tag: string): ReadonlyArray<string> => ["/bin/sh", "-c", `cat 1<>${lastingFile(tag, "in")}`]

/**
 * What the lasting agent `tag` wrote from byte `from` (0-based) on, as it comes, while its runner
 * (pid `runner`) has not ended; then at most about a second more of it (the rest is read with
 * `readLastingCommand`). Fails when its file is not a plain file.
 */
export const followLastingCommand = (tag: string, runner: number, from: number): ReadonlyArray<string> => {
  const output = lastingFile(tag, "out")
  return [
    "/bin/sh",
    "-c",
    `${plainFile(output)} || exit 1; tail -c +${from + 1} -f ${output} & t=$!; ` +
    `while kill -0 ${runner} 2>/dev/null; do sleep 1; done; kill $t 2>/dev/null; wait $t; true`
  ]
}

/** What the lasting agent `tag` wrote from byte `from` (0-based) to its file's end; fails when its file is not a plain file. */
export const readLastingCommand = (tag: string, from: number): ReadonlyArray<string> => {
  const output = lastingFile(tag, "out")
  return ["/bin/sh", "-c", `${plainFile(output)} || exit 1; exec tail -c +${from + 1} ${output}`]
}

/** The status `waitLastingCommand` prints for an agent that ended without one (killed with its runner). */
export const LASTING_GONE = "gone"

/**
 * Waits until the lasting agent `tag`'s runner (pid `runner`, which the agent cannot make
 * anyone believe to be another) has ended, then prints `status=` and the first bytes of its
 * status file when that is a plain file, `LASTING_GONE` when there is none (the runner was
 * killed: SIGKILL to every process of the sandbox's user), else `not-a-file`.
 */
export const waitLastingCommand = (tag: string, runner: number): ReadonlyArray<string> => {
  const status = lastingFile(tag, "status")
  return [
    "/bin/sh",
    "-c",
    `while kill -0 ${runner} 2>/dev/null; do sleep 0.2 2>/dev/null || sleep 1; done; ` +
    `if [ ! -e ${status} ]; then echo status=${LASTING_GONE}; elif ${plainFile(status)}; then echo "status=$(head -c 8 ${status})"; ` +
    `else echo status=not-a-file; fi`
  ]
}

/** The value of the line `NAME=VALUE` in a command's output, if there is one. */
export const printed = (output: string, name: string): string | undefined =>
  output.split("\n").find((line) => line.startsWith(`${name}=`))?.slice(name.length + 1).trim()

/** Whether `tag` is an agent's tag as `newTag` (PodAgent.ts) makes them (one read back from a Job goes into commands). */
export const isTag = (tag: string): boolean => /^agent-[0-9a-z]+-[0-9a-z]+$/.test(tag)
