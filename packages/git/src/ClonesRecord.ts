/**
 * Where each clone of a sandbox started (its repository's name → `Cloned`), as text: kept by an
 * executor that leaves an agent for the next process of the service, so that this process can
 * publish from the sandbox as the first would have (the record is read back as untrusted).
 */
import type { Cloned } from "./CloneRepository.js"

/** The record of `started`. */
export const writeClones = (started: ReadonlyMap<string, Cloned>): string => JSON.stringify([...started])

const isCloned = (value: unknown): value is Cloned =>
  typeof value === "object" && value !== null &&
  ["branch", "commit", "base"].every((key) => {
    const field = (value as Record<string, unknown>)[key]
    return field === undefined || typeof field === "string"
  })

/** The clones a record holds; none that is not as written (publishing then says where a clone started is not known). */
export const readClones = (text: string | undefined): Map<string, Cloned> => {
  const started = new Map<string, Cloned>()
  try {
    const entries: unknown = JSON.parse(text ?? "[]")
    for (const entry of Array.isArray(entries) ? entries : []) {
      if (Array.isArray(entry) && typeof entry[0] === "string" && isCloned(entry[1])) started.set(entry[0], entry[1])
    }
  } catch {
    // Not as written: no clone's start is known.
  }
  return started
}
