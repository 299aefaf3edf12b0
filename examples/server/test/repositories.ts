/** Test git repositories for the black-box tests: a bare `owner/repo` with given files, committed on main. */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const git = (args: ReadonlyArray<string>) =>
  execFileSync("git", ["-c", "user.email=skills@example.com", "-c", "user.name=Skills", ...args], { stdio: "pipe" })

/** Creates (or replaces the content of) the bare repository `owner/repo` with `files`, committed on main. */
export const writeRepository = (reposDir: string, name: string, files: Record<string, string>) => {
  const target = join(reposDir, ...name.split("/"))
  const work = mkdtempSync(join(tmpdir(), "agent-runs-skills-"))
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(work, path, ".."), { recursive: true })
    writeFileSync(join(work, path), content)
  }
  git(["init", "-q", "-b", "main", work])
  git(["-C", work, "add", "-A"])
  git(["-C", work, "commit", "-q", "-m", "skills"])
  rmSync(target, { recursive: true, force: true })
  mkdirSync(join(target, ".."), { recursive: true })
  git(["clone", "-q", "--bare", work, target])
  rmSync(work, { recursive: true, force: true })
}
