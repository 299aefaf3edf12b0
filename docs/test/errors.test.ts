/**
 * docs/reference/errors.md lists every `error_code` the API sends, each with the status the server
 * gives it (packages/api/src/Problems.ts), and nothing else.
 */
import { Problems } from "@agent-runs/api"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"

const page = readFileSync(new URL("../reference/errors.md", import.meta.url), "utf8")

describe("the error reference", () => {
  it("has one row per error code, with the server's status", () => {
    const rows = [...page.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map(([, code, status]) => [code, Number(status)])
    expect(Object.fromEntries(rows)).toEqual(Problems.statusOf)
    expect(rows).toHaveLength(Object.keys(Problems.statusOf).length)
  })
})
