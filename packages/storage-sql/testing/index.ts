/**
 * Test support shared by the dialect adapters: the upgrade-compatibility tests
 * (SchemaCompatibility.ts), run on a fresh database of each dialect.
 */
import { expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, type Scope } from "effect"
import { Migrations, Releases, SchemaCompatibility } from "../src/index.js"

/** Runs an effect on a fresh, empty database of the dialect (for the test's scope). */
export type OnFreshDatabase = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.Effect<A, unknown, Scope.Scope>

/** This release's migrations keep the previous release's schema working; the check can fail; a rollback finds nothing to undo. */
export const upgradeCompatibilitySuite = (onFreshDatabase: OnFreshDatabase): void => {
  it.scoped(`the migrations since release ${Releases.previous.version} only expand its schema`, () =>
    Effect.gen(function* () {
      expect(yield* onFreshDatabase(SchemaCompatibility.checkUpgradeFrom(Releases.previous))).toEqual([])
    }))

  it.scoped("the check sees a renamed column, a new unique index over old columns and a dropped trigger on this database", () =>
    Effect.gen(function* () {
      const { before, problems } = yield* onFreshDatabase(Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* Migrations.migrateThrough(Releases.previous.lastMigration)
        const before = yield* SchemaCompatibility.describe
        yield* sql`ALTER TABLE outbound_webhooks RENAME COLUMN url TO endpoint_url`
        yield* sql`ALTER TABLE teams ADD COLUMN region TEXT NOT NULL DEFAULT 'eu'`
        yield* sql`CREATE TABLE runs_next (run_id TEXT NOT NULL)`
        yield* sql`CREATE UNIQUE INDEX runs_one_per_moment ON runs (team_uid, created_at)`
        // Harmless: a unique index that takes in a column the previous release never sets.
        yield* sql`CREATE UNIQUE INDEX teams_region ON teams (region, uid)`
        const trigger = before.triggers[0]!
        yield* sql.onDialectOrElse({
          pg: () => sql`DROP TRIGGER ${sql(trigger.name)} ON ${sql(trigger.table)}`,
          orElse: () => sql`DROP TRIGGER ${sql(trigger.name)}`
        })
        return { before, problems: SchemaCompatibility.incompatibilities(before, yield* SchemaCompatibility.describe) }
      }))
      const trigger = before.triggers[0]!
      expect(problems).toEqual([
        "column outbound_webhooks.url was dropped or renamed",
        "column outbound_webhooks.endpoint_url was added NOT NULL without a default: the previous release's INSERTs leave it out",
        "unique index runs_one_per_moment on runs(team_uid,created_at) is new over columns the previous release writes: its INSERTs may conflict",
        `trigger ${trigger.name} on ${trigger.table} was dropped`
      ])
    }))

  it.scoped("rolled back, the previous release's migrations find nothing to do on this release's schema", () =>
    Effect.gen(function* () {
      const rerun = yield* onFreshDatabase(Effect.zipRight(Migrations.migrate, Migrations.migrateThrough(Releases.previous.lastMigration)))
      expect(rerun).toEqual([])
    }))
}
