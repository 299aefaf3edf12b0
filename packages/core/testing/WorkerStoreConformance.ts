/**
 * The WorkerStore conformance suite (self-hosted workers' presence, docs/workers.md), and the
 * team-scoped claim a worker makes through RunStore. Like the other blocks it shares one database:
 * every test makes its own teams and worker hosts, so nothing depends on what others stored.
 */
import { expect, layer } from "@effect/vitest"
import type { Layer } from "effect"
import { Effect, Option } from "effect"
import type { ExecutionId, PrincipalUid, TeamUid } from "../src/domain/Ids.js"
import { RunStore } from "../src/ports/RunStore.js"
import type { WorkerHeartbeat } from "../src/ports/WorkerStore.js"
import { WorkerStore } from "../src/ports/WorkerStore.js"
import type { RunState } from "../src/domain/RunState.js"
import { creationEvents, makeRun, uid, uuid } from "./RunStoreConformance.js"
import type { Stores } from "./Stores.js"

/** A fixed moment the examples count from (2026-01-01). */
const T0 = 1_767_225_600_000
const STALE = 15_000

const beat = (team: TeamUid, worker_id: string, now: number, facts: Partial<WorkerHeartbeat> = {}): WorkerHeartbeat => ({
  team_uid: team,
  worker_id,
  display_name: worker_id,
  labels: [],
  capacity: 1,
  version: null,
  protocol: 3,
  now,
  expires_at: now + STALE,
  ...facts
})

const connectedIds = (team: TeamUid, now: number) =>
  Effect.flatMap(WorkerStore, (store) => Effect.map(store.connected(team, now), (ws) => ws.map((w) => w.worker_id)))

export const workerStoreConformance = <E>(storeLayer: Layer.Layer<Stores, E>): void => {
  layer(storeLayer, { excludeTestServices: true, timeout: "60 seconds" })("WorkerStore", (it) => {
    it.effect("a heartbeat makes a worker connected with every field as sent; none before", () =>
      Effect.gen(function*() {
        const store = yield* WorkerStore
        const team = uid<TeamUid>()
        expect(yield* store.connected(team, T0)).toEqual([])
        const labels = ["linux", "gpu", "ünïcødé ✓", ""]
        yield* store.heartbeat(beat(team, "w1", T0, { display_name: "Build box «1»", labels, capacity: 7, version: "0.2.0", protocol: 4 }))
        expect(yield* store.connected(team, T0 + 1)).toEqual([{
          team_uid: team,
          worker_id: "w1",
          display_name: "Build box «1»",
          labels,
          capacity: 7,
          version: "0.2.0",
          protocol: 4,
          connected_at: T0,
          last_heartbeat_at: T0,
          expires_at: T0 + STALE,
          active_runs: 0
        }])
      }))

    it.effect("a heartbeat before expiry keeps the connection and takes the new facts (an upsert, one row)", () =>
      Effect.gen(function*() {
        const store = yield* WorkerStore
        const team = uid<TeamUid>()
        yield* store.heartbeat(beat(team, "w1", T0, { display_name: "old", labels: ["a"], capacity: 1 }))
        yield* store.heartbeat(beat(team, "w1", T0 + 5_000, { display_name: "new", labels: ["b", "c"], capacity: 3, version: "0.3.0", protocol: 4 }))
        const [w, ...rest] = yield* store.connected(team, T0 + 6_000)
        expect(rest).toEqual([])
        expect(w).toMatchObject({
          display_name: "new",
          labels: ["b", "c"],
          capacity: 3,
          version: "0.3.0",
          protocol: 4,
          connected_at: T0,
          last_heartbeat_at: T0 + 5_000,
          expires_at: T0 + 5_000 + STALE
        })
      }))

    it.effect("connected until its expiry, excluded from it on; a heartbeat after expiry starts a new connection", () =>
      Effect.gen(function*() {
        const store = yield* WorkerStore
        const team = uid<TeamUid>()
        yield* store.heartbeat(beat(team, "w1", T0))
        expect(yield* connectedIds(team, T0 + STALE - 1)).toEqual(["w1"])
        expect(yield* connectedIds(team, T0 + STALE)).toEqual([])
        expect(yield* connectedIds(team, T0 + 10 * STALE)).toEqual([])
        // A heartbeat exactly at the expiry starts a new connection too.
        yield* store.heartbeat(beat(team, "w1", T0 + STALE))
        const [w] = yield* store.connected(team, T0 + STALE)
        expect(w).toMatchObject({ connected_at: T0 + STALE, last_heartbeat_at: T0 + STALE })
      }))

    it.effect("lists only the team's workers, by worker id in code-point order", () =>
      Effect.gen(function*() {
        const store = yield* WorkerStore
        const team = uid<TeamUid>()
        const other = uid<TeamUid>()
        for (const id of ["b-worker", "B-worker", "a.1", "a-1", "a_1", "A"]) yield* store.heartbeat(beat(team, id, T0))
        yield* store.heartbeat(beat(other, "a-1", T0))
        yield* store.heartbeat(beat(other, "only-there", T0))
        expect(yield* connectedIds(team, T0)).toEqual(["A", "B-worker", "a-1", "a.1", "a_1", "b-worker"])
        expect(yield* connectedIds(other, T0)).toEqual(["a-1", "only-there"])
        // The same id in two teams is two workers: one heartbeat does not touch the other.
        yield* store.heartbeat(beat(other, "a-1", T0 + 20_000, { capacity: 9 }))
        const mine = (yield* store.connected(team, T0)).find((w) => w.worker_id === "a-1")
        expect(mine).toMatchObject({ capacity: 1, last_heartbeat_at: T0 })
      }))

    it.effect("disconnect ends the connection (true), then there is none (false), its latest heartbeat kept; the other team's stays", () =>
      Effect.gen(function*() {
        const store = yield* WorkerStore
        const team = uid<TeamUid>()
        const other = uid<TeamUid>()
        yield* store.heartbeat(beat(team, "w1", T0))
        yield* store.heartbeat(beat(team, "w2", T0))
        yield* store.heartbeat(beat(other, "w1", T0))
        expect(yield* store.lastHeartbeat(team, "never")).toEqual(Option.none())
        expect(yield* store.disconnect(team, "w1", T0)).toBe(true)
        expect(yield* store.disconnect(team, "w1", T0)).toBe(false)
        expect(yield* store.disconnect(team, "never", T0)).toBe(false)
        expect(yield* store.lastHeartbeat(team, "w1")).toEqual(Option.some(T0))
        expect(yield* connectedIds(team, T0)).toEqual(["w2"])
        expect(yield* connectedIds(other, T0)).toEqual(["w1"])
        // It connects again with a new connection.
        yield* store.heartbeat(beat(team, "w1", T0 + 1_000))
        expect((yield* store.connected(team, T0 + 1_000)).find((w) => w.worker_id === "w1")).toMatchObject({ connected_at: T0 + 1_000 })
      }))

    it.effect("active_runs counts the team's CLAIMED and INPROGRESS runs addressed to the worker", () =>
      Effect.gen(function*() {
        const store = yield* WorkerStore
        const runs = yield* RunStore
        const team = uid<TeamUid>()
        const other = uid<TeamUid>()
        const creator = uid<PrincipalUid>()
        const host = `host-${uid()}`
        const facts: ReadonlyArray<readonly [TeamUid, RunState, string]> = [
          [team, "CLAIMED", host],
          [team, "INPROGRESS", host],
          [team, "INPROGRESS", host],
          [team, "QUEUED", host],
          [team, "PENDING", host],
          [team, "SUCCEEDED", host],
          [team, "FAILED", host],
          [team, "INPROGRESS", `${host}-2`],
          [other, "INPROGRESS", host]
        ]
        const made = facts.map(([t, state, worker_host]) => makeRun({ team: t, creator, state, worker_host }))
        yield* runs.create(made.map((run) => ({ run, events: creationEvents(run) })))
        yield* store.heartbeat(beat(team, host, T0))
        yield* store.heartbeat(beat(team, `${host}-2`, T0))
        yield* store.heartbeat(beat(team, `${host}-idle`, T0))
        yield* store.heartbeat(beat(other, host, T0))
        const count = (t: TeamUid) =>
          Effect.map(store.connected(t, T0), (ws) => Object.fromEntries(ws.map((w) => [w.worker_id, w.active_runs])))
        expect(yield* count(team)).toEqual({ [host]: 3, [`${host}-2`]: 1, [`${host}-idle`]: 0 })
        expect(yield* count(other)).toEqual({ [host]: 1 })
      }))

    it.effect("a claim with a team takes only that team's QUEUED runs of the worker host, oldest first", () =>
      Effect.gen(function*() {
        const runs = yield* RunStore
        const team = uid<TeamUid>()
        const other = uid<TeamUid>()
        const creator = uid<PrincipalUid>()
        const host = `host-${uid()}`
        const t = 1_700_000_600_000
        const others = makeRun({ team: other, creator, state: "QUEUED", worker_host: host, created_at: t - 10 })
        const older = makeRun({ team, creator, state: "QUEUED", worker_host: host, created_at: t })
        const newer = makeRun({ team, creator, state: "QUEUED", worker_host: host, created_at: t + 1 })
        const hostless = makeRun({ team, creator, state: "QUEUED", created_at: t - 20 })
        yield* runs.create([others, older, newer, hostless].map((run) => ({ run, events: creationEvents(run) })))
        const claim = () =>
          Effect.map(
            runs.claim({ worker_host: host, team_uid: team, execution_id: uuid<ExecutionId>(), now: T0, lease_ms: 60_000 }),
            Option.map((r) => r.item.run_id)
          )
        expect(yield* claim()).toEqual(Option.some(older.item.run_id))
        expect(yield* claim()).toEqual(Option.some(newer.item.run_id))
        expect(yield* claim()).toEqual(Option.none())
        const left = yield* runs.get(others.item.run_id)
        expect(Option.map(left, (r) => r.item.state)).toEqual(Option.some("QUEUED"))
        // Without the team, the host's claim reaches the other team's run (the server's own claims).
        const any = yield* runs.claim({ worker_host: host, execution_id: uuid<ExecutionId>(), now: T0, lease_ms: 60_000 })
        expect(Option.map(any, (r) => r.item.run_id)).toEqual(Option.some(others.item.run_id))
      }))

    it.effect("runs waiting for absent workers: QUEUED, old enough, and their worker of the team not seen since", () =>
      Effect.gen(function*() {
        const runs = yield* RunStore
        const store = yield* WorkerStore
        const team = uid<TeamUid>()
        const other = uid<TeamUid>()
        const creator = uid<PrincipalUid>()
        const [ghost, seen, away] = [`ghost-${uid()}`, `seen-${uid()}`, `away-${uid()}`]
        const t = T0 - 60_000
        const old = makeRun({ team, creator, state: "QUEUED", worker_host: ghost, created_at: t })
        const older = makeRun({ team, creator, state: "QUEUED", worker_host: away, created_at: t - 1 })
        const young = makeRun({ team, creator, state: "QUEUED", worker_host: ghost, created_at: T0 + 1 })
        const served = makeRun({ team, creator, state: "QUEUED", worker_host: seen, created_at: t })
        const claimed = makeRun({ team, creator, state: "CLAIMED", worker_host: ghost, created_at: t })
        const local = makeRun({ team, creator, state: "QUEUED", created_at: t })
        // The other team's worker of the same id does not count for this team's run.
        const foreign = makeRun({ team: other, creator, state: "QUEUED", worker_host: seen, created_at: t })
        yield* runs.create([old, older, young, served, claimed, local, foreign].map((run) => ({ run, events: creationEvents(run) })))
        // "seen" sent a heartbeat after T0, "away" at T0; "ghost" never did.
        yield* store.heartbeat(beat(team, seen, T0 + 1))
        yield* store.heartbeat(beat(team, away, T0))
        const waiting = (before: number) =>
          Effect.map(
            runs.waitingForWorkers(before, 10_000),
            (rs) => rs.filter((r) => r.team_uid === team || r.team_uid === other).map((r) => r.item.run_id)
          )
        // Oldest first (then by run id).
        const sameAge = [old.item.run_id, foreign.item.run_id].sort()
        expect(yield* waiting(T0)).toEqual([older.item.run_id, ...sameAge])
        expect(yield* waiting(t - 2)).toEqual([])
        // A moment later the young run is old enough, and "seen" has been quiet since.
        expect(new Set(yield* waiting(T0 + 1))).toEqual(new Set([older, old, foreign, young, served].map((r) => r.item.run_id)))
      }))

    it.effect("a worker id is bound to its first principal, across disconnects, moves only from a named holder or once released", () =>
      Effect.gen(function*() {
        const store = yield* WorkerStore
        const team = uid<TeamUid>()
        const other = uid<TeamUid>()
        const [a, b, c] = [uid<PrincipalUid>(), uid<PrincipalUid>(), uid<PrincipalUid>()]
        expect(yield* store.bind(team, "w1", a, T0)).toBe(a)
        expect(yield* store.bind(team, "w1", b, T0 + 1)).toBe(a)
        // Another team's id of the same name is its own.
        expect(yield* store.bind(other, "w1", b, T0)).toBe(b)
        yield* store.heartbeat(beat(team, "w1", T0))
        yield* store.disconnect(team, "w1", T0 + 1)
        expect(yield* store.bind(team, "w1", b, T0 + 2)).toBe(a)
        // A move from someone who is not the holder changes nothing; from the holder it moves.
        expect(yield* store.bind(team, "w1", b, T0 + 3, c)).toBe(a)
        expect(yield* store.bind(team, "w1", b, T0 + 4, a)).toBe(b)
        expect(yield* store.bind(team, "w1", a, T0 + 5)).toBe(b)
        // Released: the next caller binds it; releasing what is not bound says so.
        expect(yield* store.release(team, "w1")).toBe(true)
        expect(yield* store.release(team, "w1")).toBe(false)
        expect(yield* store.bind(team, "w1", c, T0 + 6)).toBe(c)
        expect(yield* store.bind(other, "w1", a, T0 + 6)).toBe(b)
        // Concurrent first binds: one wins, all see it.
        const holders = yield* Effect.all([a, b, c].map((p) => store.bind(team, "w2", p, T0)), { concurrency: "unbounded" })
        expect(new Set(holders).size).toBe(1)
      }))
  })
}
