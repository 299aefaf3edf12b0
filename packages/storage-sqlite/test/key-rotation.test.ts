/** Key rotation on SQLite (core's KeyRotationSuite): one database file, opened under each ring in turn. */
import { keyRotationSuite } from "@agent-runs/core/testing"
import { describe } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { SqliteStorage } from "../src/index.js"

const dir = mkdtempSync(join(tmpdir(), "agent-runs-key-rotation-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("key rotation (sqlite)", () => {
  keyRotationSuite((secretKey, otherSecretKeys) =>
    SqliteStorage.layer({ filename: join(dir, "agent-runs.db"), secretKey, otherSecretKeys }))
})
