/** The sender's address behind trusted proxies: the address and CIDR parser, and the walk of X-Forwarded-For. */
import { describe, expect, it } from "vitest"
import fc from "fast-check"
import { normalizeAddress } from "../src/AddressSet.js"
import { clientAddress, trustedProxies } from "../src/Ingress.js"

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((parts) => parts.join("."))
const ipv6 = fc.array(fc.nat(0xffff), { minLength: 8, maxLength: 8 }).map((groups) => groups.map((g) => g.toString(16)).join(":"))

const toInt = (a: string) => a.split(".").reduce((acc, p) => acc * 256 + Number(p), 0)
/** An address of `ipv6` (all 8 groups) as a 128-bit number. */
const toBigInt = (a: string) => a.split(":").reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n)
/** The compressed form browsers write (`2001:db8::1`), from WHATWG URL serialization. */
const compressed = (a: string) => new URL(`http://[${a}]/`).hostname.slice(1, -1)
const fromInt = (n: number) => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join(".")

describe("trusted proxies", () => {
  it("an IPv4 range contains exactly the addresses sharing its prefix", () => {
    fc.assert(
      fc.property(ipv4, ipv4, fc.integer({ min: 0, max: 32 }), (network, probe, prefix) => {
        const range = trustedProxies([`${network}/${prefix}`])
        const mask = prefix === 0 ? 0 : 2 ** 32 - 2 ** (32 - prefix)
        const same = prefix === 0 || (toInt(network) & mask) >>> 0 === (toInt(probe) & mask) >>> 0
        expect(range.contains(probe)).toBe(same)
        expect(range.contains(network)).toBe(true)
      })
    )
  })

  it("an IPv6 address in full, compressed, or with a prefix", () => {
    fc.assert(
      fc.property(ipv6, (address) => {
        expect(trustedProxies([address]).contains(address)).toBe(true)
        expect(trustedProxies([`${address}/64`]).contains(address)).toBe(true)
        expect(trustedProxies([address]).contains("192.0.2.1")).toBe(false)
      })
    )
    const range = trustedProxies(["2001:db8::/32", "::1"])
    expect(range.contains("2001:db8:ffff::1")).toBe(true)
    expect(range.contains("2001:db9::1")).toBe(false)
    expect(range.contains("0:0:0:0:0:0:0:1")).toBe(true)
    expect(range.contains("::ffff:127.0.0.1")).toBe(false)
  })

  it("an IPv6 range contains exactly the addresses sharing its prefix, whatever their spelling", () => {
    fc.assert(
      fc.property(ipv6, ipv6, fc.integer({ min: 0, max: 128 }), (network, probe, prefix) => {
        const range = trustedProxies([`${compressed(network)}/${prefix}`])
        const shift = BigInt(128 - prefix)
        const same = toBigInt(network) >> shift === toBigInt(probe) >> shift
        expect(range.contains(probe)).toBe(same)
        expect(range.contains(compressed(probe).toUpperCase())).toBe(same)
        expect(range.contains(network)).toBe(true)
      })
    )
  })

  it("checks an address against the ranges of its own family only", () => {
    const v6 = trustedProxies(["::/0", "::ffff:0:0/96"])
    expect(v6.contains("2001:db8::1")).toBe(true)
    expect(v6.contains("10.0.0.1")).toBe(false)
    expect(v6.contains("::ffff:10.0.0.1")).toBe(false)
    const v4 = trustedProxies(["10.0.0.0/8", "::ffff:192.0.2.1", "fe80::1%eth0"])
    expect(v4.contains("::ffff:10.1.2.3")).toBe(true)
    expect(v4.contains("::FFFF:10.1.2.3")).toBe(true)
    expect(v4.contains("192.0.2.1")).toBe(true)
    expect(v4.contains("fe80::1%eth1")).toBe(true)
    expect(v4.contains("::a01:203")).toBe(false)
    expect(v4.contains("11.0.0.1")).toBe(false)
    expect(v4.contains("not an address")).toBe(false)
  })

  it("refuses malformed entries, naming them", () => {
    for (const bad of ["10.0.0.0/33", "nope", "10.0.0.1/x", "::1/129", "", "10.0.0.0/", "10.0.0.0/8/9", "10.0.0.0/+8", "10.0.0.0/-1", "/8", "::ffff:10.0.0.0/104"]) {
      expect(() => trustedProxies([bad])).toThrow(/AGENT_RUNS_TRUSTED_PROXIES/)
    }
  })

  it("IPv4-mapped IPv6 peers count as IPv4", () => {
    fc.assert(fc.property(ipv4, (a) => {
      expect(normalizeAddress(`::ffff:${a}`)).toBe(a)
      // As URLs write it: `[::ffff:7f00:1]`.
      expect(normalizeAddress(new URL(`http://[::ffff:${a}]/`).hostname)).toBe(a)
      expect(normalizeAddress(`0:0:0:0:0:ffff:${a}`)).toBe(a)
    }))
  })
})

describe("clientAddress", () => {
  it("ignores X-Forwarded-For unless the peer is a trusted proxy", () => {
    fc.assert(
      fc.property(ipv4, fc.array(ipv4), (peer, forwarded) => {
        expect(clientAddress(peer, forwarded.join(", "), trustedProxies([]))).toBe(peer)
      })
    )
  })

  it("behind trusted proxies: the rightmost address that is not one of them", () => {
    fc.assert(
      fc.property(ipv4, fc.array(fc.nat(255), { maxLength: 4 }), fc.array(ipv4, { maxLength: 3 }), (sender, hops, before) => {
        // Proxies live in 10.0.0.0/8; the sender (and anything it claims before itself) outside it.
        const outside = (a: string) => (toInt(a) >>> 24) === 10 ? fromInt(toInt(a) ^ 0x01000000) : a
        const proxies = hops.map((h) => `10.0.0.${h}`)
        const header = [...before.map(outside), outside(sender), ...proxies].join(", ")
        expect(clientAddress("10.1.2.3", header, trustedProxies(["10.0.0.0/8"]))).toBe(outside(sender))
      })
    )
  })

  it("every hop trusted: the leftmost; a malformed hop ends the walk at the hop that added it", () => {
    const trusted = trustedProxies(["10.0.0.0/8"])
    expect(clientAddress("10.0.0.1", "10.0.0.2, 10.0.0.3", trusted)).toBe("10.0.0.2")
    expect(clientAddress("10.0.0.1", "198.51.100.1, garbage, 10.0.0.3", trusted)).toBe("10.0.0.3")
    expect(clientAddress("::ffff:10.0.0.1", "203.0.113.9", trusted)).toBe("203.0.113.9")
  })
})
