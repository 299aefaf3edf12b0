/**
 * Unit tests of opencode's launch (src/OpencodeLaunch.ts) where the model decides it: the empty
 * model catalogue that saves opencode loading its own is given only for the endpoint's model;
 * a built-in provider's model needs the bundled catalogue (with an empty one opencode 1.18.33
 * answers "Provider not found: anthropic"). No CLI is started.
 */
import { AGENT_HOME, type HarnessTurn } from "@agent-runs/core/ports/AgentHarness"
import { describe, expect, it } from "vitest"
import { launch } from "../src/OpencodeLaunch.js"

const turn = (model_id: string | null): HarnessTurn => ({
  message: "hello",
  session_id: null,
  base_prompt: null,
  skill: null,
  model_id,
  reasoning_level: null,
  mcp_servers: {},
  auth: null,
  attachments: []
})

const CATALOGUE = ".agent-runs/models.json"

describe("opencode launch: the model catalogue", () => {
  it.each([null, "fake-model", "local/qwen/qwen3-coder"])("the endpoint's model (%s): an empty catalogue, named by OPENCODE_MODELS_PATH", (model) => {
    const l = launch("opencode")(turn(model))
    expect(l.env.OPENCODE_MODELS_PATH).toBe(`${AGENT_HOME}/${CATALOGUE}`)
    expect(l.files.find((f) => f.path === CATALOGUE)?.content).toBe("{}")
  })

  it("a built-in provider's model keeps opencode's bundled catalogue", () => {
    const l = launch("opencode")(turn("anthropic/claude-sonnet-4-5"))
    expect(l.env.OPENCODE_MODELS_PATH).toBeUndefined()
    expect(l.files.some((f) => f.path === CATALOGUE)).toBe(false)
    expect(l.command).toContain("anthropic/claude-sonnet-4-5")
  })
})
