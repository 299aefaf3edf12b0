/**
 * The tar stream of `agent-runs image build --local` (src/image/Tar.ts, src/image/RootFs.ts),
 * read back by the system's `tar`: owners and modes as given whoever writes it, a name and a link
 * target too long for ustar (pax headers), a host file that is one inode with another stored
 * once as a hard link, symbolic links kept, and parent directories made.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { execFileSync } from "node:child_process"
import { createWriteStream, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { RootFs } from "../src/image/RootFs.js"
import { writeTar } from "../src/image/Tar.js"

let dir = ""
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "agent-runs-tar-"))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const long = `opt/${"deep-directory-name/".repeat(8)}file.txt`

describe("writeTar", () => {
  it("writes what the system's tar reads back: owners, modes, long names, links", async () => {
    const host = join(dir, "host")
    mkdirSync(join(host, "tree/sub"), { recursive: true })
    writeFileSync(join(host, "tree/sub/data.bin"), Buffer.alloc(5 * 1024 * 1024 + 7, 0x61))
    writeFileSync(join(host, "tool"), "#!/bin/sh\necho tool\n", { mode: 0o755 })
    linkSync(join(host, "tool"), join(host, "tool-again"))
    symlinkSync("sub/data.bin", join(host, "tree/link"))

    const rootfs = new RootFs()
      .directory("/tmp", 0o1777)
      .directory("/home/agent", 0o755, { uid: 1000, gid: 1000 })
      .text("/etc/passwd", "root:x:0:0::/root:/bin/sh\n")
      .file(join(host, "tool"), "/usr/bin/tool")
      .file(join(host, "tool-again"), "/usr/local/bin/tool")
      .tree(join(host, "tree"), "/opt/tree")
      .text(`/${long}`, "far away\n")
      .symlink("/usr/bin/far", `/${long}`)
    expect(rootfs.bytes).toBe(5 * 1024 * 1024 + 7 + "#!/bin/sh\necho tool\n".length + "root:x:0:0::/root:/bin/sh\n".length + "far away\n".length)

    const archive = join(dir, "image.tar")
    await writeTar(rootfs.entries(), createWriteStream(archive), 1_700_000_000)
    expect(statSync(archive).size % 512).toBe(0)

    const listing = execFileSync("tar", ["--numeric-owner", "-tvf", archive], { encoding: "utf8" })
    const line = (name: string) => listing.split("\n").find((l) => l.endsWith(` ${name}`) || l.includes(` ${name} `))
    expect(line("tmp/")).toMatch(/^drwxrwxrwt 0\/0 /)
    expect(line("home/agent/")).toMatch(/^drwxr-xr-x 1000\/1000 /)
    expect(line("home/")).toMatch(/^drwxr-xr-x 0\/0 /)
    expect(line("usr/bin/tool")).toMatch(/^-rwxr-xr-x 0\/0 /)
    expect(line("usr/local/bin/tool")).toMatch(/^hrw-r--r-- 0\/0 .* link to usr\/bin\/tool$/)
    expect(line("opt/tree/link")).toMatch(/-> sub\/data.bin$/)
    expect(line(long)).toMatch(/^-rw-r--r-- 0\/0 /)
    expect(line("usr/bin/far")).toMatch(new RegExp(`-> /${long}$`))

    const out = join(dir, "out")
    mkdirSync(out)
    execFileSync("tar", ["-xf", archive, "-C", out, "--no-same-owner"])
    expect(readFileSync(join(out, "opt/tree/sub/data.bin")).equals(readFileSync(join(host, "tree/sub/data.bin")))).toBe(true)
    expect(readFileSync(join(out, "usr/local/bin/tool"), "utf8")).toBe("#!/bin/sh\necho tool\n")
    expect(statSync(join(out, "usr/local/bin/tool")).ino).toBe(statSync(join(out, "usr/bin/tool")).ino)
    expect(readFileSync(join(out, long), "utf8")).toBe("far away\n")
  })
})
