/**
 * The last migration of each release (CHANGELOG.md), newest last: the schema the previous
 * release's code runs on is the one it ended with, and this release's migrations must keep it
 * working (SchemaCompatibility.ts). A release adds its line when it is cut.
 */
export interface Release {
  readonly version: string
  readonly lastMigration: number
}

export const releases: ReadonlyArray<Release> = [
  { version: "0.1.0", lastMigration: 22 }
]

/** The release before this one. */
export const previous: Release = releases[releases.length - 1]!
