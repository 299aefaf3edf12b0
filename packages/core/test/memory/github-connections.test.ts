/**
 * The GitHub connection service over in-memory storage and a GitHost double: who may see and
 * change it, the checks before it is stored (secrets exist, the host accepts the credential),
 * what the rest of the service gets from `access`, and the secret it names kept from deletion.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { decodeRequest } from "../../src/domain/Common.js"
import { ConnectGitHubRequest, GitHubConnectionResponse } from "../../src/domain/GitHub.js"
import { IdsLive } from "../../src/domain/Ids.js"
import { PutSecretRequest, type SecretName } from "../../src/domain/Secret.js"
import { GitHost, GitHostError, type GitHostService, GitHubHosts, noGitHost } from "../../src/ports/GitHost.js"
import { AuditLog } from "../../src/ports/AuditLog.js"
import { GitHubConnections } from "../../src/services/GitHubConnections.js"
import { Secrets } from "../../src/services/Secrets.js"
import { memoryStorage } from "../../testing/index.js"
import { failureOf, seedWorld } from "../../testing/World.js"

/** A host that accepts the token `good` and the App whose key is `good-key` (minting `minted`). */
const calls: Array<string> = []
const host: GitHostService = {
  ...noGitHost,
  accessToken: (apiUrl, credential) => {
    calls.push(`token ${apiUrl}`)
    if (apiUrl.includes("unreachable")) return Effect.fail(new GitHostError({ message: "GitHub could not be reached: ECONNREFUSED", status: undefined }))
    if (credential.type === "token") return Effect.succeed(credential.token)
    return Redacted.value(credential.private_key) === "good-key"
      ? Effect.succeed(Redacted.make("minted"))
      : Effect.fail(new GitHostError({ message: "GitHub answered 401: A JSON web token could not be decoded", status: 401 }))
  },
  repositories: (access) => {
    calls.push(`repositories ${Redacted.value(access.token)}`)
    return ["good", "minted"].includes(Redacted.value(access.token))
      ? Effect.succeed({ repositories: [{ owner: "acme", repo: "app", default_branch: "main", can_push: true }], truncated: false })
      : Effect.fail(new GitHostError({ message: "GitHub answered 401: Bad credentials", status: 401 }))
  }
}

const services = Layer.mergeAll(GitHubConnections.Default, Secrets.Default).pipe(
  Layer.provideMerge(Layer.mergeAll(memoryStorage, IdsLive)),
  Layer.provideMerge(Layer.succeed(GitHost, host)),
  Layer.provideMerge(Layer.succeed(GitHubHosts, ["github.com", "ghe.example.com", "unreachable.example.com"]))
)
const decodeConnect = decodeRequest(ConnectGitHubRequest)
const putSecret = (viewer: Parameters<Secrets["put"]>[0], name: string, value: string) =>
  Effect.flatMap(Secrets, (s) => Effect.flatMap(decodeRequest(PutSecretRequest)({ value }), (r) => s.put(viewer, name as SecretName, r)))

describe("GitHub connections (memory)", () => {
  layer(services, { excludeTestServices: true })("GitHubConnections", (it) => {
    it.effect("an admin connects with a token secret; every member sees how, never the value; access hands out the token", () =>
      Effect.gen(function* () {
        const world = yield* seedWorld()
        const github = yield* GitHubConnections
        expect(yield* github.get(world.viewer)).toEqual(new GitHubConnectionResponse({ connected: false, connection: null }))
        expect(yield* github.access(world.team)).toEqual(Option.none())
        yield* putSecret(world.admin, "GH_TOKEN", "good")
        const connected = yield* github.connect(world.admin, yield* decodeConnect({ auth: { type: "token", token_secret: "GH_TOKEN" } }))
        expect(connected.connection).toMatchObject({ base_url: "https://github.com", auth: { type: "token", token_secret: "GH_TOKEN" }, connected_by: world.admin.principal_uid })
        const seen = yield* github.get(world.viewer)
        expect(seen.connected).toBe(true)
        expect(JSON.stringify(Schema.encodeSync(GitHubConnectionResponse)(seen))).not.toContain("good")
        const access = Option.getOrThrow(yield* github.access(world.team))
        expect([access.apiUrl, Redacted.value(access.token)]).toEqual(["https://api.github.com", "good"])
        expect((yield* github.repositories(world.viewer)).repositories).toEqual([{ owner: "acme", repo: "app", default_branch: "main", can_push: true }])
        const audit = yield* Effect.flatMap(AuditLog, (log) => log.list({ team_uid: world.team, action: "github.connect", limit: 10, order: "newest_first" }))
        expect(audit.map((e) => [e.action, e.outcome])).toEqual([["github.connect", "succeeded"]])
      }))

    it.effect("members, viewers and robots may not connect or disconnect (403); nothing is stored", () =>
      Effect.gen(function* () {
        const world = yield* seedWorld()
        const github = yield* GitHubConnections
        yield* putSecret(world.admin, "GH_TOKEN", "good")
        const request = yield* decodeConnect({ auth: { type: "token", token_secret: "GH_TOKEN" } })
        for (const who of [world.alice, world.viewer, world.robot]) {
          expect((yield* failureOf(github.connect(who, request)))._tag).toBe("NotAuthorized")
          expect((yield* failureOf(github.disconnect(who)))._tag).toBe("NotAuthorized")
        }
        expect((yield* github.get(world.admin)).connected).toBe(false)
      }))

    it.effect("a missing secret, a refused credential and an unreachable host are 400s naming the field; nothing is stored", () =>
      Effect.gen(function* () {
        const world = yield* seedWorld()
        const github = yield* GitHubConnections
        const missing = yield* failureOf(github.connect(world.admin, yield* decodeConnect({ auth: { type: "token", token_secret: "NOPE" } })))
        expect([missing._tag, missing.message]).toEqual(["InvalidRequest", "auth.token_secret: the team has no secret named NOPE"])
        yield* putSecret(world.admin, "BAD_TOKEN", "bad")
        const refused = yield* failureOf(github.connect(world.admin, yield* decodeConnect({ auth: { type: "token", token_secret: "BAD_TOKEN" } })))
        expect(refused.message).toBe("auth: the host refused the credential: GitHub answered 401: Bad credentials")
        yield* putSecret(world.admin, "BAD_KEY", "bad-key")
        const badApp = yield* failureOf(github.connect(world.admin, yield* decodeConnect({
          auth: { type: "app", app_id: 1, installation_id: 2, private_key_secret: "BAD_KEY" }
        })))
        expect(badApp.message).toContain("auth: the host refused the credential: GitHub answered 401")
        const away = yield* failureOf(github.connect(world.admin, yield* decodeConnect({
          base_url: "https://unreachable.example.com",
          auth: { type: "token", token_secret: "BAD_TOKEN" }
        })))
        expect(away.message).toBe("base_url: GitHub could not be reached: ECONNREFUSED")
        // A host the operator did not name is never called.
        const before = calls.length
        const internal = yield* failureOf(github.connect(world.admin, yield* decodeConnect({
          base_url: "https://10.0.0.5", auth: { type: "token", token_secret: "BAD_TOKEN" }
        })))
        expect(internal.message).toBe("base_url: 10.0.0.5 is not a GitHub host this server connects to (its operator names them: AGENT_RUNS_GITHUB_HOSTS)")
        expect(calls.length).toBe(before)
        expect((yield* github.get(world.admin)).connected).toBe(false)
        expect((yield* failureOf(github.repositories(world.admin)))._tag).toBe("ResourceNotFound")
      }))

    it.effect("an App on an Enterprise Server: installation tokens from access; replacing keeps connected_at; disconnect, then 404", () =>
      Effect.gen(function* () {
        const world = yield* seedWorld()
        const github = yield* GitHubConnections
        yield* putSecret(world.admin, "GH_TOKEN", "good")
        yield* putSecret(world.admin, "GH_APP_KEY", "good-key")
        const first = yield* github.connect(world.admin, yield* decodeConnect({ auth: { type: "token", token_secret: "GH_TOKEN" } }))
        yield* Effect.sleep("5 millis")
        const second = yield* github.connect(world.admin, yield* decodeConnect({
          base_url: "https://ghe.example.com/",
          auth: { type: "app", app_id: 7, installation_id: 8, private_key_secret: "GH_APP_KEY" }
        }))
        expect(second.connection!.connected_at).toEqual(first.connection!.connected_at)
        expect(second.connection!.base_url).toBe("https://ghe.example.com")
        const access = Option.getOrThrow(yield* github.access(world.team))
        expect([access.apiUrl, Redacted.value(access.token)]).toEqual(["https://ghe.example.com/api/v3", "minted"])
        // The key's secret is the connection's: it cannot be deleted while connected.
        const kept = yield* failureOf(Effect.flatMap(Secrets, (s) => s.remove(world.admin, "GH_APP_KEY" as SecretName)))
        expect([kept._tag, kept.message]).toEqual(["Conflict", "secret GH_APP_KEY holds the credential of the team's GitHub connection; change or disconnect it first"])
        yield* Effect.flatMap(Secrets, (s) => s.remove(world.admin, "GH_TOKEN" as SecretName))
        yield* github.disconnect(world.admin)
        expect((yield* github.get(world.alice)).connected).toBe(false)
        expect((yield* failureOf(github.disconnect(world.admin)))._tag).toBe("ResourceNotFound")
        yield* Effect.flatMap(Secrets, (s) => s.remove(world.admin, "GH_APP_KEY" as SecretName))
      }))
  })
})
