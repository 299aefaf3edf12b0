/**
 * `@agent-runs/client` following a run's live events through a loopback proxy that cuts every
 * connection in the middle of an event, after a few whole ones, while the run goes on (the
 * bundled server in-process, SQLite, the scripted agent). Must happen: the client reconnects each
 * time with `Last-Event-ID` naming the last whole event it received, and what it yields is the
 * run's events exactly once each, in order (every id is one step after the one before: no gap,
 * no duplicate), the same as a reading of the whole stream once the run ended.
 */
import { createClient, type RunEvent } from "@agent-runs/client"
import { type AddressInfo, connect, createServer, type Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeTeam, suiteServer } from "./harness.js"

const server = suiteServer("sqlite", {}, { concurrency: 2 })

/** Whole events each connection passes before it is cut. */
const EVENTS_PER_CONNECTION = 3
/** What starts the `event` line of each event the server sends (after its `id` line, or the HTTP chunk's size line for `end`). */
const EVENT_MARKER = "\nevent: "

interface CutProxy {
  readonly url: string
  /** The `Last-Event-ID` of each connection (undefined: none), in order. */
  readonly lastEventIds: Array<string | undefined>
  /** When each cut happened (Date.now()). */
  readonly cuts: Array<number>
  readonly close: () => Promise<void>
}

/**
 * A TCP proxy to `target` that passes `EVENTS_PER_CONNECTION` whole events of each answer, then
 * the start of the next one (its `id` line and a few bytes), and destroys both connections.
 */
const startCutProxy = async (target: URL): Promise<CutProxy> => {
  const lastEventIds: Array<string | undefined> = []
  const cuts: Array<number> = []
  const sockets = new Set<Socket>()
  const proxy = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname)
    sockets.add(client).add(upstream)
    let head = ""
    let seen = 0
    let cutting = false
    const cut = () => {
      cuts.push(Date.now())
      client.destroy()
      upstream.destroy()
    }
    client.on("data", (data: Buffer) => {
      if (head === "") {
        head = data.toString("latin1")
        lastEventIds.push(/^last-event-id: *(.*)$/im.exec(head)?.[1]?.trim())
      }
      upstream.write(data)
    })
    // The end of the previous data, so that a marker split between two reads is still seen.
    let carry = ""
    upstream.on("data", (data: Buffer) => {
      if (cutting) return
      const text = carry + data.toString("latin1")
      let at = text.indexOf(EVENT_MARKER)
      while (at !== -1) {
        seen++
        if (seen > EVENTS_PER_CONNECTION) {
          cutting = true
          // The marker and 4 more bytes (`time` of `timeline`, say): the middle of an event.
          client.write(data.subarray(0, at - carry.length + EVENT_MARKER.length + 4), cut)
          return
        }
        at = text.indexOf(EVENT_MARKER, at + 1)
      }
      carry = text.slice(-(EVENT_MARKER.length - 1))
      client.write(data)
    })
    client.on("close", () => upstream.destroy())
    upstream.on("close", () => client.destroy())
    client.on("error", () => upstream.destroy())
    upstream.on("error", () => client.destroy())
  })
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    lastEventIds,
    cuts,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        proxy.close(() => resolve())
      })
  }
}

const timelineOf = (all: ReadonlyArray<RunEvent>) => all.flatMap((e) => (e.event === "timeline" ? [e.data] : []))
const conversationOf = (all: ReadonlyArray<RunEvent>) => all.flatMap((e) => (e.event === "conversation" ? [e.data] : []))

describe("the client's event stream resumes after a cut with Last-Event-ID", () => {
  let team: Awaited<ReturnType<typeof makeTeam>>
  let proxy: CutProxy

  beforeAll(async () => {
    team = await makeTeam(server(), "sse-resume")
    proxy = await startCutProxy(new URL(server().url))
  })
  afterAll(() => proxy.close())

  it("no event lost, none twice, each reconnection after the last whole event", async () => {
    const direct = createClient({ url: server().url, token: team.tokens.member, teamUid: team.uid, timeoutMs: 10_000 })
    const cutting = createClient({ url: proxy.url, token: team.tokens.member, teamUid: team.uid, timeoutMs: 10_000 })
    const says = Array.from({ length: 8 }, (_, i) => `@say line ${i + 1}\n@sleep 150`).join("\n")
    const created = await direct.runs.create({ prompt: says, title: "Cut" })

    const received: Array<RunEvent> = []
    for await (const event of cutting.runs.events(created.run_id)) received.push(event)

    // Cut several times, the first while the run was still going.
    const run = await direct.runs.get(created.run_id)
    expect(run.state).toBe("SUCCEEDED")
    expect(proxy.cuts.length).toBeGreaterThanOrEqual(3)
    expect(proxy.cuts[0]!).toBeLessThan(Date.parse(run.ended_at!))
    // Each connection after the first resumed after the last whole event before its cut.
    const ids = received.map((e) => e.id)
    const expectedResumes = ids.filter((_, i) => (i + 1) % EVENTS_PER_CONNECTION === 0)
    expect(proxy.cuts).toHaveLength(expectedResumes.length)
    expect(proxy.lastEventIds).toEqual([undefined, ...expectedResumes])

    // Ids are `T-C` and each is one step after the one before: no gap, no duplicate.
    const positions = ids.map((id) => id.split("-").map(Number) as [number, number])
    for (const [i, [t, c]] of positions.entries()) {
      const [pt, pc] = i === 0 ? [0, 0] : positions[i - 1]!
      expect(t - pt + c - pc, `${ids[i]} after ${pt}-${pc}`).toBe(1)
      expect(t >= pt && c >= pc, `${ids[i]} after ${pt}-${pc}`).toBe(true)
    }
    // The same events as the whole stream read at once.
    const whole: Array<RunEvent> = []
    for await (const event of direct.runs.events(created.run_id)) whole.push(event)
    expect(timelineOf(received)).toEqual(timelineOf(whole))
    expect(conversationOf(received)).toEqual(conversationOf(whole))
    expect(conversationOf(received).filter((e) => e.op === "message" && e.role === "assistant")).toHaveLength(8)
  })
})
