/**
 * The team secrets application service (`/agent/secrets`; docs/reference/access.md): put (create or replace),
 * list (names and times, never values) and delete a team's named secrets, over SecretStore
 * (which seals values at rest). HTTP status codes belong to packages/http.
 *
 * Decisions:
 * - Admins only, for all three operations, listing included (403 for members and viewers):
 *   secrets are part of the factory, and even their names say which providers the team uses.
 *   Secrets are keyed by the caller's team, so another team's secrets are unreachable.
 * - Put answers the secret's name and times (`created_at` kept on replace, `updated_at` now).
 *   Replacing a value does not change webhooks already using it: a webhook that names a secret
 *   reads its value when created and when re-enabled (see Webhooks.ts).
 * - Delete of an absent secret is a 404; delete of a secret that a live webhook of the team
 *   names is a 409 listing those webhooks (delete them, or they would keep authenticating with
 *   the value they read, which is not what deleting a secret promises); so is the delete of a
 *   secret an outbound webhook signs with (`secret_name`: rotate it to another first), and of the
 *   secret holding the team's GitHub credential (docs/github.md).
 * - A storage failure is a 503 `resource_unavailable` (retryable).
 */
import { Clock, DateTime, Effect, Option } from "effect"
import { canManageFactory } from "../domain/Access.js"
import type { Viewer } from "../domain/Access.js"
import { Conflict, NotAuthorized, ResourceNotFound } from "../domain/Errors.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { SecretStore } from "../ports/SecretStore.js"
import { OutboundWebhookStore } from "../ports/OutboundWebhookStore.js"
import { WebhookStore } from "../ports/WebhookStore.js"
import { ListSecretsResponse } from "../domain/Secret.js"
import type { PutSecretRequest, SecretMetadata, SecretName } from "../domain/Secret.js"
import { storageUnavailable } from "../internal/Services.js"
import { Audit } from "./Audit.js"

/** The secrets service: a team's named secrets, managed by its admins. */
/** A secret as an audited resource: by name (never its value). */
const resource = (name: SecretName) => ({ type: "secret", id: name })

export class Secrets extends Effect.Service<Secrets>()("@agent-runs/core/Secrets", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function* () {
    const audit = yield* Audit
    const store = yield* SecretStore
    const webhooks = yield* WebhookStore
    const outbound = yield* OutboundWebhookStore
    const identities = yield* IdentityStore

    const requireAdmin = (viewer: Viewer) =>
      canManageFactory(viewer)
        ? Effect.void
        : Effect.fail(new NotAuthorized({ message: "only team admins can manage secrets" }))

    /** Creates or replaces a secret; answers its name and times, never its value. */
    const put = Effect.fn("Secrets.put")(
      function* (viewer: Viewer, name: SecretName, request: PutSecretRequest) {
        yield* requireAdmin(viewer)
        const now = yield* Clock.currentTimeMillis
        yield* audit.recording(viewer, store.put(viewer.team_uid, name, request.value, now), () => ({
          action: "secret.put",
          resource: resource(name)
        }))
        const stored = (yield* store.list(viewer.team_uid)).find((s) => s.name === name)
        // Deleted by someone else right after the write: answer what was written.
        const written: SecretMetadata = { name, created_at: DateTime.unsafeMake(now), updated_at: DateTime.unsafeMake(now) }
        return stored ?? written
      },
      storageUnavailable,
      audit.refusals("secret.put", (name: SecretName) => resource(name))
    )

    /** The team's secrets by name: names and times only. */
    const list = Effect.fn("Secrets.list")(
      function* (viewer: Viewer) {
        yield* requireAdmin(viewer)
        return new ListSecretsResponse({ secrets: yield* store.list(viewer.team_uid) })
      },
      storageUnavailable
    )

    /** Deletes a secret (404 when absent, 409 while a webhook uses it). */
    const remove = Effect.fn("Secrets.remove")(
      function* (viewer: Viewer, name: SecretName) {
        yield* requireAdmin(viewer)
        if (Option.isNone(yield* store.get(viewer.team_uid, name))) return yield* ResourceNotFound.of("secret", name)
        const users = (yield* webhooks.list(viewer.team_uid)).filter((w) => w.item.secret_name === name)
        if (users.length > 0) {
          return yield* new Conflict({
            message: `secret ${name} is used by webhook${users.length === 1 ? "" : "s"} ` +
              `${users.map((w) => `${JSON.stringify(w.item.name)} (${w.item.uid})`).join(", ")}; delete ${
                users.length === 1 ? "it" : "them"
              } first`
          })
        }
        const signing = (yield* outbound.list(viewer.team_uid)).filter((w) => w.item.secret_name === name)
        if (signing.length > 0) {
          return yield* new Conflict({
            message: `secret ${name} is the signing secret of outbound webhook${signing.length === 1 ? "" : "s"} ` +
              `${signing.map((w) => w.item.uid).join(", ")}; rotate ${signing.length === 1 ? "it" : "them"} to another secret first`
          })
        }
        const github = yield* identities.getGitHubConnection(viewer.team_uid)
        if (Option.exists(github, (c) => (c.auth.type === "token" ? c.auth.token_secret : c.auth.private_key_secret) === name)) {
          return yield* new Conflict({ message: `secret ${name} holds the credential of the team's GitHub connection; change or disconnect it first` })
        }
        // Gone meanwhile: a 404, and the transaction (with its entry) rolled back.
        const removal = Effect.filterOrFail(store.remove(viewer.team_uid, name), (removed) => removed, () => ResourceNotFound.of("secret", name))
        yield* audit.recording(viewer, removal, () => ({ action: "secret.delete", resource: resource(name) }))
      },
      storageUnavailable,
      audit.refusals("secret.delete", (name: SecretName) => resource(name))
    )

    return { put, list, remove } as const
  })
}) {}
