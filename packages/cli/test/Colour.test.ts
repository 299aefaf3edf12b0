/** `agent-runs --help | less`: colour only on a terminal without NO_COLOR; the built command piped prints plain text. */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { wantsColour } from "../src/Colour.js"

const built = fileURLToPath(new URL("../dist/main.js", import.meta.url))

describe("colour", () => {
  it("is wanted on a terminal only, and not with NO_COLOR", () => {
    expect(wantsColour({ isTTY: true }, {})).toBe(true)
    expect(wantsColour({ isTTY: true }, { NO_COLOR: "1" })).toBe(false)
    expect(wantsColour({ isTTY: true }, { NO_COLOR: "" })).toBe(true)
    expect(wantsColour({ isTTY: false }, {})).toBe(false)
    expect(wantsColour({}, {})).toBe(false)
  })

  it("the help and a usage error, piped, hold no escape code", () => {
    const help = execFileSync(process.execPath, [built, "--help"], { encoding: "utf8" })
    expect(help).toContain("USAGE")
    expect(help).not.toContain("\u001b[")
    let stderr = ""
    try {
      execFileSync(process.execPath, [built, "runs", "get"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
    } catch (e) {
      stderr = String((e as { stderr?: string }).stderr ?? "")
    }
    expect(stderr).not.toBe("")
    expect(stderr).not.toContain("\u001b[")
  })
})
