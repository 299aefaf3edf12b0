/** What a pod's status says of its way to running (pure). */
import type { V1Pod } from "@kubernetes/client-node"
import { describe, expect, it } from "vitest"
import { progressOf } from "../src/internal/PodWait.js"

const pod = (status: NonNullable<V1Pod["status"]>, deleting = false): V1Pod => ({
  metadata: { name: "agent-run-x-abcde", ...(deleting ? { deletionTimestamp: new Date() } : {}) },
  status
})
const waiting = (reason: string, message?: string): NonNullable<V1Pod["status"]> => ({
  phase: "Pending",
  containerStatuses: [{ name: "sandbox", image: "i", imageID: "", ready: false, restartCount: 0, state: { waiting: { reason, ...(message === undefined ? {} : { message }) } } }]
})

describe("a pod on its way to running", () => {
  it("running: its name", () => {
    expect(progressOf(pod({ phase: "Running" }))).toEqual({ _tag: "Running", pod: "agent-run-x-abcde" })
  })

  it("an image that cannot be pulled, a container that cannot be made, an ended or deleted pod: hopeless, saying why", () => {
    expect(progressOf(pod(waiting("ErrImagePull", "manifest unknown")))).toEqual({
      _tag: "Hopeless",
      reason: "pod agent-run-x-abcde cannot start: ErrImagePull: manifest unknown"
    })
    expect(progressOf(pod(waiting("ImagePullBackOff")))._tag).toBe("Hopeless")
    expect(progressOf(pod({ phase: "Failed", reason: "Evicted" }))).toMatchObject({ _tag: "Hopeless", reason: expect.stringContaining("Evicted") })
    expect(progressOf(pod({ phase: "Running" }, true))._tag).toBe("Hopeless")
  })

  it("still on its way: what it waits for (its Secret, the scheduler)", () => {
    expect(progressOf(pod(waiting("CreateContainerConfigError", "secret not found")))).toEqual({
      _tag: "Waiting",
      reason: "CreateContainerConfigError: secret not found"
    })
    expect(progressOf(pod({ phase: "Pending", conditions: [{ type: "PodScheduled", status: "False", message: "0/3 nodes are available" }] })))
      .toEqual({ _tag: "Waiting", reason: "pod agent-run-x-abcde is not scheduled: 0/3 nodes are available" })
    expect(progressOf(pod({ phase: "Pending" }))).toEqual({ _tag: "Waiting", reason: "pod agent-run-x-abcde is Pending" })
  })
})
