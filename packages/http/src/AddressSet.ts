/**
 * Sets of IP addresses and CIDR ranges over `node:net`'s `BlockList`: the proxies whose
 * `X-Forwarded-For` is believed (Ingress.ts), and the addresses outbound webhooks may not reach and
 * the ranges an administrator allows them anyway (OutboundHttpSender.ts).
 *
 * An address is checked against the ranges of its own family only: an IPv4-mapped IPv6 address
 * (`::ffff:10.0.0.1`) counts as the IPv4 address it maps, and an IPv6 range (even `::/0`) never
 * covers an IPv4 address.
 */
import { BlockList, isIP } from "node:net"

/** An IPv4-mapped IPv6 address as URLs serialize IPv6 (WHATWG: hex groups, the longest zero run compressed). */
const MAPPED = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/

/** An IPv6 address in the one form URLs serialize it. */
const canonicalIpv6 = (address: string): string => new URL(`http://[${address}]/`).hostname.slice(1, -1)

/**
 * An address without brackets or zone, lower case; an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`,
 * `::ffff:a00:1`, `0:0:0:0:0:ffff:a00:1`) as the IPv4 address it maps.
 */
export const normalizeAddress = (address: string): string => {
  const bare = address.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "")
  if (isIP(bare) !== 6) return bare
  const mapped = MAPPED.exec(canonicalIpv6(bare))
  if (mapped === null) return bare
  const high = parseInt(mapped[1]!, 16)
  const low = parseInt(mapped[2]!, 16)
  return [high >> 8, high & 255, low >> 8, low & 255].join(".")
}

type Family = "ipv4" | "ipv6"

/** The family of an address as `BlockList` names it; undefined when it is not an IP address. */
export const familyOf = (address: string): Family | undefined => {
  const family = isIP(address)
  return family === 4 ? "ipv4" : family === 6 ? "ipv6" : undefined
}

/** An address, optionally followed by `/` and a prefix length in decimal. */
const ENTRY = /^([^/]+)(?:\/(\d{1,3}))?$/

/** Adds an address or CIDR range to the rules of its family; throws naming a malformed entry and its setting. */
const addEntry = (rules: Record<Family, BlockList>, entry: string, setting: string): void => {
  const parts = ENTRY.exec(entry.trim())
  // An entry's IPv4-mapped form is read only when dotted (`::ffff:10.0.0.1`): a range written in hex
  // groups (`::ffff:0:0/96`) stays an IPv6 range, as settings written before have it.
  const written = parts === null ? "" : parts[1]!.trim().toLowerCase().replace(/%.*$/, "")
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(written)
  const address = dotted === null ? written : dotted[1]!
  const family = familyOf(address)
  const width = family === "ipv4" ? 32 : 128
  const prefix = parts?.[2] === undefined ? width : Number(parts[2])
  if (family === undefined || prefix > width) {
    throw new Error(`${setting}: ${JSON.stringify(entry)} is not an IP address or CIDR range`)
  }
  rules[family].addSubnet(address, prefix, family)
}

/** A membership test over addresses. */
export interface AddressSet {
  readonly contains: (address: string) => boolean
}

/** The set of `spec`'s addresses and ranges; throws naming a malformed entry and `setting`. */
export const addressSet = (spec: ReadonlyArray<string>, setting: string): AddressSet => {
  const rules: Record<Family, BlockList> = { ipv4: new BlockList(), ipv6: new BlockList() }
  for (const entry of spec) addEntry(rules, entry, setting)
  return {
    contains: (address) => {
      const normalized = normalizeAddress(address)
      const family = familyOf(normalized)
      return family !== undefined && rules[family].check(normalized, family)
    }
  }
}
