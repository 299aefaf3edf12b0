/**
 * Wake-ups and changes of what replicas cache on PostgreSQL (docs/execution.md, "How a run flows";
 * docs/reference/access.md, "Token cache"; CacheChanges in storage-sql): `NOTIFY` through the pool, heard by every replica on
 * one `LISTEN` connection of its own, listening on both channels.
 *
 * Decisions:
 * - A replica listens on one connection of its own for as long as the storage layer lives, and
 *   hands each notification to every subscriber in process (a sliding PubSub, as on SQLite).
 *   `PgClient.listen` is not used: each of its streams LISTENs on one shared connection and sends
 *   `UNLISTEN` when it ends, so a run's event stream that closed silenced the replica's claimer
 *   (it then claimed only on its 1 s poll); and it never notices that its connection was lost.
 * - A lost connection (PostgreSQL restarted, the network, `pg_terminate_backend`) is noticed by
 *   its `error` or `end` event and opened again after `RETRY`; once it listens again, every
 *   subscriber of both channels gets one signal, since whatever was sent meanwhile went unheard
 *   (a change unheard would otherwise keep a revoked token or an old webhook secret in a cache until
 *   its TTL). Dispatchers also
 *   poll, so the time without a connection only delays claims.
 * - The layer waits (up to `READY`) for the first `LISTEN`, so that what is created once it is
 *   built is heard.
 * - `notify` is `SELECT pg_notify(…)` through the SQL client, so inside a transaction it goes out
 *   at commit (`pg.notify` sends `NOTIFY channel, $1`, which PostgreSQL refuses). The payload is
 *   not empty: empty payloads are easy to drop by mistake.
 */
import { CacheChanges, Wakeups } from "@agent-runs/storage-sql"
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Context, Deferred, Duration, Effect, Layer, PubSub, Stream } from "effect"
import * as Pg from "pg"

/** The channel every replica listens on for wake-ups. */
export const WAKEUP_CHANNEL = "agent_runs_wakeup"

/**
 * The channel every replica listens on for changes of what it caches (identities, webhooks,
 * automations). It keeps the name it had when it carried identity changes only, so that replicas
 * of either version hear each other during a rolling upgrade.
 */
export const CHANGES_CHANNEL = "agent_runs_identity"

/** The pause before a lost or refused `LISTEN` connection is opened again. */
const RETRY = Duration.seconds(1)

/** How long building the layer waits for the first `LISTEN`. */
const READY = Duration.seconds(5)

const lost = (cause: unknown, message: string) => new SqlError({ cause, message })

/**
 * Wake-ups and identity changes over the SQL client, listening on connections `connect` makes
 * (not yet connected).
 */
export const layer = (connect: () => Pg.Client) =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const hub = yield* Effect.acquireRelease(PubSub.sliding<void>(16), PubSub.shutdown)
      const changesHub = yield* Effect.acquireRelease(PubSub.sliding<void>(16), PubSub.shutdown)
      const ready = yield* Deferred.make<void>()

      // Warned once per outage: while the connection cannot be opened again, each try says so at debug.
      let warned = false

      /** One connection's life: connect, LISTEN, signal each notification; fails when it is lost. */
      const listening = Effect.scoped(Effect.gen(function* () {
        const client = yield* Effect.acquireRelease(
          Effect.suspend(() => {
            const made = connect()
            // An 'error' without a listener would be thrown; `ended` below reports it.
            made.on("error", () => {})
            return Effect.tryPromise({ try: () => made.connect().then(() => made), catch: (e) => lost(e, "cannot connect to LISTEN") })
          }),
          (client) => Effect.promise(() => client.end().catch(() => undefined)).pipe(Effect.timeoutOption(1_000))
        )
        const ended = Effect.async<never, SqlError>((resume) => {
          const onError = (cause: unknown) => resume(Effect.fail(lost(cause, "the LISTEN connection failed")))
          const onEnd = () => resume(Effect.fail(lost(undefined, "the LISTEN connection ended")))
          client.once("error", onError)
          client.once("end", onEnd)
          return Effect.sync(() => {
            client.off("error", onError)
            client.off("end", onEnd)
          })
        })
        client.on("notification", (message) => {
          if (message.channel === WAKEUP_CHANNEL) hub.unsafeOffer(undefined)
          else if (message.channel === CHANGES_CHANNEL) changesHub.unsafeOffer(undefined)
        })
        yield* Effect.tryPromise({
          try: () =>
            client.query(`LISTEN ${Pg.escapeIdentifier(WAKEUP_CHANNEL)}; LISTEN ${Pg.escapeIdentifier(CHANGES_CHANNEL)}`),
          catch: (e) => lost(e, "LISTEN failed")
        })
        // Notifications sent while no connection listened were not heard: look once, forget once.
        hub.unsafeOffer(undefined)
        changesHub.unsafeOffer(undefined)
        if (warned) yield* Effect.logInfo("wake-ups: listening again")
        warned = false
        yield* Deferred.succeed(ready, undefined)
        return yield* ended
      }))

      yield* listening.pipe(
        Effect.catchAll((error) => {
          if (warned) return Effect.logDebug("wake-ups: still not listening", error)
          warned = true
          return Effect.logWarning("wake-ups: not listening; claims wait for the poll until the connection is back", error)
        }),
        Effect.zipRight(Effect.sleep(RETRY)),
        Effect.forever,
        Effect.forkScoped
      )
      yield* Deferred.await(ready).pipe(Effect.timeoutOption(READY))

      return Context.make(Wakeups.Wakeups, {
        notify: Effect.asVoid(sql`SELECT pg_notify(${WAKEUP_CHANNEL}, 'run')`),
        notifyExpression: `pg_notify('${WAKEUP_CHANNEL}', 'run')`,
        signals: Stream.fromPubSub(hub)
      }).pipe(Context.add(CacheChanges.CacheChanges, {
        publish: Effect.asVoid(sql`SELECT pg_notify(${CHANGES_CHANNEL}, 'changed')`),
        signals: Stream.fromPubSub(changesHub)
      }))
    })
  )
