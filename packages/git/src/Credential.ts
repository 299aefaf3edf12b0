/**
 * A token for a Git host, in the form git sends it: an `Authorization: Basic` header of
 * `x-access-token:<token>` (what GitHub takes for personal access tokens and App installation
 * tokens alike), set through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`: the
 * command's own environment, readable by its user only, and never written to a repository's
 * configuration, a remote URL or an argument.
 */

/** The variables that make one git command send `token`; none without one. */
export const credentialEnv = (token: string | undefined): Record<string, string> =>
  token === undefined
    ? {}
    : {
      GIT_CONFIG_COUNT: "1",
      GIT_CONFIG_KEY_0: "http.extraHeader",
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`x-access-token:${token}`, "utf8").toString("base64")}`
    }
