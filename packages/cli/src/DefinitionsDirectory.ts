/**
 * Reading a definitions directory (docs/definitions.md): the file `github.yaml` at its root and
 * the files `webhooks/*.yaml`, `automations/*.yaml` and `outbound-webhooks/*.yaml` under it, as `{path, text}` with paths
 * relative to the directory (so that errors read `webhooks/github.yaml: ...`). What the files mean
 * is decided in core (Definitions.ts), which also reports files with other names in those two
 * folders; hidden files and subfolders are skipped, other entries of the directory ignored.
 * Shared by `agent-runs apply` and the bundled server (`AGENT_RUNS_DEFINITIONS_DIR`).
 */
import { FileSystem, Path } from "@effect/platform"
import { Definitions } from "@agent-runs/core"
import { Data, Effect } from "effect"

/** The definitions kinds that are folders of the directory. */
const FOLDERS = Definitions.DEFINITION_DIRECTORIES

/** The directory cannot be read, or is not a definitions directory. */
export class DefinitionsDirectoryError extends Data.TaggedError("DefinitionsDirectoryError")<{
  readonly message: string
}> {}

/** The definition files under `dir`, by path. */
export const read = (dir: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const fail = (problem: string) => Effect.fail(new DefinitionsDirectoryError({ message: `${dir}: ${problem}` }))
    const info = yield* Effect.orElseSucceed(fs.stat(dir), () => undefined)
    if (info === undefined) return yield* fail("no such directory")
    if (info.type !== "Directory") return yield* fail("not a directory")
    const files: Array<Definitions.DefinitionFile> = []
    const github = path.join(dir, Definitions.GITHUB_FILE)
    const hasGitHub = (yield* Effect.orElseSucceed(fs.stat(github), () => undefined))?.type === "File"
    if (hasGitHub) files.push({ path: Definitions.GITHUB_FILE, text: yield* fs.readFileString(github) })
    let folders = 0
    for (const folder of FOLDERS) {
      const full = path.join(dir, folder)
      const folderInfo = yield* Effect.orElseSucceed(fs.stat(full), () => undefined)
      if (folderInfo?.type !== "Directory") continue
      folders++
      for (const name of [...(yield* fs.readDirectory(full))].sort()) {
        if (name.startsWith(".")) continue
        const file = path.join(full, name)
        if ((yield* fs.stat(file)).type !== "File") continue
        files.push({ path: `${folder}/${name}`, text: yield* fs.readFileString(file) })
      }
    }
    if (folders === 0 && !hasGitHub) {
      return yield* fail(`has neither ${[Definitions.GITHUB_FILE, ...FOLDERS.map((f) => `${f}/`)].join(" nor ")}: not a definitions directory`)
    }
    return files as ReadonlyArray<Definitions.DefinitionFile>
  }).pipe(
    Effect.catchTag("SystemError", "BadArgument", (e) =>
      Effect.fail(new DefinitionsDirectoryError({ message: `${dir}: ${e.message}` }))),
    Effect.withSpan("DefinitionsDirectory.read", { attributes: { dir } })
  )
