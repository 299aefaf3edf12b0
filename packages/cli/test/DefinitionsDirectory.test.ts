import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { read } from "../src/DefinitionsDirectory.js"

/** A temporary directory with these files (an entry ending in `/` is a folder), removed afterwards. */
const withDirectory = <A, E>(
  entries: ReadonlyArray<string | readonly [string, string]>,
  use: (root: string) => Effect.Effect<A, E, NodeContext.NodeContext>
) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const root = mkdtempSync(join(tmpdir(), "agent-runs-cli-"))
      for (const entry of entries) {
        const [path, text] = typeof entry === "string" ? [entry, undefined] : entry
        if (text === undefined) mkdirSync(join(root, path), { recursive: true })
        else {
          mkdirSync(dirname(join(root, path)), { recursive: true })
          writeFileSync(join(root, path), text)
        }
      }
      return root
    }),
    use,
    (root) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
  ).pipe(Effect.provide(NodeContext.layer))

describe("DefinitionsDirectory.read", () => {
  it.effect("reads github.yaml, webhooks/ and automations/, paths relative to the directory, in name order", () =>
    withDirectory(
      [
        ["github.yaml", "auth: {type: token, tokenSecret: GH_TOKEN}\n"],
        ["github.yml", "ignored"],
        ["webhooks/b.yaml", "secretName: B\n"],
        ["webhooks/a.yaml", "secretName: A\n"],
        ["webhooks/notes.txt", "kept: core reports it"],
        ["webhooks/.hidden.yaml", "skipped"],
        "webhooks/nested/",
        ["automations/x.yaml", "prompt: x\n"],
        ["README.md", "ignored"],
        ["schedules/s.yaml", "ignored"]
      ],
      (root) =>
        Effect.map(read(root), (files) =>
          expect(files).toEqual([
            { path: "github.yaml", text: "auth: {type: token, tokenSecret: GH_TOKEN}\n" },
            { path: "webhooks/a.yaml", text: "secretName: A\n" },
            { path: "webhooks/b.yaml", text: "secretName: B\n" },
            { path: "webhooks/notes.txt", text: "kept: core reports it" },
            { path: "automations/x.yaml", text: "prompt: x\n" }
          ]))
    ))

  it.effect("a directory with only one of the folders is fine", () =>
    withDirectory(["automations/"], (root) => Effect.map(read(root), (files) => expect(files).toEqual([]))))

  it.effect("so is a directory with github.yaml alone", () =>
    withDirectory([["github.yaml", "auth: {type: token}\n"]], (root) =>
      Effect.map(read(root), (files) => expect(files).toEqual([{ path: "github.yaml", text: "auth: {type: token}\n" }]))))

  it.effect("refuses what is not a definitions directory, naming it", () =>
    withDirectory([["file", "x"], "empty/", "folder/github.yaml/"], (root) =>
      Effect.gen(function*() {
        const message = (path: string) =>
          Effect.map(Effect.either(read(path)), (r) => (Either.isLeft(r) ? r.left.message : "read"))
        expect(yield* message(join(root, "nowhere"))).toBe(`${join(root, "nowhere")}: no such directory`)
        expect(yield* message(join(root, "file"))).toBe(`${join(root, "file")}: not a directory`)
        expect(yield* message(join(root, "empty"))).toBe(
          `${join(root, "empty")}: has neither github.yaml nor webhooks/ nor automations/ nor outbound-webhooks/: not a definitions directory`
        )
        // A folder named github.yaml is not the file.
        expect(yield* message(join(root, "folder"))).toBe(
          `${join(root, "folder")}: has neither github.yaml nor webhooks/ nor automations/ nor outbound-webhooks/: not a definitions directory`
        )
      })))
})
