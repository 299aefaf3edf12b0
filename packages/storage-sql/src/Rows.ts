/**
 * Column codecs shared by every store, so rows decode the same on both dialects: PostgreSQL
 * returns BIGINT as a string and BOOLEAN as a boolean, SQLite returns numbers for both; JSON
 * documents are stored as TEXT on both.
 */
import { Schema } from "effect"

/** An integer column: BIGINT (a string on PostgreSQL) or INTEGER. */
export const Integer = Schema.Union(Schema.Number, Schema.NumberFromString)

/** Epoch milliseconds in a BIGINT column. */
export const Millis = Integer

/** A boolean in a BOOLEAN (PostgreSQL) or INTEGER 0/1 (SQLite) column. */
export const Bool = Schema.transform(Schema.Union(Schema.Boolean, Schema.Number), Schema.Boolean, {
  strict: true,
  decode: (v) => v === true || v === 1,
  encode: (b) => b
})

