/**
 * Every relative link of every Markdown file of the repository resolves (docs/test/Links.ts): the
 * file or directory exists in the repository, and an `#anchor` to a Markdown file names one of its
 * headings. A failure lists each broken link as `file:line → target (why)`.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { anchorsOf, checkLinks, formatBroken, linksOf, repositoryFiles, slugOf } from "./Links.js"

const root = fileURLToPath(new URL("../..", import.meta.url))

describe("the repository's Markdown links", () => {
  it("all resolve to files, directories and headings of the repository", () => {
    const files = repositoryFiles(root)
    expect(files.filter((file) => file.endsWith(".md")).length).toBeGreaterThan(10)
    const broken = checkLinks(root, files).map(formatBroken)
    expect(broken, `broken links:\n${broken.join("\n")}`).toEqual([])
  })
})

describe("the link checker", () => {
  const dir = mkdtempSync(join(tmpdir(), "agent-runs-links-"))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  const write = (path: string, text: string) => {
    mkdirSync(join(dir, path, ".."), { recursive: true })
    writeFileSync(join(dir, path), text)
  }

  it("reports every kind of broken link, with its file and line, and accepts the good ones", () => {
    write("README.md", [
      "# Title",
      "",
      "See [the guide](docs/guide.md), [its setup](docs/guide.md#setting-it-up) and [code](src/).",
      "A [missing page](docs/missing.md) and an ![image](img/logo.png).",
      "[A wrong anchor](docs/guide.md#nowhere), [outside](../elsewhere.md), [absolute](/docs/guide.md).",
      "[Here](#title) and [not here](#nope); [web](https://example.com/x.md) and [mail](mailto:a@b.c).",
      "```",
      "[in a fence](fenced.md)",
      "```",
      "`[in code](code.md)` and [a query](docs/guide.md?plain=1#faq-why)",
      "[a wrapped",
      "link](docs/gone.md)"
    ].join("\n"))
    write("docs/guide.md", "# Guide\n\n## Setting it up\n\n## FAQ: why?\n\n[Back](../README.md#title)\n")
    write("src/index.ts", "export {}\n")

    const broken = checkLinks(dir, ["README.md", "docs/guide.md", "src/index.ts"])

    expect(broken.map(formatBroken)).toEqual([
      "README.md:4 → docs/missing.md (no such file or directory: docs/missing.md)",
      "README.md:4 → img/logo.png (no such file or directory: img/logo.png)",
      "README.md:5 → docs/guide.md#nowhere (no heading #nowhere in docs/guide.md)",
      "README.md:5 → ../elsewhere.md (leaves the repository)",
      "README.md:5 → /docs/guide.md (absolute path: link relative to the file instead)",
      "README.md:6 → #nope (no heading #nope in README.md)",
      "README.md:11 → docs/gone.md (no such file or directory: docs/gone.md)"
    ])
  })

  it("treats a file that exists on disk but not in the repository's list as missing", () => {
    write("notes.md", "[built](dist/main.js)\n")
    write("dist/main.js", "\n")
    expect(checkLinks(dir, ["notes.md"]).map(formatBroken)).toEqual([
      "notes.md:1 → dist/main.js (no such file or directory: dist/main.js)"
    ])
  })

  it("makes GitHub's anchors", () => {
    expect(slugOf("Follow-ups and cancel (`POST …/followups`)")).toBe("follow-ups-and-cancel-post-followups")
    expect(slugOf("Run list (`GET /agent/runs`)")).toBe("run-list-get-agentruns")
    expect(slugOf("Quotas and event streams")).toBe("quotas-and-event-streams")
    expect(slugOf("`AGENT_RUNS_HARNESS` — the [default](x.md)")).toBe("agent_runs_harness--the-default")
    expect([...anchorsOf("# A\n## A\n## A\n```\n# B\n```\nC\n===\n")]).toEqual(["a", "a-1", "a-2", "c"])
    expect(linksOf("x\n[a](b.md) [c](<d e.md> \"title\")\n[e]: f.md\n")).toEqual([
      { line: 2, target: "b.md" },
      { line: 2, target: "d e.md" },
      { line: 3, target: "f.md" }
    ])
  })
})
