/**
 * `agent-runs github status|repos|connect|disconnect`: the team's connection to GitHub through the
 * HTTP API (`/agent/github`; docs/github.md).
 *
 * - `status`: connected or not, the host, the credential's kind and secrets (never a value).
 * - `repos`: the repositories the credential reaches, as a table.
 * - `connect`: `--token-secret NAME` (a personal access token held as that team secret), or
 *   `--app-id`, `--installation-id` and `--private-key-secret` (a GitHub App); `--base-url` for a
 *   GitHub Enterprise Server. The server checks the secrets and the credential before storing.
 * - `disconnect`.
 * - `--json` prints the API's answer as it is.
 */
import { Command, Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import { GitHub } from "@agent-runs/core"
import { Console, Effect, Option, ParseResult, Schema } from "effect"
import * as Failure from "../Failure.js"
import * as Format from "../Format.js"
import * as Connection from "./Connection.js"

const json = Options.boolean("json").pipe(Options.withDescription("print JSON (the API's answer) instead of text"))

/** The connection as `key: value` lines. */
export const describeConnection = (answer: GitHub.GitHubConnectionResponse): string => {
  const c = answer.connection
  if (c === null) return "not connected to GitHub"
  const auth = c.auth.type === "token"
    ? `personal access token (team secret ${c.auth.token_secret})`
    : `GitHub App ${c.auth.app_id}, installation ${c.auth.installation_id} (key: team secret ${c.auth.private_key_secret})`
  const lines: Array<[string, string]> = [
    ["host", c.base_url],
    ["credential", auth],
    ["connected", `${Format.date(c.connected_at)} by ${c.connected_by}`],
    ["changed", Format.date(c.updated_at)]
  ]
  const width = Math.max(...lines.map(([key]) => key.length)) + 1
  return lines.map(([key, value]) => `${`${key}:`.padEnd(width)} ${value}`).join("\n")
}

/** The repositories as a table. */
export const describeRepositories = (answer: GitHub.ReachableRepositoriesResponse): string =>
  answer.repositories.length === 0 ? "no repositories" : Format.table(
    ["REPOSITORY", "DEFAULT BRANCH", "PUSH"],
    answer.repositories.map((r) => [`${r.owner}/${r.repo}`, r.default_branch, r.can_push ? "yes" : "no"])
  ) + (answer.truncated ? `\n(the first ${answer.repositories.length})` : "")

const printConnection = (answer: GitHub.GitHubConnectionResponse, asJson: boolean) =>
  Console.log(asJson ? JSON.stringify(Schema.encodeSync(GitHub.GitHubConnectionResponse)(answer)) : describeConnection(answer))

const status = Command.make("status", { ...Connection.options, json }, (options) =>
  Effect.gen(function*() {
    const client = yield* AgentRunsClient.AgentRunsClient
    yield* printConnection(yield* client.github.getGitHubConnection({ headers: {} }), options.json)
  }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(Command.withDescription("Whether the team is connected to GitHub, and how."))

const repos = Command.make("repos", { ...Connection.options, json }, (options) =>
  Effect.gen(function*() {
    const client = yield* AgentRunsClient.AgentRunsClient
    const answer = yield* client.github.listGitHubRepositories({ headers: {} })
    yield* Console.log(options.json ? JSON.stringify(Schema.encodeSync(GitHub.ReachableRepositoriesResponse)(answer)) : describeRepositories(answer))
  }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(Command.withDescription("The repositories the team's credential reaches."))

const optionalText = (name: string, description: string) => Options.text(name).pipe(Options.optional, Options.withDescription(description))
const optionalId = (name: string, description: string) => Options.integer(name).pipe(Options.optional, Options.withDescription(description))

const connect = Command.make(
  "connect",
  {
    ...Connection.options,
    baseUrl: optionalText("base-url", "the host: https://github.com (the default) or a GitHub Enterprise Server's address"),
    tokenSecret: optionalText("token-secret", "the team secret holding a personal access token"),
    appId: optionalId("app-id", "a GitHub App's id (with --installation-id and --private-key-secret)"),
    installationId: optionalId("installation-id", "the App's installation id"),
    privateKeySecret: optionalText("private-key-secret", "the team secret holding the App's private key (PEM)"),
    json
  },
  (options) =>
    Effect.gen(function*() {
      const auth = Option.isSome(options.tokenSecret)
        ? { type: "token", token_secret: options.tokenSecret.value }
        : { type: "app", app_id: Option.getOrUndefined(options.appId), installation_id: Option.getOrUndefined(options.installationId), private_key_secret: Option.getOrUndefined(options.privateKeySecret) }
      const payload = yield* Schema.decodeUnknown(GitHub.ConnectGitHubRequest)({ ...Option.match(options.baseUrl, { onNone: () => ({}), onSome: (base_url) => ({ base_url }) }), auth }).pipe(
        Effect.mapError((e) =>
          new Failure.UsageError({
            message: `give --token-secret NAME, or --app-id, --installation-id and --private-key-secret NAME (and --base-url https://… ` +
              `for an Enterprise Server): ${ParseResult.TreeFormatter.formatErrorSync(e).split("\n").at(-1)?.trim() ?? ""}`
          })
        )
      )
      const client = yield* AgentRunsClient.AgentRunsClient
      yield* printConnection(yield* client.github.connectGitHub({ headers: {}, payload }), options.json)
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("Connect the team to GitHub (team admins): a personal access token or a GitHub App, held as team secrets."))

const disconnect = Command.make("disconnect", { ...Connection.options }, (options) =>
  Effect.gen(function*() {
    const client = yield* AgentRunsClient.AgentRunsClient
    yield* client.github.disconnectGitHub({ headers: {} })
    yield* Console.log("disconnected from GitHub")
  }).pipe(Effect.provide(Connection.clientLayer(options)))).pipe(Command.withDescription("Disconnect the team from GitHub (team admins); the secrets stay."))

/** `agent-runs github …`. */
export const githubCommand = Command.make("github").pipe(
  Command.withDescription("The team's connection to GitHub: status, repositories, connect, disconnect."),
  Command.withSubcommands([status, repos, connect, disconnect])
)
