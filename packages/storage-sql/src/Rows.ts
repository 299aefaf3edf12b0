/**
 * Column codecs shared by every store, so rows decode the same on both dialects: PostgreSQL
 * returns BIGINT as a string and BOOLEAN as a boolean, SQLite returns numbers for both; JSON
 * documents are stored as TEXT on both.
 */
import { Schema } from "effect"

/** Epoch milliseconds in a BIGINT column. */
export const Millis = Schema.Union(Schema.Number, Schema.NumberFromString)

/** A boolean in a BOOLEAN (PostgreSQL) or INTEGER 0/1 (SQLite) column. */
export const Bool = Schema.transform(Schema.Union(Schema.Boolean, Schema.Number), Schema.Boolean, {
  strict: true,
  decode: (v) => v === true || v === 1,
  encode: (b) => b
})

/** A JSON document in a TEXT column, decoded with the given schema. */
export const JsonText = <A, I, R>(schema: Schema.Schema<A, I, R>) => Schema.parseJson(schema)

