/**
 * Looking up a uid's processes (`processesOf`, which `killUser` and `allocateUid` use): many
 * sandboxes set up or released at once share passes over /proc (issue 20: 1,000 concurrent
 * sandboxes), and a lookup still sees every process started before it was asked, even while
 * another lookup's pass is under way; `killUser` gives up on a process that will not die once its
 * time is up (issue 31). Needs root (the processes run as other uids), as CI has.
 */
import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { randomInt } from "node:crypto"
import { allocateUid, killUser, processesOf } from "../src/internal/users.js"
import { unkillable } from "./unkillable.js"

const isRoot = process.getuid?.() === 0

/** A `sleep` running as `uid` (its own process group), killed by the test. */
const sleeper = (uid: number): ChildProcess => spawn("sleep", ["30"], { uid, gid: uid, detached: true, stdio: "ignore" })

const someUid = () => 1_600_000_000 + randomInt(1_000_000)

describe.runIf(isRoot)("processes of a uid", () => {
  it("a lookup sees a process started just before it, while an earlier lookup's pass is under way", async () => {
    const uid = someUid()
    const earlier = processesOf(uid)
    const child = sleeper(uid)
    try {
      const later = processesOf(uid)
      expect(await later).toEqual([child.pid])
      expect((await earlier).filter((pid) => pid !== child.pid)).toEqual([])
    } finally {
      child.kill("SIGKILL")
    }
  })

  it("many lookups at once all answer, each with the processes of its own uid", async () => {
    const uids = Array.from({ length: 5 }, someUid)
    const children = uids.map(sleeper)
    try {
      const found = await Promise.all(Array.from({ length: 200 }, (_, i) => processesOf(uids[i % uids.length]!)))
      found.forEach((pids, i) => expect(pids).toEqual([children[i % uids.length]!.pid]))
      // A uid in use is never handed out again.
      const taken = new Set<number>()
      const allocated = await Promise.all(Array.from({ length: 50 }, () => allocateUid({ first: uids[0]!, count: 1 }, taken).catch(() => -1)))
      expect(allocated.every((uid) => uid === -1)).toBe(true)
    } finally {
      for (const child of children) child.kill("SIGKILL")
    }
  })

  it("killUser stops every process of the uid, also with other releases at the same time", async () => {
    const uids = Array.from({ length: 3 }, someUid)
    uids.forEach((uid) => [sleeper(uid), sleeper(uid)])
    for (const uid of uids) expect(await processesOf(uid)).toHaveLength(2)
    expect(await Promise.all(uids.map((uid) => killUser(uid, 10_000)))).toEqual(uids.map(() => ({ _tag: "AllGone" })))
    for (const uid of uids) expect(await processesOf(uid)).toEqual([])
  })

  it("killUser kills what it can and, once its time is up, names the process that did not die", async () => {
    const uid = someUid()
    const [stuck, other] = [sleeper(uid), sleeper(uid)]
    expect(new Set(await processesOf(uid))).toEqual(new Set([stuck.pid, other.pid]))
    const signals = unkillable(stuck.pid!)
    try {
      expect(await killUser(uid, 5_000)).toEqual({ _tag: "Survivors", pids: [stuck.pid] })
    } finally {
      signals.restore()
      stuck.kill("SIGKILL")
    }
    expect(other.signalCode ?? (await new Promise((resolve) => other.once("exit", (_, signal) => resolve(signal))))).toBe("SIGKILL")
  })
})
