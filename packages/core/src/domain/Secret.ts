/**
 * Team secrets (`/agent/secrets`; docs/reference/api.md): named values stored encrypted and never returned.
 * Only names and times are listed. A name is 1–128 characters of letters, digits and `_`, not
 * starting with a digit, so it is safe in a URL path and usable as an environment variable name.
 */
import { Schema } from "effect"
import { Timestamp } from "./Common.js"

const secretNamePattern = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/

/** The largest secret value accepted (characters). */
export const MAX_SECRET_VALUE_LENGTH = 65536

/** The name of a team secret. */
export const SecretName = Schema.String.pipe(
  Schema.filter(
    (s) => secretNamePattern.test(s) || "must be 1-128 letters, digits or '_', not starting with a digit",
    { description: "a secret name", jsonSchema: { pattern: secretNamePattern.source } }
  ),
  Schema.brand("SecretName")
).annotations({
  identifier: "SecretName",
  arbitrary: () => (fc) => fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,20}$/).map((s) => s as SecretName)
})
export type SecretName = typeof SecretName.Type

/** What is wrong when a named team secret does not exist (the words of every check of a secret's name). */
export const noSuchSecret = (name: SecretName): string => `no team secret named ${name}; put it with PUT /agent/secrets/${name} first`

/** A secret as listed: its name and times, never its value. */
export const SecretMetadata = Schema.Struct({
  name: SecretName,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "SecretMetadata" })
export type SecretMetadata = typeof SecretMetadata.Type

/** `PUT /agent/secrets/{name}`: the value, held as `Redacted` once decoded. */
export class PutSecretRequest extends Schema.Class<PutSecretRequest>("PutSecretRequest")({
  value: Schema.Redacted(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_SECRET_VALUE_LENGTH)))
}) {}

/** `GET /agent/secrets`. */
export class ListSecretsResponse extends Schema.Class<ListSecretsResponse>("ListSecretsResponse")({
  secrets: Schema.Array(SecretMetadata)
}) {}
