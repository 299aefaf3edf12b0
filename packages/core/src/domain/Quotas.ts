/**
 * Per-caller limits on what runs may store and how fast they may be created (issue 15, finding 11;
 * docs/security.md): the size of prompts, titles and follow-up messages, the follow-ups waiting
 * for a run's agent, the size of a run list page, and the runs a team creates per minute. A host
 * sets them with `Quotas` (a reference with these defaults); past one the caller gets 413 or 429
 * naming it, and nothing is stored.
 *
 * Decisions:
 * - Sizes are UTF-8 bytes of the decoded string (what storage keeps), not of its JSON escaping.
 *   Past a size: 413 `payload_too_large`, the message starting with the field.
 * - `promptBytes` bounds a run's `prompt` and `config.base_prompt`, and the prompt and
 *   `agent_config.base_prompt` of a schedule or automation; an automation's prompt is checked again
 *   once its run prompt is filled in (that run is refused past the limit, like any refused
 *   automation).
 * - The run-creation quota is a sliding window per team (core's RateLimit), counted per process:
 *   with several replicas a team can create up to `runsPerMinute` runs a minute on each. Every
 *   path that creates runs counts: the API (child runs through a run token included), schedule
 *   ticks (a per-second schedule would otherwise start 60 runs a minute, and a member can make
 *   many) and webhook deliveries (a sender with the secret, from many addresses). Past it: 429
 *   `rate_limited` with `Retry-After`; a schedule's tick is refused (its `last_spawn_error` says
 *   so); a webhook delivery is answered 429 with nothing logged or started, so its sender can
 *   deliver it again later. Only runs actually written count: the quota of a write that fails (a
 *   duplicate delivery or tick, storage) is given back.
 * - Follow-ups are bounded per run, whoever sends them (docs/security.md): `followupsPerMinute`
 *   and `followupBytesPerMinute` in a sliding minute (per process, like the creation quota), and
 *   `followupsPerRun` and `followupBytesPerRun` in the run's whole life (counted by storage, in the
 *   write that records the follow-up). Past either: 429 `rate_limited` with `Retry-After`; past
 *   the life total the answer is also `retryable: false` (waiting does not help: continue in a new
 *   run with the run's `conversation_id`).
 * - A list page stops before the item that would take the response over `listBytes` (at least
 *   one item is always sent): `has_next_page` is true and `next_cursor` continues after the last
 *   item sent, so a client paging through gets every run, complete, in more pages; items are
 *   never truncated (the SDK's list types stay those of the detail endpoint).
 */
import { Context, Effect } from "effect"
import { PayloadTooLarge } from "./Errors.js"

export interface QuotaSettings {
  /** Bytes of a run's `prompt` and `config.base_prompt`, and of a schedule's or automation's prompt and base prompt. */
  readonly promptBytes: number
  /** Bytes of a run's `title`. */
  readonly titleBytes: number
  /** Bytes of a follow-up message. */
  readonly followupBytes: number
  /** Follow-ups stored for a run and not yet taken by its agent. */
  readonly pendingFollowups: number
  /** Follow-ups a run may receive in any minute, and bytes of their messages (per process). */
  readonly followupsPerMinute: number
  readonly followupBytesPerMinute: number
  /** Follow-ups a run may receive in its whole life, and bytes of their messages. */
  readonly followupsPerRun: number
  readonly followupBytesPerRun: number
  /** Bytes of a run list page's JSON (`GET /agent/runs`). */
  readonly listBytes: number
  /** Runs a team may create per minute, whatever creates them (per process). */
  readonly runsPerMinute: number
}

/**
 * 64 KiB prompts and follow-ups, 1 KiB titles, 100 waiting follow-ups, 60 follow-ups (1 MiB) a
 * minute and 1,000 (16 MiB) in all per run, 1 MiB list pages, 120 runs a minute.
 */
export const defaultQuotas: QuotaSettings = {
  promptBytes: 64 * 1024,
  titleBytes: 1024,
  followupBytes: 64 * 1024,
  pendingFollowups: 100,
  followupsPerMinute: 60,
  followupBytesPerMinute: 1024 * 1024,
  followupsPerRun: 1000,
  followupBytesPerRun: 16 * 1024 * 1024,
  listBytes: 1024 * 1024,
  runsPerMinute: 120
}

/** The quotas in force; `defaultQuotas` unless a host provides others. */
export class Quotas extends Context.Reference<Quotas>()("@agent-runs/core/Quotas", {
  defaultValue: () => defaultQuotas
}) {}

/** The UTF-8 size of a text (a lone surrogate counts 3 bytes, as its replacement character). */
export const utf8Bytes = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

/** Whether `text` is over `limit` bytes of UTF-8 (without counting short and very long texts). */
export const isOverBytes = (text: string, limit: number): boolean =>
  text.length > limit ? true : text.length * 3 <= limit ? false : utf8Bytes(text) > limit

/** 413 naming `field` when `text` is over `limit` bytes of UTF-8. */
export const checkSize = (field: string, text: string | undefined, limit: number): Effect.Effect<void, PayloadTooLarge> =>
  text === undefined || !isOverBytes(text, limit)
    ? Effect.void
    : Effect.fail(
      new PayloadTooLarge({ message: `${field}: ${utf8Bytes(text)} bytes; at most ${limit} are allowed`, limitBytes: limit })
    )

/**
 * Checks the prompt of a run, schedule or automation and the base prompt of its configuration
 * (`configField`: `config` in a run request, `agent_config` in the others): 413 naming the field.
 */
export const checkPromptSizes = (
  quotas: QuotaSettings,
  prompt: string,
  config: { readonly base_prompt?: string | undefined } | undefined,
  configField = "agent_config"
): Effect.Effect<void, PayloadTooLarge> =>
  Effect.zipRight(
    checkSize("prompt", prompt, quotas.promptBytes),
    checkSize(`${configField}.base_prompt`, config?.base_prompt, quotas.promptBytes)
  )

/**
 * How many of `items` (in order) fit in a JSON response of at most `maxBytes` around them, each
 * weighing `sizeOf` bytes plus a separator, with `overhead` bytes for the rest of the document;
 * at least one when there is any.
 */
export const fittingCount = <A>(
  items: ReadonlyArray<A>,
  sizeOf: (item: A) => number,
  maxBytes: number,
  overhead: number
): number => {
  let total = overhead
  for (let i = 0; i < items.length; i++) {
    total += sizeOf(items[i]!) + 1
    if (total > maxBytes) return Math.max(1, i)
  }
  return items.length
}
