/**
 * The conformance suite of every store except RunStore: identity (teams, principals, tokens),
 * secrets, schedules, environments, webhooks and their delivery log, automations. It runs
 * unchanged against each adapter, on one database shared by the whole block: every test (and
 * every property-test case) makes its own teams, principals and ids, so nothing depends on what
 * other tests stored. Stored values are compared in their wire encoding (the core Schemas), so
 * "every field survives exactly" means exactly what a client would see.
 */
import { describe, expect, layer } from "@effect/vitest"
import type { Layer } from "effect"
import { Arbitrary, DateTime, Effect, Either, Option, Redacted, Schema } from "effect"
import * as fc from "fast-check"
import type { Viewer } from "../src/domain/Access.js"
import { canSee } from "../src/domain/Access.js"
import { Automation } from "../src/domain/Automation.js"
import type { Scope } from "../src/domain/Common.js"
import { Environment } from "../src/domain/Environment.js"
import { GitHubConnection } from "../src/domain/GitHub.js"
import { Principal, Team, TokenRecord } from "../src/domain/Identity.js"
import type { Role } from "../src/domain/Identity.js"
import {
  AutomationId,
  DeliveryId,
  EnvironmentUid,
  formatUid22,
  PrincipalUid,
  RunId,
  ScheduleId,
  TeamUid,
  TokenId,
  WebhookUid
} from "../src/domain/Ids.js"
import { AutomationStore } from "../src/ports/AutomationStore.js"
import type { StoredAutomation } from "../src/ports/AutomationStore.js"
import { EnvironmentStore } from "../src/ports/EnvironmentStore.js"
import type { StoredEnvironment } from "../src/ports/EnvironmentStore.js"
import { IdentityStore } from "../src/ports/IdentityStore.js"
import { RunStore } from "../src/ports/RunStore.js"
import { ScheduleStore, ticksOf } from "../src/ports/ScheduleStore.js"
import type { StoredSchedule } from "../src/ports/ScheduleStore.js"
import { SecretStore } from "../src/ports/SecretStore.js"
import type { DeliveryPage, StoredWebhook } from "../src/ports/WebhookStore.js"
import { WebhookStore } from "../src/ports/WebhookStore.js"
import { ScheduledAgentItem, ScheduleHistory } from "../src/domain/Schedule.js"
import type { ScheduleStatus } from "../src/domain/ScheduleStateMachine.js"
import { SecretName } from "../src/domain/Secret.js"
import { Delivery, Webhook } from "../src/domain/Webhook.js"
import type { DeliveryOutcome } from "../src/domain/Webhook.js"
import type { WebhookStatus } from "../src/domain/WebhookStateMachine.js"
import type { Stores } from "./Stores.js"
import { RawStorage } from "./Stores.js"

// ---------------------------------------------------------------------------------------------
// Fresh ids, times, orderings and wire forms
// ---------------------------------------------------------------------------------------------

const randomUid = (): string => {
  for (;;) {
    const id = formatUid22(globalThis.crypto.getRandomValues(new Uint8Array(32)))
    if (id !== undefined) return id
  }
}
const newTeamUid = () => TeamUid.make(randomUid())
const newPrincipalUid = () => PrincipalUid.make(randomUid())
const newWebhookUid = () => WebhookUid.make(randomUid())
const newDeliveryId = () => DeliveryId.make(randomUid())

/** Random lowercase hex, e.g. for token hashes. */
const randomHex = (bytes: number) =>
  Array.from(globalThis.crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("")

/** A timestamp from epoch milliseconds. */
const at = (ms: number): DateTime.Utc => DateTime.unsafeMake(ms)

/** A fixed moment the examples count from (2026-01-01). */
const T0 = 1_767_225_600_000

/** Compares text by Unicode code point, the order both adapters sort names and ids in. */
const compareText = (a: string, b: string): number => {
  const x = Array.from(a, (c) => c.codePointAt(0)!)
  const y = Array.from(b, (c) => c.codePointAt(0)!)
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i]! - y[i]!
  }
  return x.length - y.length
}

/** What a client would see of a value: its Schema encoding, as JSON. */
const wire = <A, I>(schema: Schema.Schema<A, I>, value: A): unknown =>
  JSON.parse(JSON.stringify(Schema.encodeSync(schema)(value)))

const wireSchedule = (s: StoredSchedule) => ({ ...s, item: wire(ScheduledAgentItem, s.item) })
const wireEnvironment = (e: StoredEnvironment) => ({ ...e, item: wire(Environment, e.item) })
const wireAutomation = (a: StoredAutomation) => ({ ...a, item: wire(Automation, a.item) })
const wireWebhook = (w: StoredWebhook) => ({
  ...w,
  item: wire(Webhook, w.item),
  secret: w.secret === null ? null : Redacted.value(w.secret)
})

const viewer = (team: TeamUid, principal: PrincipalUid, role: Role): Viewer => ({
  team_uid: team,
  principal_uid: principal,
  role,
  instance_admin: false
})

const scopeOf = (team: TeamUid, creator: PrincipalUid, teamScope: boolean): Scope =>
  teamScope ? { type: "Team", uid: team } : { type: "User", uid: creator }

const ref = (uid: PrincipalUid) => ({ type: "user" as const, uid, display_name: "Someone" })

/** The failure of an effect that must fail. */
const failure = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.flip(self)

// ---------------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------------

const makeTeam = (name = `team ${randomUid()}`) =>
  new Team({
    uid: newTeamUid(),
    name,
    features: { metadata_filtering: true, scheduled_agents: true },
    max_concurrent_runs: 8,
    created_at: at(T0)
  })

const makePrincipal = (memberships: ReadonlyArray<{ team_uid: TeamUid; role: Role }>) =>
  new Principal({
    uid: newPrincipalUid(),
    type: "user",
    display_name: "A person",
    instance_admin: false,
    memberships,
    created_at: at(T0)
  })

const makeSchedule = (options: {
  readonly team: TeamUid
  readonly creator: PrincipalUid
  readonly name?: string
  readonly teamScope?: boolean
  readonly status?: ScheduleStatus
  readonly updatedAt?: number
}): StoredSchedule => {
  const status = options.status ?? "active"
  return {
    item: new ScheduledAgentItem({
      id: ScheduleId.make(randomUid()),
      name: options.name ?? "nightly",
      cron_schedule: "0 3 * * *",
      timezone: "UTC",
      enabled: status === "active",
      prompt: "tidy up",
      agent_config: {},
      environment: null,
      created_at: at(T0),
      updated_at: at(options.updatedAt ?? T0),
      created_by: ref(options.creator),
      updated_by: ref(options.creator),
      scope: scopeOf(options.team, options.creator, options.teamScope ?? true),
      history: { last_ran: null, next_run: null, recent_runs: [] },
      last_spawn_error: null
    }),
    team_uid: options.team,
    creator_uid: options.creator,
    editor_role: "admin",
    state: { status, lastTickAt: T0 }
  }
}

/** A stored environment fixture with a fresh uid (shared with the runs service suite). */
export const makeEnvironment = (options: {
  readonly team: TeamUid
  readonly creator: PrincipalUid
  readonly teamScope?: boolean
  readonly guests?: ReadonlyArray<PrincipalUid>
  readonly linkSharing?: boolean
  readonly updatedAt?: number
  readonly editorRole?: Role
}): StoredEnvironment => ({
  item: new Environment({
    uid: EnvironmentUid.make(randomUid()),
    config: {
      name: "env",
      description: null,
      docker_image: null,
      github_repos: [],
      setup_commands: [],
      failure_session_retention_minutes: 30
    },
    sharing: { guests: options.guests ?? [], link_sharing: options.linkSharing ?? false },
    setup_failed: false,
    last_task_created: null,
    scope: scopeOf(options.team, options.creator, options.teamScope ?? false),
    created_at: at(T0),
    updated_at: at(options.updatedAt ?? T0)
  }),
  team_uid: options.team,
  creator_uid: options.creator,
  editor: { uid: options.creator, role: options.editorRole ?? "member" }
})

export const makeWebhook = (options: {
  readonly team: TeamUid
  readonly name?: string
  readonly secret?: string | null
  readonly status?: WebhookStatus
  readonly secretVersion?: number
}): StoredWebhook => {
  const creator = newPrincipalUid()
  const status = options.status ?? "enabled"
  return {
    item: new Webhook({
      uid: newWebhookUid(),
      name: options.name ?? "hook",
      auth_mode: "token",
      signature_scheme: null,
      enabled: status === "enabled",
      ingress_url: "https://example.test/hooks/{token}",
      created_at: at(T0),
      updated_at: at(T0)
    }),
    team_uid: options.team,
    creator_uid: creator,
    state: { status, secretVersion: options.secretVersion ?? 1 },
    secret: options.secret === null ? null : Redacted.make(options.secret ?? `whsec_${randomUid()}`)
  }
}

const makeAutomation = (options: {
  readonly team: TeamUid
  readonly webhooks: ReadonlyArray<WebhookUid>
  readonly enabled?: boolean
  readonly name?: string
}): StoredAutomation => ({
  item: new Automation({
    id: AutomationId.make(randomUid()),
    name: options.name ?? "on push",
    enabled: options.enabled ?? true,
    prompt: "review it",
    agent_config: {},
    trigger: {
      provider: "webhook",
      event: "received",
      filter: { webhook_ids: options.webhooks }
    },
    created_at: at(T0),
    updated_at: at(T0)
  }),
  team_uid: options.team,
  ...((creator) => ({ creator_uid: creator, editor: { uid: creator, role: "admin" as const } }))(newPrincipalUid())
})

export const makeDelivery = (receivedAt: number, outcome: DeliveryOutcome = "REJECTED_AUTH") =>
  new Delivery({
    delivery_id: newDeliveryId(),
    received_at: at(receivedAt),
    size_bytes: 12,
    identity: `identity-${randomUid()}`,
    outcome,
    run_ids: [],
    ...(outcome === "ACCEPTED" ? { payload: { ok: true } } : {})
  })

/** Newest first: by received_at, then delivery id, both descending. */
const newestFirst = (a: Delivery, b: Delivery) =>
  DateTime.toEpochMillis(b.received_at) - DateTime.toEpochMillis(a.received_at) ||
  compareText(b.delivery_id, a.delivery_id)

/** Every logged delivery of a webhook, newest first, following the pages. */
const allDeliveries = (webhook: WebhookUid, pageSize: number) =>
  Effect.gen(function* () {
    const store = yield* WebhookStore
    const seen: Array<Delivery> = []
    let before: { received_at: number; delivery_id: DeliveryId } | null = null
    for (;;) {
      const page: DeliveryPage = yield* store.deliveries(webhook, pageSize, before)
      expect(page.deliveries.length).toBeLessThanOrEqual(pageSize)
      seen.push(...page.deliveries)
      if (page.next === null) return seen
      expect(page.deliveries.length).toBe(pageSize)
      expect(page.next).toEqual(page.deliveries[page.deliveries.length - 1])
      before = { received_at: DateTime.toEpochMillis(page.next.received_at), delivery_id: page.next.delivery_id }
    }
  })

// Arbitraries of the stored parts that are not wire items.
const arbitraryRole = fc.constantFrom<Role>("admin", "member", "viewer")
const PROPERTY_RUNS = { fastCheck: { numRuns: 200 }, timeout: 60_000 }

/** Registers the catalog stores' suite against one adapter's layer. */
export const catalogConformance = <E>(storage: Layer.Layer<Stores | RawStorage, E>): void => {
  layer(storage, { excludeTestServices: true, timeout: "60 seconds" })("catalog stores", (it) => {
    describe("IdentityStore", () => {
      it.effect.prop("a team survives a round trip and an update exactly; its budgets and retention change alone", [Team, Team], ([first, second]) =>
        Effect.gen(function* () {
          const store = yield* IdentityStore
          const created = new Team({ ...first, uid: newTeamUid() })
          yield* store.createTeam(created)
          expect((yield* store.getTeam(created.uid)).pipe(Option.map((t) => wire(Team, t)))).toEqual(
            Option.some(wire(Team, created))
          )
          // An update keeps the budgets and retention (they change alone, so that changes made at once stay).
          yield* store.updateTeam(new Team({ ...second, uid: created.uid }))
          const updated = new Team({ ...second, uid: created.uid, budgets: created.budgets, retention: created.retention })
          expect((yield* store.getTeam(created.uid)).pipe(Option.map((t) => wire(Team, t)))).toEqual(
            Option.some(wire(Team, updated))
          )
          yield* store.setTeamBudgets(created.uid, second.budgets)
          expect((yield* store.getTeam(created.uid)).pipe(Option.map((t) => wire(Team, t)))).toEqual(
            Option.some(wire(Team, new Team({ ...updated, budgets: second.budgets })))
          )
          yield* store.setTeamRetention(created.uid, second.retention)
          expect((yield* store.getTeam(created.uid)).pipe(Option.map((t) => wire(Team, t)))).toEqual(
            Option.some(wire(Team, new Team({ ...updated, budgets: second.budgets, retention: second.retention })))
          )
        }), PROPERTY_RUNS)

      it.effect("a team's GitHub connection: none at first, stored, replaced exactly, removed; an unknown team has none", () =>
        Effect.gen(function* () {
          const store = yield* IdentityStore
          const team = makeTeam(`github ${randomUid()}`)
          yield* store.createTeam(team)
          expect(yield* store.getGitHubConnection(team.uid)).toEqual(Option.none())
          const at = DateTime.unsafeMake(Date.UTC(2026, 10, 29, 12))
          const byToken = Schema.decodeUnknownSync(GitHubConnection)({
            base_url: "https://github.com", auth: { type: "token", token_secret: "GH_TOKEN" },
            connected_by: randomUid(), connected_at: DateTime.formatIso(at), updated_at: DateTime.formatIso(at)
          })
          expect(yield* store.setGitHubConnection(team.uid, Option.some(byToken))).toBe(true)
          expect((yield* store.getGitHubConnection(team.uid)).pipe(Option.map((c) => wire(GitHubConnection, c)))).toEqual(
            Option.some(wire(GitHubConnection, byToken))
          )
          const byApp = Schema.decodeUnknownSync(GitHubConnection)({
            ...wire(GitHubConnection, byToken) as object,
            base_url: "https://ghe.example.com", auth: { type: "app", app_id: 12, installation_id: 3456789, private_key_secret: "GH_APP_KEY" }
          })
          expect(yield* store.setGitHubConnection(team.uid, Option.some(byApp))).toBe(true)
          expect((yield* store.getGitHubConnection(team.uid)).pipe(Option.map((c) => wire(GitHubConnection, c)))).toEqual(
            Option.some(wire(GitHubConnection, byApp))
          )
          // The team itself is unchanged by its connection, and the other way round.
          expect((yield* store.getTeam(team.uid)).pipe(Option.map((t) => wire(Team, t)))).toEqual(Option.some(wire(Team, team)))
          yield* store.updateTeam(new Team({ ...team, name: `${team.name} renamed` }))
          expect(Option.isSome(yield* store.getGitHubConnection(team.uid))).toBe(true)
          expect(yield* store.setGitHubConnection(team.uid, Option.none())).toBe(true)
          expect(yield* store.getGitHubConnection(team.uid)).toEqual(Option.none())
          const unknown = newTeamUid()
          expect(yield* store.setGitHubConnection(unknown, Option.some(byToken))).toBe(false)
          expect(yield* store.getGitHubConnection(unknown)).toEqual(Option.none())
        }))

      it.effect("lists every team by name (code point order), then uid", () =>
        Effect.gen(function* () {
          const store = yield* IdentityStore
          const suffix = randomUid()
          const mine = [makeTeam(`b ${suffix}`), makeTeam(`B ${suffix}`), makeTeam(`a ${suffix}`)]
          yield* Effect.forEach(mine, store.createTeam)
          const teams = yield* store.listTeams
          const names = teams.filter((t) => mine.some((m) => m.uid === t.uid)).map((t) => t.name)
          expect(names).toEqual([`B ${suffix}`, `a ${suffix}`, `b ${suffix}`])
          const sorted = [...teams].sort((x, y) => compareText(x.name, y.name) || compareText(x.uid, y.uid))
          expect(teams.map((t) => t.uid)).toEqual(sorted.map((t) => t.uid))
          expect(yield* store.getTeam(newTeamUid())).toEqual(Option.none())
        }))

      it.effect.prop(
        "a principal keeps every field and its memberships in join order",
        [Principal, fc.array(arbitraryRole, { minLength: 0, maxLength: 4 })],
        ([generated, roles]) =>
          Effect.gen(function* () {
            const store = yield* IdentityStore
            const teams = roles.map(() => makeTeam())
            yield* Effect.forEach(teams, store.createTeam)
            // Join in an order unrelated to the teams' ids or names.
            const memberships = teams.map((t, i) => ({ team_uid: t.uid, role: roles[i]! })).reverse()
            const principal = new Principal({ ...generated, uid: newPrincipalUid(), memberships })
            yield* store.createPrincipal(principal)
            const read = yield* store.getPrincipal(principal.uid)
            expect(read.pipe(Option.map((p) => wire(Principal, p)))).toEqual(Option.some(wire(Principal, principal)))
          }),
        PROPERTY_RUNS
      )

      it.effect("counts principals and finds none for an unknown uid", () =>
        Effect.gen(function* () {
          const store = yield* IdentityStore
          const team = makeTeam()
          yield* store.createTeam(team)
          const before = yield* store.countPrincipals
          yield* store.createPrincipal(makePrincipal([{ team_uid: team.uid, role: "member" }]))
          yield* store.createPrincipal(makePrincipal([]))
          expect(yield* store.countPrincipals).toBe(before + 2)
          expect(yield* store.getPrincipal(newPrincipalUid())).toEqual(Option.none())
        }))

      it.effect("finds an unrevoked token by its hash, with its principal, until it is revoked", () =>
        Effect.gen(function* () {
          const store = yield* IdentityStore
          const [first, second] = [makeTeam(), makeTeam()]
          yield* store.createTeam(first)
          yield* store.createTeam(second)
          const principal = makePrincipal([
            { team_uid: second.uid, role: "viewer" },
            { team_uid: first.uid, role: "admin" }
          ])
          yield* store.createPrincipal(principal)
          const token = new TokenRecord({
            token_id: TokenId.make(randomUid()),
            principal_uid: principal.uid,
            name: "ci",
            token_hash: randomHex(32),
            created_at: at(T0),
            revoked_at: null
          })
          const revoked = new TokenRecord({
            ...token,
            token_id: TokenId.make(randomUid()),
            name: null,
            token_hash: randomHex(32),
            revoked_at: at(T0 + 1)
          })
          yield* store.createToken(token)
          yield* store.createToken(revoked)

          const found = yield* store.findToken(token.token_hash)
          expect(found.pipe(Option.map(({ principal, token }) => ({
            token: wire(TokenRecord, token),
            principal: wire(Principal, principal)
          })))).toEqual(Option.some({ token: wire(TokenRecord, token), principal: wire(Principal, principal) }))
          expect(yield* store.findToken(revoked.token_hash)).toEqual(Option.none())
          expect(yield* store.findToken(randomHex(32))).toEqual(Option.none())

          expect(yield* store.revokeToken(token.token_id, T0 + 5)).toBe(true)
          expect(yield* store.findToken(token.token_hash)).toEqual(Option.none())
          expect(yield* store.revokeToken(token.token_id, T0 + 6)).toBe(true)
          expect(yield* store.revokeToken(TokenId.make(randomUid()), T0)).toBe(false)
        }))

      it.effect("refuses a second token with the same hash", () =>
        Effect.gen(function* () {
          const store = yield* IdentityStore
          const principal = makePrincipal([])
          yield* store.createPrincipal(principal)
          const token = new TokenRecord({
            token_id: TokenId.make(randomUid()),
            principal_uid: principal.uid,
            name: null,
            token_hash: randomHex(32),
            created_at: at(T0),
            revoked_at: null
          })
          yield* store.createToken(token)
          const error = yield* failure(store.createToken(new TokenRecord({ ...token, token_id: TokenId.make(randomUid()) })))
          expect(error._tag).toBe("StorageError")
          const found = yield* store.findToken(token.token_hash)
          expect(found.pipe(Option.map((f) => f.token.token_id))).toEqual(Option.some(token.token_id))
        }))
    })

    describe("SecretStore", () => {
      const name = (s: string) => SecretName.make(s)

      it.effect("puts, replaces, lists (names and times only) and deletes secrets per team", () =>
        Effect.gen(function* () {
          const store = yield* SecretStore
          const [team, other] = [newTeamUid(), newTeamUid()]
          const value = (r: Option.Option<Redacted.Redacted<string>>) => Option.map(r, Redacted.value)

          yield* store.put(team, name("b_token"), Redacted.make("one"), T0)
          yield* store.put(team, name("b_token"), Redacted.make("two"), T0 + 10)
          yield* store.put(team, name("B_TOKEN"), Redacted.make("three"), T0 + 20)
          yield* store.put(team, name("a"), Redacted.make("four"), T0 + 30)
          yield* store.put(other, name("b_token"), Redacted.make("elsewhere"), T0 + 40)

          expect(value(yield* store.get(team, name("b_token")))).toEqual(Option.some("two"))
          expect(value(yield* store.get(other, name("b_token")))).toEqual(Option.some("elsewhere"))
          expect(yield* store.get(team, name("missing"))).toEqual(Option.none())

          const listed = yield* store.list(team)
          expect(listed.map((m) => Object.keys(m).sort())).toEqual(Array(3).fill(["created_at", "name", "updated_at"]))
          expect(listed.map((m) => [m.name, DateTime.toEpochMillis(m.created_at), DateTime.toEpochMillis(m.updated_at)]))
            .toEqual([["B_TOKEN", T0 + 20, T0 + 20], ["a", T0 + 30, T0 + 30], ["b_token", T0, T0 + 10]])

          expect(yield* store.remove(team, name("b_token"))).toBe(true)
          expect(yield* store.remove(team, name("b_token"))).toBe(false)
          expect(yield* store.get(team, name("b_token"))).toEqual(Option.none())
          expect((yield* store.list(team)).map((m) => m.name)).toEqual(["B_TOKEN", "a"])
          expect(value(yield* store.get(other, name("b_token")))).toEqual(Option.some("elsewhere"))
        }))

      it.effect.prop(
        "gives back any value exactly",
        [fc.string({ unit: "binary", minLength: 1, maxLength: 200 })],
        ([plaintext]) =>
          Effect.gen(function* () {
            const store = yield* SecretStore
            const team = newTeamUid()
            yield* store.put(team, name("VALUE"), Redacted.make(plaintext), T0)
            expect(Option.map(yield* store.get(team, name("VALUE")), Redacted.value)).toEqual(Option.some(plaintext))
          }),
        PROPERTY_RUNS
      )

      it.effect("stores secrets and webhook secrets only encrypted", () =>
        Effect.gen(function* () {
          const raw = yield* RawStorage
          const secrets = yield* SecretStore
          const webhooks = yield* WebhookStore
          const team = newTeamUid()

          const secretValue = `plaintext${randomUid()}`
          yield* secrets.put(team, name("API_KEY"), Redacted.make(secretValue), T0)
          const webhookSecret = `whsec${randomUid()}`
          const webhook = makeWebhook({ team, secret: webhookSecret })
          yield* webhooks.create(webhook)
          const rotated = `whsec${randomUid()}`
          yield* webhooks.update({ ...webhook, state: { ...webhook.state, secretVersion: 2 }, secret: Redacted.make(rotated) }, 1)

          expect(yield* raw.contains(secretValue)).toBe(false)
          expect(yield* raw.contains(webhookSecret)).toBe(false)
          expect(yield* raw.contains(rotated)).toBe(false)
          // Still readable through the ports.
          expect(Option.map(yield* secrets.get(team, name("API_KEY")), Redacted.value)).toEqual(Option.some(secretValue))
          expect((yield* webhooks.get(webhook.item.uid)).pipe(Option.map((w) => w.secret && Redacted.value(w.secret))))
            .toEqual(Option.some(rotated))
        }))

      it.effect("finds text stored in fields that are not secret (the check above can fail)", () =>
        Effect.gen(function* () {
          const raw = yield* RawStorage
          const team = newTeamUid()
          const secretName = `NAME${randomUid()}`
          yield* (yield* SecretStore).put(team, name(secretName), Redacted.make("x"), T0)
          const webhookName = `hook${randomUid()}`
          yield* (yield* WebhookStore).create(makeWebhook({ team, name: webhookName }))
          expect(yield* raw.contains(secretName)).toBe(true)
          expect(yield* raw.contains(webhookName)).toBe(true)
          expect(yield* raw.contains(`absent${randomUid()}`)).toBe(false)
        }))
    })

    describe("ScheduleStore", () => {
      const storedSchedule = fc.record({
        item: Arbitrary.make(ScheduledAgentItem),
        status: fc.constantFrom<ScheduleStatus>("active", "paused"),
        lastTickAt: fc.integer({ min: 0, max: 2 ** 47 }),
        editorRole: fc.constantFrom<Role>("admin", "member", "viewer")
      })

      it.effect.prop(
        "a schedule survives create, read and update exactly (update keeps the scheduler's part and the later watermark)",
        [storedSchedule, storedSchedule],
        ([first, second]) =>
          Effect.gen(function* () {
            const store = yield* ScheduleStore
            const id = ScheduleId.make(randomUid())
            const team = newTeamUid()
            const creator = newPrincipalUid()
            const created: StoredSchedule = {
              item: new ScheduledAgentItem({ ...first.item, id }),
              team_uid: team,
              creator_uid: creator,
              editor_role: first.editorRole,
              state: { status: first.status, lastTickAt: first.lastTickAt }
            }
            yield* store.create(created)
            expect((yield* store.get(id)).pipe(Option.map(wireSchedule))).toEqual(Option.some(wireSchedule(created)))
            const updated: StoredSchedule = {
              ...created,
              item: new ScheduledAgentItem({ ...second.item, id }),
              editor_role: second.editorRole,
              state: { status: second.status, lastTickAt: second.lastTickAt }
            }
            yield* store.update(updated, DateTime.toEpochMillis(created.item.updated_at))
            const expected: StoredSchedule = {
              ...updated,
              item: new ScheduledAgentItem({
                ...updated.item,
                history: created.item.history,
                last_spawn_error: created.item.last_spawn_error
              }),
              state: { status: second.status, lastTickAt: Math.max(first.lastTickAt, second.lastTickAt) }
            }
            expect((yield* store.get(id)).pipe(Option.map(wireSchedule))).toEqual(Option.some(wireSchedule(expected)))
          }),
        PROPERTY_RUNS
      )

      it.effect.prop(
        "lists exactly the schedules the viewer may see, by name then id",
        [
          fc.array(
            fc.record({
              creator: fc.nat({ max: 2 }),
              teamScope: fc.boolean(),
              name: fc.constantFrom("a", "B", "b", "nightly", "Nightly"),
              status: fc.constantFrom<ScheduleStatus>("active", "paused", "deleted")
            }),
            { maxLength: 8 }
          ),
          fc.nat({ max: 2 }),
          arbitraryRole
        ],
        ([specs, viewerIndex, role]) =>
          Effect.gen(function* () {
            const store = yield* ScheduleStore
            const team = newTeamUid()
            const principals = [newPrincipalUid(), newPrincipalUid(), newPrincipalUid()]
            const schedules = specs.map((spec) =>
              makeSchedule({ ...spec, team, creator: principals[spec.creator]! })
            )
            // Another team's schedule, created by the viewer, is never listed.
            schedules.push(makeSchedule({ team: newTeamUid(), creator: principals[viewerIndex]! }))
            yield* Effect.forEach(schedules, store.create)
            const who = viewer(team, principals[viewerIndex]!, role)
            const expected = schedules
              .filter((s) =>
                s.state.status !== "deleted" &&
                canSee(who, { team_uid: s.team_uid, creator_uid: s.creator_uid, scope: s.item.scope })
              )
              .sort((x, y) => compareText(x.item.name, y.item.name) || compareText(x.item.id, y.item.id))
            const listed = yield* store.list(who)
            expect(listed.map((s) => s.item.id)).toEqual(expected.map((s) => s.item.id))
          }),
        PROPERTY_RUNS
      )

      it.effect("updates only from the expected updated_at, and a deleted schedule stays deleted", () =>
        Effect.gen(function* () {
          const store = yield* ScheduleStore
          const team = newTeamUid()
          const creator = newPrincipalUid()
          const schedule = makeSchedule({ team, creator, updatedAt: T0 })
          yield* store.create(schedule)

          const renamed = { ...schedule, item: new ScheduledAgentItem({ ...schedule.item, name: "renamed", updated_at: at(T0 + 1) }) }
          yield* store.update(renamed, T0)
          const stale = yield* failure(store.update({ ...schedule, item: new ScheduledAgentItem({ ...schedule.item, updated_at: at(T0 + 2) }) }, T0))
          expect(stale._tag).toBe("StaleWrite")
          expect((yield* store.get(schedule.item.id)).pipe(Option.map((s) => s.item.name))).toEqual(Option.some("renamed"))

          const deleted: StoredSchedule = {
            ...renamed,
            item: new ScheduledAgentItem({ ...renamed.item, enabled: false, updated_at: at(T0 + 3) }),
            state: { ...renamed.state, status: "deleted" }
          }
          yield* store.update(deleted, T0 + 1)
          expect(yield* store.get(schedule.item.id)).toEqual(Option.none())
          expect(yield* store.list(viewer(team, creator, "admin"))).toEqual([])
          const revive = yield* failure(store.update({ ...renamed, item: new ScheduledAgentItem({ ...renamed.item, updated_at: at(T0 + 4) }) }, T0 + 3))
          expect(revive._tag).toBe("StaleWrite")
          expect(yield* store.get(schedule.item.id)).toEqual(Option.none())
        }))

      it.effect("lets exactly one of two concurrent updates from the same version win", () =>
        Effect.gen(function* () {
          const store = yield* ScheduleStore
          const schedule = makeSchedule({ team: newTeamUid(), creator: newPrincipalUid(), updatedAt: T0 })
          yield* store.create(schedule)
          const attempt = (name: string) =>
            Effect.either(store.update({ ...schedule, item: new ScheduledAgentItem({ ...schedule.item, name, updated_at: at(T0 + 1) }) }, T0))
          const results = yield* Effect.all([attempt("first"), attempt("second")], { concurrency: 2 })
          expect(results.filter(Either.isRight)).toHaveLength(1)
          expect(results.filter(Either.isLeft).map((r) => r.left._tag)).toEqual(["StaleWrite"])
          const winner = results[0]._tag === "Right" ? "first" : "second"
          expect((yield* store.get(schedule.item.id)).pipe(Option.map((s) => s.item.name))).toEqual(Option.some(winner))
        }))

      it.effect.prop(
        "records the scheduler's part only from the part as read, and leaves the API's part alone",
        [storedSchedule, Arbitrary.make(ScheduleHistory), fc.option(fc.string(), { nil: null }), fc.integer({ min: 0, max: 2 ** 47 })],
        ([first, history, error, lastTickAt]) =>
          Effect.gen(function* () {
            const store = yield* ScheduleStore
            const id = ScheduleId.make(randomUid())
            const created: StoredSchedule = {
              item: new ScheduledAgentItem({ ...first.item, id }),
              team_uid: newTeamUid(),
              creator_uid: newPrincipalUid(),
              editor_role: first.editorRole,
              state: { status: first.status, lastTickAt: first.lastTickAt }
            }
            yield* store.create(created)
            const write = { lastTickAt, last_ran: history.last_ran, recent_runs: history.recent_runs, last_spawn_error: error }
            // A part that differs from the stored one in any of its three pieces loses.
            const read = ticksOf(created)
            const stale = [
              { ...read, lastTickAt: read.lastTickAt + 1 },
              { ...read, last_spawn_error: read.last_spawn_error === null ? "boom" : null },
              { ...read, history: { ...read.history, last_ran: read.history.last_ran === null ? at(T0) : null } }
            ]
            for (const part of stale) {
              expect((yield* failure(store.recordTicks(id, part, write)))._tag).toBe("StaleWrite")
            }
            expect((yield* store.get(id)).pipe(Option.map(wireSchedule))).toEqual(Option.some(wireSchedule(created)))
            yield* store.recordTicks(id, read, write)
            const expected: StoredSchedule = {
              ...created,
              item: new ScheduledAgentItem({
                ...created.item,
                history: { last_ran: history.last_ran, next_run: null, recent_runs: history.recent_runs },
                last_spawn_error: error
              }),
              state: { ...created.state, lastTickAt }
            }
            const stored = yield* store.get(id)
            expect(stored.pipe(Option.map(wireSchedule))).toEqual(Option.some(wireSchedule(expected)))
            // The next write counts from what was just written.
            yield* store.recordTicks(id, ticksOf(Option.getOrThrow(stored)), { ...write, last_spawn_error: null })
            expect((yield* store.get(id)).pipe(Option.map((s) => s.item.last_spawn_error))).toEqual(Option.some(null))
          }),
        PROPERTY_RUNS
      )

      it.effect("getMany reads the schedules among the ids that are not deleted", () =>
        Effect.gen(function* () {
          const store = yield* ScheduleStore
          const team = newTeamUid()
          const creator = newPrincipalUid()
          const active = makeSchedule({ team, creator })
          const paused = makeSchedule({ team, creator, status: "paused" })
          const deleted = makeSchedule({ team, creator, status: "deleted" })
          for (const s of [active, paused, deleted]) yield* store.create(s)
          const found = yield* store.getMany([active.item.id, paused.item.id, deleted.item.id, ScheduleId.make(randomUid()), active.item.id])
          const byId = (list: ReadonlyArray<StoredSchedule>) => [...list].sort((a, b) => (a.item.id < b.item.id ? -1 : 1)).map(wireSchedule)
          expect(byId(found)).toEqual(byId([active, paused]))
          expect(yield* store.getMany([])).toEqual([])
        }))

      it.effect("recordTicksEach applies each compare-and-set on its own, as recordTicks would, and answers which it applied", () =>
        Effect.gen(function* () {
          const store = yield* ScheduleStore
          const team = newTeamUid()
          const creator = newPrincipalUid()
          const schedules = Array.from({ length: 4 }, () => makeSchedule({ team, creator }))
          for (const s of schedules) yield* store.create(s)
          const [fresh, failed, stale, gone] = schedules as [StoredSchedule, StoredSchedule, StoredSchedule, StoredSchedule]
          // One whose spawn error is set (and compared as NULL-safe), one written since it was read, one deleted.
          yield* store.recordTicks(failed.item.id, ticksOf(failed), { lastTickAt: T0 + 1, last_ran: null, recent_runs: [], last_spawn_error: "refused" })
          const failedNow = Option.getOrThrow(yield* store.get(failed.item.id))
          yield* store.recordTicks(stale.item.id, ticksOf(stale), { lastTickAt: T0 + 1, last_ran: null, recent_runs: [], last_spawn_error: null })
          yield* store.update({ ...gone, item: new ScheduledAgentItem({ ...gone.item, updated_at: at(T0 + 1) }), state: { ...gone.state, status: "deleted" } }, T0)
          const ran = (n: number) => ({
            run_id: RunId.make(`018f2b7c-0000-7000-8000-00000000000${n}`),
            state: "QUEUED" as const,
            scheduled_for: at(T0 + n * 60_000)
          })
          const write = (n: number) => ({ lastTickAt: T0 + n * 60_000, last_ran: at(T0 + n * 60_000), recent_runs: [ran(n)], last_spawn_error: null })
          const applied = yield* store.recordTicksEach([
            { id: fresh.item.id, expected: ticksOf(fresh), next: write(1) },
            { id: failed.item.id, expected: ticksOf(failedNow), next: write(2) },
            { id: stale.item.id, expected: ticksOf(stale), next: write(3) },
            { id: gone.item.id, expected: ticksOf(gone), next: write(4) }
          ])
          expect(applied).toEqual([true, true, false, false])
          const partOf = (id: ScheduleId) =>
            Effect.map(store.get(id), Option.map((s) => ({ ...ticksOf(s), history: wire(ScheduleHistory, s.item.history) as { readonly recent_runs: unknown } })))
          for (const [s, n] of [[fresh, 1], [failed, 2]] as const) {
            expect(yield* partOf(s.item.id)).toEqual(Option.some({
              lastTickAt: T0 + n * 60_000,
              history: wire(ScheduleHistory, { last_ran: at(T0 + n * 60_000), next_run: null, recent_runs: [ran(n)] }),
              last_spawn_error: null
            }))
          }
          // The stale write changed nothing; the deleted schedule stays deleted.
          expect((yield* partOf(stale.item.id)).pipe(Option.map((p) => [p.lastTickAt, p.history.recent_runs]))).toEqual(Option.some([T0 + 1, []]))
          expect(yield* store.get(gone.item.id)).toEqual(Option.none())
          expect(yield* store.recordTicksEach([])).toEqual([])
        }))

      it.effect("an API update keeps the history and the later watermark; a deleted schedule records nothing", () =>
        Effect.gen(function* () {
          const store = yield* ScheduleStore
          const schedule = makeSchedule({ team: newTeamUid(), creator: newPrincipalUid(), updatedAt: T0 })
          yield* store.create(schedule)
          const runId = RunId.make("018f2b7c-0000-7000-8000-000000000001")
          const ran = { run_id: runId, state: "QUEUED" as const, scheduled_for: at(T0 + 60_000) }
          yield* store.recordTicks(schedule.item.id, ticksOf(schedule), {
            lastTickAt: T0 + 60_000,
            last_ran: at(T0 + 60_000),
            recent_runs: [ran],
            last_spawn_error: null
          })
          // The API read the schedule before the tick was recorded: its write keeps the tick.
          yield* store.update({ ...schedule, item: new ScheduledAgentItem({ ...schedule.item, name: "renamed", updated_at: at(T0 + 1) }) }, T0)
          const read = Option.getOrThrow(yield* store.get(schedule.item.id))
          expect(read.item.name).toBe("renamed")
          expect(read.state.lastTickAt).toBe(T0 + 60_000)
          expect(wire(ScheduleHistory, read.item.history)).toEqual(
            wire(ScheduleHistory, { last_ran: at(T0 + 60_000), next_run: null, recent_runs: [ran] })
          )
          // A resume moves the watermark forwards.
          yield* store.update({ ...read, item: new ScheduledAgentItem({ ...read.item, updated_at: at(T0 + 2) }), state: { status: "active", lastTickAt: T0 + 120_000 } }, T0 + 1)
          const resumed = Option.getOrThrow(yield* store.get(schedule.item.id))
          expect(resumed.state.lastTickAt).toBe(T0 + 120_000)
          const timing = (yield* store.activeTimings).find((t) => t.id === schedule.item.id)
          expect(timing).toEqual({
            id: schedule.item.id,
            cron_schedule: schedule.item.cron_schedule,
            timezone: schedule.item.timezone,
            updated_at: T0 + 2,
            last_tick_at: T0 + 120_000
          })
          yield* store.update({ ...resumed, item: new ScheduledAgentItem({ ...resumed.item, updated_at: at(T0 + 3) }), state: { ...resumed.state, status: "deleted" } }, T0 + 2)
          const gone = yield* failure(store.recordTicks(schedule.item.id, ticksOf(resumed), { lastTickAt: T0 + 180_000, last_ran: null, recent_runs: [], last_spawn_error: null }))
          expect(gone._tag).toBe("StaleWrite")
          expect((yield* store.activeTimings).some((t) => t.id === schedule.item.id)).toBe(false)
        }))

    })

    describe("EnvironmentStore", () => {
      it.effect.prop(
        "an environment survives create, read, update and remove exactly",
        [Environment, Environment],
        ([first, second]) =>
          Effect.gen(function* () {
            const store = yield* EnvironmentStore
            const uid = EnvironmentUid.make(randomUid())
            const creator = newPrincipalUid()
            const created: StoredEnvironment = {
              item: new Environment({ ...first, uid }),
              team_uid: newTeamUid(),
              creator_uid: creator,
              editor: { uid: creator, role: "admin" }
            }
            yield* store.create(created)
            expect((yield* store.get(uid)).pipe(Option.map(wireEnvironment))).toEqual(Option.some(wireEnvironment(created)))
            // Replaced by someone else, who becomes its editor.
            const updated = { ...created, item: new Environment({ ...second, uid }), editor: { uid: newPrincipalUid(), role: "member" as const } }
            yield* store.update(updated)
            expect((yield* store.get(uid)).pipe(Option.map(wireEnvironment))).toEqual(Option.some(wireEnvironment(updated)))
            expect(yield* store.remove(uid)).toBe(true)
            expect(yield* store.get(uid)).toEqual(Option.none())
            expect(yield* store.remove(uid)).toBe(false)
          }),
        PROPERTY_RUNS
      )

      it.effect.prop(
        "lists what the viewer sees in its team, is a guest of, or opened by link; newest first",
        [
          fc.array(
            fc.record({
              otherTeam: fc.boolean(),
              creator: fc.nat({ max: 2 }),
              teamScope: fc.boolean(),
              guests: fc.subarray([0, 1, 2]),
              linkSharing: fc.boolean(),
              opened: fc.subarray([0, 1, 2]),
              updatedAt: fc.integer({ min: 0, max: 3 })
            }),
            { maxLength: 7 }
          ),
          fc.nat({ max: 2 }),
          arbitraryRole
        ],
        ([specs, viewerIndex, role]) =>
          Effect.gen(function* () {
            const store = yield* EnvironmentStore
            const [team, otherTeam] = [newTeamUid(), newTeamUid()]
            const principals = [newPrincipalUid(), newPrincipalUid(), newPrincipalUid()]
            const made = specs.map((spec) => ({
              spec,
              env: makeEnvironment({
                team: spec.otherTeam ? otherTeam : team,
                creator: principals[spec.creator]!,
                teamScope: spec.teamScope,
                guests: spec.guests.map((i) => principals[i]!),
                linkSharing: spec.linkSharing,
                updatedAt: T0 + spec.updatedAt
              })
            }))
            for (const { spec, env } of made) {
              yield* store.create(env)
              for (const i of spec.opened) yield* store.recordLinkAccess(env.item.uid, principals[i]!)
            }
            const me = principals[viewerIndex]!
            const who = viewer(team, me, role)
            const expected = made
              .filter(({ spec, env }) =>
                canSee(who, { team_uid: env.team_uid, creator_uid: env.creator_uid, scope: env.item.scope }) ||
                env.item.sharing.guests.includes(me) ||
                (env.team_uid === team && spec.linkSharing && spec.opened.includes(viewerIndex))
              )
              .map(({ env }) => env)
              .sort((x, y) =>
                DateTime.toEpochMillis(y.item.updated_at) - DateTime.toEpochMillis(x.item.updated_at) ||
                compareText(y.item.uid, x.item.uid)
              )
            const listed = yield* store.list(who)
            expect(listed.map((e) => e.item.uid)).toEqual(expected.map((e) => e.item.uid))
          }),
        PROPERTY_RUNS
      )

      it.effect("noteRun writes only the newest run and the setup flag, keeping a concurrent change", () =>
        Effect.gen(function* () {
          const store = yield* EnvironmentStore
          const env = makeEnvironment({ team: newTeamUid(), creator: newPrincipalUid(), linkSharing: true })
          yield* store.create(env)
          // Read by a run, then changed by someone else before the run's note is written.
          const changed = new Environment({
            ...env.item,
            config: { ...env.item.config, name: "renamed" },
            sharing: { guests: [], link_sharing: false }
          })
          yield* store.update({ ...env, item: changed })
          const last = {
            id: RunId.make("018f2b7c-0000-7000-8000-0000000000aa"),
            title: "the newest run",
            state: "QUEUED" as const,
            created_at: env.item.created_at,
            updated_at: env.item.created_at,
            started_at: null
          }
          yield* store.noteRun(env.item.uid, { last_task_created: last })
          const afterFirst = Option.getOrThrow(yield* store.get(env.item.uid))
          expect(wireEnvironment(afterFirst)).toEqual(
            wireEnvironment({ ...env, item: new Environment({ ...changed, last_task_created: last }) })
          )
          yield* store.noteRun(env.item.uid, { setup_failed: true })
          const afterSecond = Option.getOrThrow(yield* store.get(env.item.uid))
          expect(afterSecond.item.setup_failed).toBe(true)
          expect(afterSecond.item.last_task_created).toEqual(last)
          yield* store.noteRun(env.item.uid, { last_task_created: null, setup_failed: false })
          const cleared = Option.getOrThrow(yield* store.get(env.item.uid))
          expect([cleared.item.last_task_created, cleared.item.setup_failed]).toEqual([null, false])
          expect(cleared.item.sharing.link_sharing).toBe(false)
          yield* store.noteRun(EnvironmentUid.make(randomUid()), { setup_failed: true })
        }))

      it.effect("records link access once, ignores unknown environments, and forgets it with the environment", () =>
        Effect.gen(function* () {
          const store = yield* EnvironmentStore
          const team = newTeamUid()
          const reader = newPrincipalUid()
          const env = makeEnvironment({ team, creator: newPrincipalUid(), linkSharing: true })
          yield* store.create(env)
          yield* store.recordLinkAccess(env.item.uid, reader)
          yield* store.recordLinkAccess(env.item.uid, reader)
          yield* store.recordLinkAccess(EnvironmentUid.make(randomUid()), reader)
          const listed = yield* store.list(viewer(team, reader, "member"))
          expect(listed.map((e) => wireEnvironment(e))).toEqual([wireEnvironment(env)])

          // Turning link sharing off hides it again; the creator still sees it.
          yield* store.update({ ...env, item: new Environment({ ...env.item, sharing: { guests: [], link_sharing: false } }) })
          expect(yield* store.list(viewer(team, reader, "member"))).toEqual([])
          expect((yield* store.list(viewer(team, env.creator_uid, "member"))).map((e) => e.item.uid)).toEqual([env.item.uid])

          expect(yield* store.remove(env.item.uid)).toBe(true)
          expect(yield* store.list(viewer(team, env.creator_uid, "admin"))).toEqual([])
        }))
    })

    describe("WebhookStore", () => {
      const storedWebhook = fc.record({
        item: Arbitrary.make(Webhook),
        secret: fc.option(fc.string({ unit: "grapheme", minLength: 1, maxLength: 64 }), { nil: null }),
        status: fc.constantFrom<WebhookStatus>("enabled", "disabled"),
        secretVersion: fc.integer({ min: 1, max: 1_000_000 })
      })

      it.effect.prop(
        "a webhook survives create, read, list and update exactly, with its secret",
        [storedWebhook, storedWebhook],
        ([first, second]) =>
          Effect.gen(function* () {
            const store = yield* WebhookStore
            const uid = newWebhookUid()
            const team = newTeamUid()
            const created: StoredWebhook = {
              item: new Webhook({ ...first.item, uid }),
              team_uid: team,
              creator_uid: newPrincipalUid(),
              state: { status: first.status, secretVersion: first.secretVersion },
              secret: first.secret === null ? null : Redacted.make(first.secret)
            }
            yield* store.create(created)
            expect((yield* store.get(uid)).pipe(Option.map(wireWebhook))).toEqual(Option.some(wireWebhook(created)))
            expect((yield* store.list(team)).map(wireWebhook)).toEqual([wireWebhook(created)])
            const updated: StoredWebhook = {
              ...created,
              item: new Webhook({ ...second.item, uid }),
              state: { status: second.status, secretVersion: first.secretVersion + 1 },
              secret: second.secret === null ? null : Redacted.make(second.secret)
            }
            yield* store.update(updated, first.secretVersion)
            expect((yield* store.get(uid)).pipe(Option.map(wireWebhook))).toEqual(Option.some(wireWebhook(updated)))
          }),
        PROPERTY_RUNS
      )

      it.effect("lists a team's webhooks by name, without deleted ones, and never revives a deleted one", () =>
        Effect.gen(function* () {
          const store = yield* WebhookStore
          const team = newTeamUid()
          const [b, a, gone] = [
            makeWebhook({ team, name: "b" }),
            makeWebhook({ team, name: "a", status: "disabled" }),
            makeWebhook({ team, name: "c" })
          ]
          yield* Effect.forEach([b, a, gone], store.create)
          yield* store.create(makeWebhook({ team: newTeamUid(), name: "elsewhere" }))
          yield* store.update({ ...gone, state: { ...gone.state, status: "deleted" } }, 1)
          expect((yield* store.list(team)).map((w) => w.item.name)).toEqual(["a", "b"])
          expect(yield* store.get(gone.item.uid)).toEqual(Option.none())
          const revive = yield* failure(store.update(gone, 1))
          expect(revive._tag).toBe("StaleWrite")
          expect(yield* store.get(gone.item.uid)).toEqual(Option.none())
          expect(yield* store.get(newWebhookUid())).toEqual(Option.none())
        }))

      it.effect("updates only from the expected secret version", () =>
        Effect.gen(function* () {
          const store = yield* WebhookStore
          const webhook = makeWebhook({ team: newTeamUid(), secretVersion: 3 })
          yield* store.create(webhook)
          const stale = yield* failure(store.update({ ...webhook, item: new Webhook({ ...webhook.item, name: "x" }) }, 2))
          expect(stale._tag).toBe("StaleWrite")
          yield* store.update({ ...webhook, item: new Webhook({ ...webhook.item, name: "renamed" }) }, 3)
          expect((yield* store.get(webhook.item.uid)).pipe(Option.map((w) => w.item.name))).toEqual(Option.some("renamed"))
        }))

      it.effect("lets exactly one of two concurrent rotations from the same version win", () =>
        Effect.gen(function* () {
          const store = yield* WebhookStore
          const webhook = makeWebhook({ team: newTeamUid() })
          yield* store.create(webhook)
          const rotate = (secret: string) =>
            Effect.either(store.update({ ...webhook, state: { ...webhook.state, secretVersion: 2 }, secret: Redacted.make(secret) }, 1))
          const results = yield* Effect.all([rotate("first"), rotate("second")], { concurrency: 2 })
          expect(results.filter(Either.isRight)).toHaveLength(1)
          expect(results.filter(Either.isLeft).map((r) => r.left._tag)).toEqual(["StaleWrite"])
          const winner = results[0]._tag === "Right" ? "first" : "second"
          const stored = yield* store.get(webhook.item.uid)
          expect(stored.pipe(Option.map((w) => [w.state.secretVersion, w.secret && Redacted.value(w.secret)])))
            .toEqual(Option.some([2, winner]))
        }))

      it.effect.prop(
        "logs any delivery exactly and finds it by webhook and id",
        [Arbitrary.make(Delivery)],
        ([generated]) =>
          Effect.gen(function* () {
            const store = yield* WebhookStore
            const webhook = newWebhookUid()
            const delivery = new Delivery({ ...generated, delivery_id: newDeliveryId() })
            yield* store.logDelivery(webhook, delivery)
            const found = yield* store.delivery(webhook, delivery.delivery_id)
            expect(found.pipe(Option.map((d) => wire(Delivery, d)))).toEqual(Option.some(wire(Delivery, delivery)))
            expect(yield* store.delivery(newWebhookUid(), delivery.delivery_id)).toEqual(Option.none())
            expect(yield* store.delivery(webhook, newDeliveryId())).toEqual(Option.none())
          }),
        PROPERTY_RUNS
      )

      it.effect.prop(
        "pages a delivery log newest first, each delivery exactly once",
        [fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 15 }), fc.integer({ min: 1, max: 6 })],
        ([offsets, pageSize]) =>
          Effect.gen(function* () {
            const store = yield* WebhookStore
            const webhook = newWebhookUid()
            const log = offsets.map((o) => makeDelivery(T0 + o * 1000))
            yield* Effect.forEach(log, (d) => store.logDelivery(webhook, d), { concurrency: 4 })
            yield* store.logDelivery(newWebhookUid(), makeDelivery(T0))
            const paged = yield* allDeliveries(webhook, pageSize)
            expect(paged.map((d) => d.delivery_id)).toEqual([...log].sort(newestFirst).map((d) => d.delivery_id))
          }),
        PROPERTY_RUNS
      )

      it.effect.prop(
        "prunes exactly what the retention does not keep, each of ACCEPTED, DUPLICATE and the rejections apart",
        [
          fc.array(
            fc.tuple(
              fc.integer({ min: 0, max: 20 }),
              fc.constantFrom<DeliveryOutcome>(
                "ACCEPTED",
                "DUPLICATE",
                "REJECTED_AUTH",
                "REJECTED_INVALID_JSON",
                "REJECTED_TOO_LARGE"
              )
            ),
            { maxLength: 25 }
          ),
          fc.integer({ min: 0, max: 12 }),
          fc.integer({ min: 0, max: 12 }),
          fc.integer({ min: 0, max: 12 }),
          fc.integer({ min: -1, max: 21 })
        ],
        ([entries, keep, max, rejected, sinceOffset]) =>
          Effect.gen(function* () {
            const store = yield* WebhookStore
            const webhook = newWebhookUid()
            const neighbour = newWebhookUid()
            const log = entries.map(([o, outcome]) => makeDelivery(T0 + o * 1000, outcome))
            const since = T0 + sinceOffset * 1000
            yield* Effect.forEach(log, (d) => store.logDelivery(webhook, d), { concurrency: 4 })
            yield* store.logDelivery(neighbour, makeDelivery(T0 - 1000))

            const classOf = (d: Delivery) => (d.outcome === "ACCEPTED" || d.outcome === "DUPLICATE" ? d.outcome : "REJECTED")
            const rule = new Set<string>()
            for (const kind of ["ACCEPTED", "DUPLICATE", "REJECTED"]) {
              const newest = log.filter((d) => classOf(d) === kind).sort(newestFirst)
              newest.forEach((d, i) => {
                const kept = kind === "REJECTED"
                  ? i < rejected
                  : i < max && (i < keep || DateTime.toEpochMillis(d.received_at) >= since)
                if (kept) rule.add(d.delivery_id)
              })
            }
            const removed = yield* store.prune(webhook, { keep, since, max, rejected })

            const left = (yield* store.deliveries(webhook, 1000, null)).deliveries.map((d) => d.delivery_id)
            expect(new Set(left)).toEqual(rule)
            expect(removed).toBe(log.length - rule.size)
            expect((yield* store.deliveries(neighbour, 10, null)).deliveries).toHaveLength(1)
          }),
        PROPERTY_RUNS
      )

      it.effect.prop(
        "counts every logged delivery by outcome; a rejected one trims the rejections to the newest `keepRejected`",
        [
          fc.array(
            fc.tuple(
              fc.integer({ min: 0, max: 20 }),
              fc.constantFrom<DeliveryOutcome>("DUPLICATE", "REJECTED_AUTH", "REJECTED_INVALID_JSON", "REJECTED_TOO_LARGE")
            ),
            { maxLength: 20 }
          ),
          fc.integer({ min: 0, max: 5 })
        ],
        ([entries, keepRejected]) =>
          Effect.gen(function* () {
            const store = yield* WebhookStore
            const webhook = newWebhookUid()
            const log = entries.map(([o, outcome]) => makeDelivery(T0 + o * 1000, outcome))
            // One at a time: each rejected one trims what is logged so far.
            for (const d of log) yield* store.logDelivery(webhook, d, keepRejected)
            const counts = yield* store.deliveryCounts(webhook)
            for (const outcome of ["ACCEPTED", "DUPLICATE", "REJECTED_AUTH", "REJECTED_INVALID_JSON", "REJECTED_TOO_LARGE"] as const) {
              expect(counts[outcome]).toBe(log.filter((d) => d.outcome === outcome).length)
            }
            const left = (yield* store.deliveries(webhook, 1000, null)).deliveries
            // The newest `keepRejected` rejections stay (each trim keeps the newest of what is there).
            const rejections = log.filter((d) => d.outcome !== "DUPLICATE").sort(newestFirst)
            expect(left.filter((d) => d.outcome !== "DUPLICATE").map((d) => d.delivery_id))
              .toEqual(rejections.slice(0, keepRejected).map((d) => d.delivery_id))
            expect(left.filter((d) => d.outcome === "DUPLICATE").length).toBe(log.filter((d) => d.outcome === "DUPLICATE").length)
            expect((yield* store.deliveryCounts(newWebhookUid())).REJECTED_AUTH).toBe(0)
          }),
        PROPERTY_RUNS
      )

      it.effect("frees a pruned delivery's identity for a new delivery", () =>
        Effect.gen(function* () {
          const runs = yield* RunStore
          const webhooks = yield* WebhookStore
          const webhook = newWebhookUid()
          const identity = `sender-${randomUid()}`
          const accepted = (receivedAt: number) =>
            new Delivery({ ...makeDelivery(receivedAt, "ACCEPTED"), identity })
          const key = (delivery: Delivery) => ({ _tag: "Delivery" as const, webhook_uid: webhook, identity, delivery })

          const first = accepted(T0)
          yield* runs.create([], key(first))
          const duplicate = yield* failure(runs.create([], key(accepted(T0 + 1))))
          expect(duplicate._tag).toBe("DuplicateKey")

          expect(yield* webhooks.prune(webhook, { keep: 0, since: T0 + 1, max: 10, rejected: 0 })).toBe(1)
          expect(yield* webhooks.delivery(webhook, first.delivery_id)).toEqual(Option.none())
          const again = accepted(T0 + 2)
          yield* runs.create([], key(again))
          expect((yield* webhooks.delivery(webhook, again.delivery_id)).pipe(Option.map((d) => d.identity)))
            .toEqual(Option.some(identity))
        }))
    })

    describe("AutomationStore", () => {
      it.effect.prop(
        "an automation survives create, read, list, update and remove exactly",
        [Automation, Automation],
        ([first, second]) =>
          Effect.gen(function* () {
            const store = yield* AutomationStore
            const id = AutomationId.make(randomUid())
            const team = newTeamUid()
            const creator = newPrincipalUid()
            const created: StoredAutomation = {
              item: new Automation({ ...first, id }),
              team_uid: team,
              creator_uid: creator,
              editor: { uid: creator, role: "admin" }
            }
            yield* store.create(created)
            expect((yield* store.get(id)).pipe(Option.map(wireAutomation))).toEqual(Option.some(wireAutomation(created)))
            expect((yield* store.list(team)).map(wireAutomation)).toEqual([wireAutomation(created)])
            // Replaced by another admin, who becomes its editor.
            const updated = { ...created, item: new Automation({ ...second, id }), editor: { uid: newPrincipalUid(), role: "admin" as const } }
            yield* store.update(updated)
            expect((yield* store.get(id)).pipe(Option.map(wireAutomation))).toEqual(Option.some(wireAutomation(updated)))
            expect(yield* store.remove(id)).toBe(true)
            expect(yield* store.get(id)).toEqual(Option.none())
            expect(yield* store.remove(id)).toBe(false)
          }),
        PROPERTY_RUNS
      )

      it.effect.prop(
        "finds exactly the enabled automations whose trigger selects a webhook",
        [
          fc.array(
            fc.record({
              webhooks: fc.array(fc.nat({ max: 2 }), { minLength: 1, maxLength: 4 }),
              enabled: fc.boolean(),
              name: fc.constantFrom("a", "B", "b")
            }),
            { maxLength: 6 }
          ),
          fc.array(fc.record({ index: fc.nat({ max: 5 }), webhooks: fc.array(fc.nat({ max: 2 }), { minLength: 1, maxLength: 3 }), enabled: fc.boolean() }), { maxLength: 3 })
        ],
        ([specs, edits]) =>
          Effect.gen(function* () {
            const store = yield* AutomationStore
            const team = newTeamUid()
            const hooks = [newWebhookUid(), newWebhookUid(), newWebhookUid()]
            const automations = specs.map((spec) =>
              makeAutomation({ team, webhooks: spec.webhooks.map((i) => hooks[i]!), enabled: spec.enabled, name: spec.name })
            )
            yield* Effect.forEach(automations, store.create)
            for (const edit of edits) {
              const target = automations[edit.index]
              if (target === undefined) continue
              const next = makeAutomation({ team, webhooks: edit.webhooks.map((i) => hooks[i]!), enabled: edit.enabled })
              const replaced = { ...target, item: new Automation({ ...next.item, id: target.item.id, name: target.item.name }) }
              yield* store.update(replaced)
              automations[edit.index] = replaced
            }
            for (const hook of hooks) {
              const expected = automations
                .filter((a) => a.item.enabled && a.item.trigger.filter.webhook_ids.includes(hook))
                .sort((x, y) => compareText(x.item.name, y.item.name) || compareText(x.item.id, y.item.id))
              const found = yield* store.forWebhook(hook)
              expect(found.map(wireAutomation)).toEqual(expected.map(wireAutomation))
            }
          }),
        PROPERTY_RUNS
      )

      it.effect("lists a team's automations by name and forgets removed ones", () =>
        Effect.gen(function* () {
          const store = yield* AutomationStore
          const team = newTeamUid()
          const hook = newWebhookUid()
          const [b, a] = [makeAutomation({ team, webhooks: [hook], name: "b" }), makeAutomation({ team, webhooks: [hook], name: "a" })]
          yield* Effect.forEach([b, a], store.create)
          yield* store.create(makeAutomation({ team: newTeamUid(), webhooks: [hook], name: "elsewhere" }))
          expect((yield* store.list(team)).map((x) => x.item.name)).toEqual(["a", "b"])
          expect(yield* store.remove(a.item.id)).toBe(true)
          expect((yield* store.list(team)).map((x) => x.item.name)).toEqual(["b"])
          expect((yield* store.forWebhook(hook)).map((x) => x.item.name)).toEqual(["b", "elsewhere"])
          expect(yield* store.get(AutomationId.make(randomUid()))).toEqual(Option.none())
        }))
    })
  })
}
