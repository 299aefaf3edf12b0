/** The shell the executor sends into pods, run here by /bin/sh. */
import { execFileSync } from "node:child_process"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { exportsOf, isVariableName, shQuote } from "../src/internal/Shell.js"

const sh = (script: string, env: Record<string, string> = {}) =>
  execFileSync("/bin/sh", ["-c", script], { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", ...env } })

describe("the variables file of an agent", () => {
  it("sourced by /bin/sh, sets every value exactly, whatever it holds (property)", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/), fc.string({ unit: fc.oneof(fc.constantFrom("'", "\"", "$", "\\", "\n", "`", " ", "é", "✓", "$(id)"), fc.char()) }), { maxKeys: 4 }),
        (env) => {
          const script = `${exportsOf(env)}\nnode -e 'console.log(JSON.stringify(Object.fromEntries(process.argv.slice(1).map((n) => [n, process.env[n]]))))' ${Object.keys(env).join(" ")}`
          expect(JSON.parse(sh(script, { PATH: `${process.env["PATH"]}` }))).toEqual(env)
        }
      ),
      { numRuns: 30 }
    )
  })

  it("a value cannot break out of its quotes", () => {
    const hostile = `'; touch /tmp/agent-runs-pwned-$$; echo '`
    expect(sh(`${exportsOf({ V: hostile })}printf %s "$V"`)).toBe(hostile)
    expect(shQuote("it's")).toBe(`'it'\\''s'`)
  })

  it("only shell variable names are taken", () => {
    expect(isVariableName("ANTHROPIC_API_KEY")).toBe(true)
    for (const name of ["", "1X", "A-B", "A B", "A;rm", "A=B"]) expect(isVariableName(name)).toBe(false)
  })
})
