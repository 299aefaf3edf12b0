/**
 * Per-caller limits on what runs may store and how fast they may be created (docs/security.md):
 * a prompt (and a config's `base_prompt`) and a follow-up message at most `promptBytes` /
 * `followupBytes` of UTF-8, at most `pendingFollowups` follow-ups waiting for a run's agent, and at
 * most `runsPerMinute` runs created through the API per team (per server process). A host sets
 * them with `Quotas` (a reference with these defaults); past one the caller gets 413 or 429 naming
 * it, and nothing is stored.
 */
import { Context } from "effect"

export interface QuotaSettings {
  /** Bytes of a run's `prompt`, and of `config.base_prompt`. */
  readonly promptBytes: number
  /** Bytes of a follow-up message. */
  readonly followupBytes: number
  /** Follow-ups stored for a run and not yet taken by its agent. */
  readonly pendingFollowups: number
  /** Runs a team may create per minute through `POST /agent/runs` (its agents' child runs included). */
  readonly runsPerMinute: number
}

export const defaultQuotas: QuotaSettings = {
  promptBytes: 64 * 1024,
  followupBytes: 64 * 1024,
  pendingFollowups: 100,
  runsPerMinute: 120
}

/** The quotas in force; `defaultQuotas` unless a host provides others. */
export class Quotas extends Context.Reference<Quotas>()("@agent-runs/core/Quotas", {
  defaultValue: () => defaultQuotas
}) {}

/** The UTF-8 size of a text. */
export const utf8Bytes = (text: string): number => new TextEncoder().encode(text).length
