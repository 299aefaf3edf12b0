/** Reading `/proc/<pid>/mountinfo`: which mount a path lies on, and whether it is nosuid,nodev. */
import { describe, expect, it } from "@effect/vitest"
import { isNosuidNodev, mountOf, parseMountInfo } from "../src/internal/HostMounts.js"

const sample = [
  "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw",
  "30 22 0:25 / /srv rw,nosuid,nodev,relatime shared:5 - tmpfs tmpfs rw",
  "31 22 254:0 /data/my\\040dir /data/my\\040dir rw,nosuid,nodev,relatime shared:1 - ext4 /dev/vda rw",
  "32 22 254:0 /tmp/w /tmp/w rw,relatime shared:1 - ext4 /dev/vda rw",
  "33 32 254:0 /tmp/w /tmp/w rw,nosuid,nodev,relatime shared:1 - ext4 /dev/vda rw",
  ""
].join("\n")

describe("mountinfo", () => {
  const entries = parseMountInfo(sample)

  it("reads mount points (octal escapes undone) and their per-mount options", () => {
    expect(entries.map((e) => e.mountPoint)).toEqual(["/", "/srv", "/data/my dir", "/tmp/w", "/tmp/w"])
    expect(entries[1]!.options).toEqual(["rw", "nosuid", "nodev", "relatime"])
  })

  it("a path lies on the longest mount point that contains it, the top one of a stack", () => {
    expect(mountOf(entries, "/srv/sandboxes/a")?.mountPoint).toBe("/srv")
    expect(mountOf(entries, "/srvx/a")?.mountPoint).toBe("/")
    expect(isNosuidNodev(mountOf(entries, "/data/my dir/run/exec"))).toBe(true)
    expect(isNosuidNodev(mountOf(entries, "/data/other"))).toBe(false)
    expect(isNosuidNodev(mountOf(entries, "/tmp/w"))).toBe(true)
    expect(isNosuidNodev(mountOf(entries, "/tmp"))).toBe(false)
    expect(isNosuidNodev(undefined)).toBe(false)
  })
})
