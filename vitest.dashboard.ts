/**
 * A global setup of the root vitest config: builds the web dashboard (`packages/dashboard`, into
 * its `dist/app`) before any test runs when the build is missing or older than its sources, so
 * the tests that load `/app` in a browser never see a stale or absent build.
 */
import { existsSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const PACKAGE = fileURLToPath(new URL("packages/dashboard/", import.meta.url))
const BUILT = join(PACKAGE, "dist", "app", "index.html")

/** The newest modification time among the files the build reads. */
const newestSource = (): number => {
  let newest = 0
  const visit = (path: string) => {
    const info = statSync(path)
    if (info.isDirectory()) for (const entry of readdirSync(path)) visit(join(path, entry))
    else newest = Math.max(newest, info.mtimeMs)
  }
  for (const path of ["index.html", "vite.config.ts", "package.json", "app"]) visit(join(PACKAGE, path))
  return newest
}

export default async function buildDashboard(): Promise<void> {
  if (existsSync(BUILT) && statSync(BUILT).mtimeMs >= newestSource()) return
  const { build } = await import("vite")
  await build({ configFile: join(PACKAGE, "vite.config.ts"), logLevel: "warn" })
}
