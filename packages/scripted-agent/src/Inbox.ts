/**
 * What arrives on stdin, sorted as the agent needs it: the start message (once), a queue of
 * follow-ups (the start message's `followups` first, then live ones in arrival order), whether a
 * cancel arrived, and whether stdin closed. Reads its lines in the background from the moment it
 * is created, so a follow-up or a cancel arriving while a directive runs is never missed.
 */
import { type Mode, parseInputLine, type StartMessage } from "./Protocol.js"

/** A follow-up to handle; `mode` is `undefined` when it did not say (the run's mode applies). */
export interface Followup {
  readonly text: string
  readonly mode: Mode | undefined
}

export class Inbox {
  /** The start message; `undefined` if stdin closed before it. */
  readonly start: Promise<StartMessage | undefined>
  /** Resolves when a `{"type":"cancel"}` line arrives (never otherwise). */
  readonly cancelled: Promise<void>

  private readonly queue: Array<Followup> = []
  private waiters: Array<() => void> = []
  private closed = false
  private resolveStart!: (start: StartMessage | undefined) => void
  private resolveCancel!: () => void

  constructor(lines: AsyncIterable<string>) {
    this.start = new Promise((resolve) => (this.resolveStart = resolve))
    this.cancelled = new Promise((resolve) => (this.resolveCancel = resolve))
    void this.pump(lines)
  }

  /** The next follow-up already received, without waiting. */
  take(): Followup | undefined {
    return this.queue.shift()
  }

  /** The next follow-up, waiting for one; `undefined` once stdin has closed with none left. */
  async next(): Promise<Followup | undefined> {
    for (;;) {
      const followup = this.take()
      if (followup !== undefined || this.closed) return followup
      await new Promise<void>((resolve) => this.waiters.push(resolve))
    }
  }

  private wake(): void {
    const waiters = this.waiters
    this.waiters = []
    for (const wake of waiters) wake()
  }

  private async pump(lines: AsyncIterable<string>): Promise<void> {
    let started = false
    try {
      for await (const line of lines) {
        const message = parseInputLine(line)
        if (message === undefined) continue
        switch (message.type) {
          case "start":
            if (started) break
            started = true
            this.queue.unshift(...message.followups.map((text) => ({ text, mode: undefined })))
            this.resolveStart(message)
            this.wake()
            break
          case "followup":
            this.queue.push({ text: message.message, mode: message.mode })
            this.wake()
            break
          case "cancel":
            this.resolveCancel()
            break
        }
      }
    } catch {
      // A failing stdin is a closed stdin.
    } finally {
      this.closed = true
      this.resolveStart(undefined)
      this.wake()
    }
  }
}
