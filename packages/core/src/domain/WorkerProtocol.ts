/**
 * The worker protocol's versions, and how a server and a self-hosted worker agree on one
 * (docs/workers.md, "Versions"). Each minor release speaks its own protocol and the previous minor
 * release's, so a server and a worker one minor release apart work together during an upgrade:
 * they speak the older one's protocol. Further apart, the side that finds no common protocol
 * refuses (422) with both versions named.
 *
 * | protocol | release | what it adds |
 * | 3 | 0.1 | the worker enforces the run's budget (`WorkerClaim.descendants_committed`) |
 * | 4 | 0.2 | a stopping worker hands its runs back to the queue at the same attempt (`HandOver`) |
 */
import { Option } from "effect"

/** The protocols one side speaks, oldest to newest. */
export interface ProtocolRange {
  readonly oldest: number
  readonly newest: number
}

/** The newest protocol this release speaks. */
export const WORKER_PROTOCOL = 4

/** The oldest this release still speaks: the previous minor release's. */
export const OLDEST_WORKER_PROTOCOL = 3

/** The protocols this release speaks. */
export const spoken: ProtocolRange = { oldest: OLDEST_WORKER_PROTOCOL, newest: WORKER_PROTOCOL }

/** A side that says only the protocol it speaks (a claim's `protocol`). */
export const only = (protocol: number): ProtocolRange => ({ oldest: protocol, newest: protocol })

/**
 * What the other side speaks by what its heartbeat (or the answer to it) says: one of release 0.1,
 * from before the negotiation, says nothing and speaks protocol 3 alone.
 */
export const rangeSaid = (answer: { readonly protocol?: number | undefined; readonly oldest_protocol?: number | undefined }) =>
  answer.protocol === undefined ? only(3) : { oldest: answer.oldest_protocol ?? answer.protocol, newest: answer.protocol }

/** The protocol two sides agree on: the lower of their newest, when both still speak it. */
export const agree = (ours: ProtocolRange, theirs: ProtocolRange): Option.Option<number> => {
  const agreed = Math.min(ours.newest, theirs.newest)
  return agreed >= Math.max(ours.oldest, theirs.oldest) ? Option.some(agreed) : Option.none()
}

/** How a range reads in an error: `3` or `3–4`. */
export const describe = (range: ProtocolRange) => range.oldest === range.newest ? `${range.newest}` : `${range.oldest}–${range.newest}`

/** Whether a stopping worker may hand its runs back (`HandOver`): protocol 4 on. */
export const handsOver = (protocol: number): boolean => protocol >= 4
