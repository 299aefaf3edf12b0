import { describe, expect, it } from "vitest"
import * as fc from "fast-check"
import { type Directive, directivesOf, formatDirective, parseDirective } from "../src/index.js"

describe("parseDirective", () => {
  it("ignores lines that do not start with @", () => {
    expect(parseDirective("say hello")).toBeUndefined()
    expect(parseDirective("")).toBeUndefined()
    expect(parseDirective("email me@example.com")).toBeUndefined()
  })

  it("reads every directive of the README", () => {
    expect(parseDirective("@say hello world")).toEqual({ kind: "say", text: "hello world" })
    expect(parseDirective('@tool bash {"cmd": "ls -la"}')).toEqual({ kind: "tool", name: "bash", input: { cmd: "ls -la" } })
    expect(parseDirective("@tool noop")).toEqual({ kind: "tool", name: "noop", input: {} })
    expect(parseDirective("@sleep 250")).toEqual({ kind: "sleep", ms: 250 })
    expect(parseDirective("@read-skill skills/x/SKILL.md")).toEqual({ kind: "read-skill", path: "skills/x/SKILL.md", bundledId: undefined })
    expect(parseDirective("@read-skill a/SKILL.md bundled-1")).toEqual({ kind: "read-skill", path: "a/SKILL.md", bundledId: "bundled-1" })
    expect(parseDirective("@artifact PULL_REQUEST fix-1 https://github.com/o/r/pull/1")).toEqual({
      kind: "artifact",
      artifactType: "PULL_REQUEST",
      branch: "fix-1",
      url: "https://github.com/o/r/pull/1"
    })
    expect(parseDirective("@artifact EXTERNAL_REFERENCE https://example.com/x")).toEqual({
      kind: "artifact",
      artifactType: "EXTERNAL_REFERENCE",
      url: "https://example.com/x"
    })
    expect(parseDirective("@await-followup")).toEqual({ kind: "await-followup" })
    expect(parseDirective("@block need a token")).toEqual({ kind: "block", text: "need a token" })
    expect(parseDirective("@fail tests_failed 3 tests failed")).toEqual({ kind: "fail", code: "tests_failed", message: "3 tests failed" })
    expect(parseDirective("@fail oops")).toEqual({ kind: "fail", code: "oops", message: "" })
    expect(parseDirective("@exit 3")).toEqual({ kind: "exit", code: 3 })
    expect(parseDirective("@attachments")).toEqual({ kind: "attachments" })
    expect(parseDirective("@skill")).toEqual({ kind: "skill" })
    expect(parseDirective("@mcp")).toEqual({ kind: "mcp" })
    expect(parseDirective("@traceparent")).toEqual({ kind: "traceparent" })
    expect(parseDirective("@spend 0.25")).toEqual({ kind: "spend", usd: 0.25 })
    expect(parseDirective("@spend 2")).toEqual({ kind: "spend", usd: 2 })
    expect(parseDirective("@spend -1")?.kind).toBe("invalid")
    expect(parseDirective("@spend 1e3")?.kind).toBe("invalid")
    expect(parseDirective("@spawn fix the build")).toEqual({ kind: "spawn", prompt: "fix the build" })
    expect(parseDirective("@api GET /agent/me")).toEqual({ kind: "api", method: "GET", path: "/agent/me", body: undefined })
    expect(parseDirective('@api PUT /agent/secrets/X {"value": "v"}')).toEqual({
      kind: "api",
      method: "PUT",
      path: "/agent/secrets/X",
      body: '{"value": "v"}'
    })
  })

  it("reads the testing extensions", () => {
    expect(parseDirective("@step Install")).toEqual({ kind: "step", description: "Install" })
    expect(parseDirective("@end-step installed")).toEqual({ kind: "end-step", summary: "installed" })
    expect(parseDirective("@history")).toEqual({ kind: "history" })
    expect(parseDirective("@print not json")).toEqual({ kind: "print", text: "not json" })
    expect(parseDirective("@big 1000")).toEqual({ kind: "big", size: 1000 })
    expect(parseDirective("@stderr oh no")).toEqual({ kind: "stderr", text: "oh no" })
  })

  it("tolerates leading whitespace, extra spaces and a trailing CR", () => {
    expect(parseDirective("  @say   hi there  \r")).toEqual({ kind: "say", text: "hi there" })
    expect(parseDirective("@sleep 10\r")).toEqual({ kind: "sleep", ms: 10 })
  })

  it("makes bad arguments an invalid directive naming the problem", () => {
    const tool = parseDirective("@tool bash {not json")
    expect(tool).toMatchObject({ kind: "invalid", name: "tool" })
    expect(tool?.kind === "invalid" && tool.problem).toMatch(/@tool bash: invalid JSON/)
    expect(parseDirective("@tool")).toMatchObject({ kind: "invalid", name: "tool" })
    expect(parseDirective("@sleep soon")).toMatchObject({ kind: "invalid", name: "sleep" })
    expect(parseDirective("@sleep -1")).toMatchObject({ kind: "invalid", name: "sleep" })
    expect(parseDirective("@exit 256")).toMatchObject({ kind: "invalid", name: "exit" })
    expect(parseDirective("@exit")).toMatchObject({ kind: "invalid", name: "exit" })
    expect(parseDirective("@artifact PULL_REQUEST only-branch")).toMatchObject({ kind: "invalid", name: "artifact" })
    expect(parseDirective("@artifact ISSUE x")).toMatchObject({ kind: "invalid", name: "artifact" })
    expect(parseDirective("@read-skill")).toMatchObject({ kind: "invalid", name: "read-skill" })
    expect(parseDirective("@fail")).toMatchObject({ kind: "invalid", name: "fail" })
    expect(parseDirective("@spawn")).toMatchObject({ kind: "invalid", name: "spawn" })
    expect(parseDirective("@api FETCH /agent/me")).toMatchObject({ kind: "invalid", name: "api" })
    expect(parseDirective("@api GET agent/me")).toMatchObject({ kind: "invalid", name: "api" })
    expect(parseDirective("@api PUT /agent/secrets/X {value")).toMatchObject({ kind: "invalid", name: "api" })
    expect(parseDirective("@big lots")).toMatchObject({ kind: "invalid", name: "big" })
  })

  it("makes an unknown name an unknown directive", () => {
    expect(parseDirective("@whatever it is")).toEqual({ kind: "unknown", name: "@whatever" })
    expect(parseDirective("@Say hi")).toEqual({ kind: "unknown", name: "@Say" })
    expect(parseDirective("@")).toEqual({ kind: "unknown", name: "@" })
  })

  it("never throws, whatever the line", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string().map((s) => `@${s}`), fc.fullUnicodeString().map((s) => `@tool x ${s}`)), (line) => {
        const directive = parseDirective(line)
        expect(directive === undefined || typeof directive.kind === "string").toBe(true)
      }),
      { numRuns: 500 }
    )
  })

  it("reads back every directive from its text form", () => {
    fc.assert(
      fc.property(directiveArbitrary, (directive) => {
        const line = formatDirective(directive)
        // Compare through JSON: a tool input is JSON, where -0 and 0 are the same number.
        expect(JSON.stringify(parseDirective(line))).toEqual(JSON.stringify(directive))
      }),
      { numRuns: 1000 }
    )
  })
})

describe("directivesOf", () => {
  it("keeps the @ lines in order and skips the others", () => {
    expect(directivesOf("Please fix it.\n@say one\nmore prose\n@exit 2\n")).toEqual([
      { kind: "say", text: "one" },
      { kind: "exit", code: 2 }
    ])
    expect(directivesOf("no directives here")).toEqual([])
  })
})

/** A single line of text without surrounding whitespace (what a directive argument can be). */
const text = fc.fullUnicodeString().map((s) => s.replace(/[\r\n]/g, " ").trim())
const nonEmptyText = text.filter((s) => s.length > 0)
/** One word: no whitespace at all. */
const word = fc.fullUnicodeString({ minLength: 1 }).map((s) => s.replace(/\s/g, "_"))
const nat = (max: number) => fc.integer({ min: 0, max })

const directiveArbitrary: fc.Arbitrary<Directive> = fc.oneof(
  text.map((t) => ({ kind: "say", text: t }) as const),
  fc.tuple(word, fc.jsonValue()).map(([name, input]) => ({ kind: "tool", name, input }) as const),
  nat(86_400_000).map((ms) => ({ kind: "sleep", ms }) as const),
  fc.tuple(word, fc.option(word, { nil: undefined })).map(([path, bundledId]) => ({ kind: "read-skill", path, bundledId }) as const),
  fc.tuple(word, word).map(([branch, url]) => ({ kind: "artifact", artifactType: "PULL_REQUEST", branch, url }) as const),
  word.map((url) => ({ kind: "artifact", artifactType: "EXTERNAL_REFERENCE", url }) as const),
  fc.constant({ kind: "await-followup" } as const),
  text.map((t) => ({ kind: "block", text: t }) as const),
  fc.tuple(word, text).map(([code, message]) => ({ kind: "fail", code, message }) as const),
  nat(255).map((code) => ({ kind: "exit", code }) as const),
  fc.constant({ kind: "attachments" } as const),
  fc.constant({ kind: "skill" } as const),
  fc.constant({ kind: "mcp" } as const),
  fc.constant({ kind: "traceparent" } as const),
  fc.integer({ min: 0, max: 100_000_000 }).map((cents) => ({ kind: "spend", usd: cents / 100 }) as const),
  nonEmptyText.map((prompt) => ({ kind: "spawn", prompt }) as const),
  fc.tuple(fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"), word.map((w) => `/${w}`), fc.option(fc.json(), { nil: undefined }))
    .map(([method, path, body]) => ({ kind: "api", method, path, body: body?.trim() === "" ? undefined : body }) as const)
    .filter((d) => d.body === undefined || !/\s/.test(d.body)),
  text.map((description) => ({ kind: "step", description }) as const),
  text.map((summary) => ({ kind: "end-step", summary }) as const),
  fc.constant({ kind: "history" } as const),
  text.map((t) => ({ kind: "print", text: t }) as const),
  nat(1_000_000).map((size) => ({ kind: "big", size }) as const),
  text.map((t) => ({ kind: "stderr", text: t }) as const),
  fc
    .stringMatching(/^[a-z][a-z-]{0,12}$/)
    .filter((name) => parseDirective(`@${name}`)?.kind === "unknown")
    .map((name) => ({ kind: "unknown", name: `@${name}` }) as const)
)
