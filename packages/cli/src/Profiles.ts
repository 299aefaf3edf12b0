/**
 * Connection profiles: `agent-runs login` saves a server URL, a token and optionally a team under a
 * name in `$XDG_CONFIG_HOME/agent-runs/profiles.json` (default `~/.config/agent-runs/profiles.json`,
 * mode 0600), and the connection options (`--server`, `--token`, `--team`) fall back to the profile
 * `$AGENT_RUNS_PROFILE` (default "default") after the flags and the environment variables.
 *
 * The file is read synchronously, once, when the options are parsed: it is small, and a command
 * without a profile pays one failed `stat`.
 *
 * A profile may say when its token expires (`expires_at`, RFC 3339): the commands then warn when
 * the profile's token is the one in use and expires within 7 days (Connection.ts, TokenExpiry.ts).
 * A profile "in use" is the current one whose token the command uses: a `--token` flag or
 * `$AGENT_RUNS_TOKEN` holding another token makes the profile's expiry none of its business.
 */
import { Config, ConfigError, Data, Effect, Either, Redacted } from "effect"
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import { dirname, join } from "node:path"

/** One saved connection. */
export interface Profile {
  readonly server: string
  readonly token: string
  readonly team?: string | undefined
  /** When the token expires (RFC 3339), as the server said when the profile was saved. */
  readonly expires_at?: string | undefined
}

/** The file's content: profiles by name. */
export interface ProfilesFile {
  readonly profiles: Readonly<Record<string, Profile>>
}

/** The profile used when `AGENT_RUNS_PROFILE` names none. */
export const DEFAULT_PROFILE = "default"

/** Where the profiles are: `$XDG_CONFIG_HOME/agent-runs/profiles.json`, else `~/.config/agent-runs/profiles.json`. */
export const path = (env: NodeJS.ProcessEnv = process.env): string => {
  const base = env["XDG_CONFIG_HOME"] !== undefined && env["XDG_CONFIG_HOME"] !== ""
    ? env["XDG_CONFIG_HOME"]
    : join(homedir(), ".config")
  return join(base, "agent-runs", "profiles.json")
}

/** The profile file could not be read or written; the message says which file and why. */
export class ProfileFileError extends Data.TaggedError("ProfileFileError")<{ readonly message: string }> {}

const isProfile = (value: unknown): value is Profile => {
  const p = value as Partial<Record<keyof Profile, unknown>> | null
  return typeof p === "object" && p !== null && typeof p.server === "string" && typeof p.token === "string" &&
    (p.team === undefined || typeof p.team === "string") && (p.expires_at === undefined || typeof p.expires_at === "string")
}

/** The profiles of the file (none when it does not exist); throws a `ProfileFileError` when it cannot be used. */
export const readSync = (file: string = path()): ProfilesFile => {
  let text: string
  try {
    text = readFileSync(file, "utf8")
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { profiles: {} }
    throw new ProfileFileError({ message: `cannot read ${file}: ${(error as Error).message}` })
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new ProfileFileError({ message: `${file} is not JSON` })
  }
  const profiles = (parsed as { profiles?: unknown } | null)?.profiles
  if (typeof profiles !== "object" || profiles === null || Array.isArray(profiles)) {
    throw new ProfileFileError({ message: `${file} has no "profiles" object` })
  }
  const valid: Record<string, Profile> = {}
  for (const [name, profile] of Object.entries(profiles)) {
    if (!isProfile(profile)) {
      throw new ProfileFileError({
        message: `${file}: profile "${name}" needs "server" and "token" strings ("team" and "expires_at" are strings too)`
      })
    }
    valid[name] = profile
  }
  return { profiles: valid }
}

/** Saves `profile` under `name` (replacing one of the same name), keeping the others; the file is mode 0600. */
export const save = (name: string, profile: Profile, file: string = path()): Effect.Effect<void, ProfileFileError> =>
  Effect.try({
    try: () => {
      const current = readSync(file)
      const next: ProfilesFile = { profiles: { ...current.profiles, [name]: profile } }
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
      const temporary = `${file}.${process.pid}.tmp`
      writeFileSync(temporary, JSON.stringify(next, null, 2) + "\n", { mode: 0o600 })
      chmodSync(temporary, 0o600)
      renameSync(temporary, file)
    },
    catch: (error) =>
      error instanceof ProfileFileError ? error : new ProfileFileError({ message: `cannot write ${file}: ${(error as Error).message}` })
  })

/** The name of the profile in use: `$AGENT_RUNS_PROFILE`, else "default". */
export const currentName = (env: NodeJS.ProcessEnv = process.env): string => {
  const name = env["AGENT_RUNS_PROFILE"]
  return name === undefined || name === "" ? DEFAULT_PROFILE : name
}

/** The current profile and its name when the command uses its token; none otherwise, or when the file cannot be used (the options said so). */
export const inUse = (token: string, file: string = path()): { readonly name: string; readonly profile: Profile } | undefined => {
  const name = currentName()
  let profile: Profile | undefined
  try {
    profile = readSync(file).profiles[name]
  } catch {
    return undefined
  }
  return profile !== undefined && profile.token === token ? { name, profile } : undefined
}

let unusableReported = false

/**
 * A field of the current profile as the fallback of `config`: `config` when it has a value, else the
 * profile's field, else `config`'s own missing-value error (so the option reports itself missing).
 */
const withProfileFallback = <A>(
  config: Config.Config<A>,
  field: keyof Profile,
  wrap: (value: string) => A
): Config.Config<A> =>
  Config.suspend(() => {
    let file: ProfilesFile
    try {
      file = readSync()
    } catch (error) {
      // Said once (by the first option that needs the profile); the others are then just missing.
      if (unusableReported) return config
      unusableReported = true
      const message = (error as Error).message
      return Config.string("AGENT_RUNS_PROFILE").pipe(
        Config.withDefault(""),
        Config.mapOrFail(() => Either.left(ConfigError.InvalidData([], message)))
      )
    }
    const value = file.profiles[currentName()]?.[field]
    return value === undefined ? config : Config.withDefault(config, wrap(value))
  })

/** `$AGENT_RUNS_URL`, else the profile's server. */
export const serverConfig: Config.Config<string> = withProfileFallback(Config.string("AGENT_RUNS_URL"), "server", (s) => s)

/** `$AGENT_RUNS_TOKEN`, else the profile's token. */
export const tokenConfig: Config.Config<Redacted.Redacted<string>> = withProfileFallback(
  Config.redacted("AGENT_RUNS_TOKEN"),
  "token",
  (token) => Redacted.make(token)
)

/** `$AGENT_RUNS_TEAM`, else the profile's team. */
export const teamConfig: Config.Config<string> = withProfileFallback(Config.string("AGENT_RUNS_TEAM"), "team", (s) => s)
