import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import type { WebhookState, WebhookStatus, WebhookTransition } from "../src/domain/WebhookStateMachine.js"
import {
  acceptsDeliveries,
  acceptsSecretVersion,
  createdWebhookState,
  findRule,
  transition,
  WebhookEffect,
  WebhookEvent,
  WebhookState as WebhookStateSchema,
  WebhookTransitionTable
} from "../src/domain/WebhookStateMachine.js"

const runs = { numRuns: 200 }

const eventArb = fc.constantFrom(
  WebhookEvent.Disable(),
  WebhookEvent.Enable(),
  WebhookEvent.Delete(),
  WebhookEvent.RotateSecret()
)
const statusArb = fc.constantFrom<WebhookStatus>("enabled", "disabled", "deleted")
const stateArb = fc.record({ status: statusArb, secretVersion: fc.integer({ min: 1, max: 1_000_000 }) })

const accepted = (state: WebhookState, event: WebhookEvent): WebhookTransition => {
  const result = transition(state, event)
  if (Either.isLeft(result)) throw new Error(`expected ${event._tag} from ${state.status} to be accepted`)
  return result.right
}

/** Runs events from a state, keeping the state on a rejection, recording every step. */
const replay = (start: WebhookState, events: ReadonlyArray<WebhookEvent>) => {
  let state = start
  const steps: Array<{ state: WebhookState; event: WebhookEvent; result: ReturnType<typeof transition> }> = []
  for (const event of events) {
    const result = transition(state, event)
    steps.push({ state, event, result })
    if (Either.isRight(result)) state = result.right.to
  }
  return { state, steps }
}

describe("WebhookStateMachine: properties", () => {
  it.prop(
    "random event sequences only move along the transition table, rejecting exactly what it lacks",
    [fc.boolean(), fc.array(eventArb, { maxLength: 30 })],
    ([enabled, events]) => {
      const { steps } = replay(createdWebhookState(enabled), events)
      for (const { state, event, result } of steps) {
        const rule = findRule(state.status, event._tag)
        if (Either.isRight(result)) {
          const { from, to } = result.right
          expect(from).toEqual(state)
          expect(WebhookTransitionTable).toContainEqual({ from: from.status, event: event._tag, to: to.status })
        } else {
          expect(rule).toBeUndefined()
          expect(state.status).toBe("deleted")
          expect(result.left.event).toBe(event._tag)
        }
      }
    },
    { fastCheck: runs }
  )

  it.prop(
    "nothing leaves deleted",
    [stateArb, fc.array(eventArb, { minLength: 1, maxLength: 20 })],
    ([state, events]) => {
      const deleted: WebhookState = { ...state, status: "deleted" }
      const { state: end, steps } = replay(deleted, events)
      expect(end).toEqual(deleted)
      for (const step of steps) expect(Either.isLeft(step.result)).toBe(true)
    },
    { fastCheck: runs }
  )

  it.prop(
    "after any rotation only the newest secret version is accepted",
    [fc.boolean(), fc.array(eventArb, { maxLength: 30 })],
    ([enabled, events]) => {
      const issued: Array<number> = [createdWebhookState(enabled).secretVersion]
      const { state, steps } = replay(createdWebhookState(enabled), events)
      for (const { result } of steps) {
        if (Either.isRight(result)) {
          for (const effect of result.right.effects) {
            if (effect._tag === "IssueSecret") {
              expect(effect.revokedVersion).toBe(issued[issued.length - 1])
              issued.push(effect.secretVersion)
            }
          }
        }
      }
      const rotations = steps.filter((s) => s.event._tag === "RotateSecret" && Either.isRight(s.result)).length
      expect(issued).toHaveLength(rotations + 1)
      expect(new Set(issued).size).toBe(issued.length)
      const newest = issued[issued.length - 1]!
      for (const version of issued) {
        expect(acceptsSecretVersion(state, version)).toBe(state.status !== "deleted" && version === newest)
      }
    },
    { fastCheck: runs }
  )

  it.prop(
    "deliveries are accepted iff enabled, and the effects say when that changes",
    [stateArb, eventArb],
    ([state, event]) => {
      expect(acceptsDeliveries(state)).toBe(state.status === "enabled")
      const result = transition(state, event)
      if (Either.isLeft(result)) return
      const { effects, to } = result.right
      const tags = effects.map((e) => e._tag)
      expect(tags.includes("StopDeliveries")).toBe(acceptsDeliveries(state) && !acceptsDeliveries(to))
      expect(tags.includes("ResumeDeliveries")).toBe(!acceptsDeliveries(state) && acceptsDeliveries(to))
    },
    { fastCheck: runs }
  )

  it.prop(
    "transitions produce valid states; only rotation changes the secret version",
    [stateArb, eventArb],
    ([state, event]) => {
      const result = transition(state, event)
      if (Either.isLeft(result)) return
      const { to, changed } = result.right
      expect(Schema.is(WebhookStateSchema)(to)).toBe(true)
      expect(to.secretVersion).toBe(event._tag === "RotateSecret" ? state.secretVersion + 1 : state.secretVersion)
      expect(changed).toBe(to.status !== state.status || to.secretVersion !== state.secretVersion)
    },
    { fastCheck: runs }
  )
})

describe("WebhookStateMachine: the table", () => {
  it("starts enabled (or disabled) with secret version 1", () => {
    expect(createdWebhookState()).toEqual({ status: "enabled", secretVersion: 1 })
    expect(createdWebhookState(false)).toEqual({ status: "disabled", secretVersion: 1 })
  })

  it("disables and enables, accepting a repeat as a no-op", () => {
    const enabled = createdWebhookState()
    const disable = accepted(enabled, WebhookEvent.Disable())
    expect(disable.to).toEqual({ status: "disabled", secretVersion: 1 })
    expect(disable.changed).toBe(true)
    expect(disable.effects).toEqual([WebhookEffect.StopDeliveries()])
    expect(acceptsDeliveries(disable.to)).toBe(false)

    const again = accepted(disable.to, WebhookEvent.Disable())
    expect(again.to).toEqual(disable.to)
    expect(again.changed).toBe(false)
    expect(again.effects).toEqual([])

    const enable = accepted(disable.to, WebhookEvent.Enable())
    expect(enable.to).toEqual(enabled)
    expect(enable.effects).toEqual([WebhookEffect.ResumeDeliveries()])
    expect(acceptsDeliveries(enable.to)).toBe(true)
    expect(accepted(enabled, WebhookEvent.Enable()).changed).toBe(false)
  })

  it("deletes from enabled or disabled, keeping the secret version", () => {
    const fromEnabled = accepted({ status: "enabled", secretVersion: 3 }, WebhookEvent.Delete())
    expect(fromEnabled.to).toEqual({ status: "deleted", secretVersion: 3 })
    expect(fromEnabled.effects).toEqual([WebhookEffect.StopDeliveries()])
    const fromDisabled = accepted({ status: "disabled", secretVersion: 3 }, WebhookEvent.Delete())
    expect(fromDisabled.to.status).toBe("deleted")
    expect(fromDisabled.effects).toEqual([])
    expect(acceptsSecretVersion(fromEnabled.to, 3)).toBe(false)
  })

  it("rejects every event on a deleted webhook, Delete included, as a 404", () => {
    const deleted: WebhookState = { status: "deleted", secretVersion: 2 }
    for (const event of [WebhookEvent.Delete(), WebhookEvent.Enable(), WebhookEvent.Disable(), WebhookEvent.RotateSecret()]) {
      const result = transition(deleted, event)
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        expect(result.left._tag).toBe("WebhookDeleted")
        const notFound = result.left.toResourceNotFound("AAAAAAAAAAAAAAAAAAAAAA")
        expect(notFound.errorCode).toBe("resource_not_found")
        expect(notFound.message).toBe("webhook AAAAAAAAAAAAAAAAAAAAAA not found")
      }
    }
  })

  it("rotates in either live status, keeping it, and the old secret stops at once", () => {
    for (const status of ["enabled", "disabled"] as const) {
      const state: WebhookState = { status, secretVersion: 1 }
      const rotated = accepted(state, WebhookEvent.RotateSecret())
      expect(rotated.to).toEqual({ status, secretVersion: 2 })
      expect(rotated.effects).toEqual([WebhookEffect.IssueSecret({ secretVersion: 2, revokedVersion: 1 })])
      expect(acceptsSecretVersion(rotated.to, 1)).toBe(false)
      expect(acceptsSecretVersion(rotated.to, 2)).toBe(true)
      expect(acceptsSecretVersion(rotated.to, 3)).toBe(false)
    }
  })

  it("has no rule out of deleted and one rule per live status and event", () => {
    expect(WebhookTransitionTable.filter((r) => r.from === "deleted")).toEqual([])
    for (const from of ["enabled", "disabled"] as const) {
      for (const event of ["Disable", "Enable", "Delete", "RotateSecret"] as const) {
        expect(WebhookTransitionTable.filter((r) => r.from === from && r.event === event)).toHaveLength(1)
      }
    }
  })
})
