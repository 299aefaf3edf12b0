/**
 * The client runs in a browser: bundled for the browser platform (esbuild, as a web app's build
 * would), its whole module graph holds no Node built-in and none of the server's packages, and the
 * bundle is bounded in size (it grew from the API's definition, never the server).
 */
import { build, type Metafile } from "esbuild"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const entry = fileURLToPath(new URL("../src/index.ts", import.meta.url))

const bundle = () =>
  build({
    entryPoints: [entry],
    bundle: true,
    platform: "browser",
    format: "esm",
    minify: true,
    write: false,
    metafile: true,
    conditions: ["@agent-runs/source"],
    logLevel: "silent"
  })

/** Every import a bundled module makes (its path as written, and what it resolved to). */
const importsOf = (metafile: Metafile) =>
  Object.entries(metafile.inputs).flatMap(([from, input]) => input.imports.map((i) => ({ from, ...i })))

describe("the client in a browser", () => {
  it("bundles for the browser platform with no Node built-in and nothing of the server", async () => {
    const result = await bundle()
    expect(result.errors).toEqual([])
    const imports = importsOf(result.metafile)
    expect(imports.filter((i) => i.path.startsWith("node:") || i.external === true)).toEqual([])
    const inputs = Object.keys(result.metafile.inputs)
    expect(inputs.filter((path) => /packages\/(http|server|dashboard)\/|@effect\/platform-node|dockerode/.test(path))).toEqual([])
    expect(inputs.some((path) => path.includes("packages/api/src/"))).toBe(true)
  }, 60_000)

  it("weighs what the API's definition and Effect weigh, and no more (minified, before gzip)", async () => {
    const result = await bundle()
    const bytes = result.outputFiles[0]!.contents.byteLength
    console.log(`@agent-runs/client bundled for a browser: ${(bytes / 1024).toFixed(0)} KiB minified`)
    expect(bytes).toBeLessThan(1_000 * 1024)
  }, 60_000)
})
