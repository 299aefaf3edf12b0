/** Text output of the API commands: tables, dates, durations, a conversation as lines. */
import type { Conversation } from "@agent-runs/core"
import { DateTime } from "effect"

/** A table: a header row and rows, columns padded to their widest cell (the last one is not padded). */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  ").trimEnd()
  return [line(header), ...rows.map(line)].join("\n")
}

/** A date as RFC 3339 without milliseconds, or "-". */
export const date = (value: DateTime.Utc | null | undefined): string =>
  value === null || value === undefined ? "-" : DateTime.formatIso(value).replace(/\.\d{3}Z$/, "Z")

/** A duration in milliseconds as `1h2m3s`, `2m3s` or `3s`. */
export const elapsed = (ms: number): string => {
  const total = Math.max(0, Math.floor(ms / 1000))
  const hours = Math.floor(total / 3600)
  const minutes = Math.floor((total % 3600) / 60)
  const seconds = total % 60
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`
  if (minutes > 0) return `${minutes}m${seconds}s`
  return `${seconds}s`
}

/** A text cut to `max` characters, on one line. */
export const short = (text: string, max = 60): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`
}

/** One block of a conversation, with the role of its message. */
export interface ConversationBlock {
  readonly role: Conversation.MessageRole
  readonly block: Conversation.ContentBlock
}

/** Every block of a conversation's steps, in order (a step's messages, then its nested steps). */
export const blocks = (steps: ReadonlyArray<Conversation.ConversationStep>): Array<ConversationBlock> =>
  steps.flatMap((step) => [
    ...step.messages.flatMap((message) => message.content.map((block) => ({ role: message.role, block }))),
    ...blocks(step.steps)
  ])

const json = (value: unknown, max: number): string => short(JSON.stringify(value) ?? "null", max)

/** A conversation block as text: `role: text`, `→ action`, `← result`, `• event`. */
export const block = ({ block, role }: ConversationBlock): string => {
  switch (block.type) {
    case "text":
      return `${role}: ${block.text}`
    case "action":
      return `→ ${block.name} ${json(block.input, 200)}`
    case "action_result":
      return `← ${block.name} ${block.state} ${json(block.output, 200)}`
    case "event":
      return `• ${block.name} ${json(block.data, 200)}`
  }
}
