/** What went wrong building an agent image, as one readable line (`docker is not running: start the engine first`). */
import { Data } from "effect"

export class ImageError extends Data.TaggedError("ImageError")<{ readonly message: string }> {}

/** Any failure as an ImageError (one line: the first line of its message). */
export const toImageError = (cause: unknown): ImageError =>
  cause instanceof ImageError
    ? cause
    : new ImageError({ message: (cause instanceof Error ? cause.message : String(cause)).split("\n")[0] ?? "failed" })
