/**
 * The BlobStore port on the local file system: each key is a relative path below `root`.
 *
 * - Keys are 1–512 characters of `[A-Za-z0-9._/-]`, made of non-empty segments that are not `.`
 *   or `..`, so no key can reach outside the root; any other key fails with a StorageError.
 * - `append` opens the file in append mode and writes the bytes in one call (atomic with respect
 *   to other appends of this process); `put` writes a temporary file beside the blob and renames
 *   it over the blob, so readers see the old or the new bytes, never half.
 * - `read` streams the file in 64 KiB chunks; a missing blob is `None`.
 */
import { BlobStore, Storage } from "@agent-runs/core"
import { Effect, Layer, Option, Stream } from "effect"
import { createReadStream } from "node:fs"
import { appendFile, mkdir, rename, rm, stat, writeFile } from "node:fs/promises"
import { randomBytes } from "node:crypto"
import { dirname, join } from "node:path"

const KEY = /^[A-Za-z0-9._/-]{1,512}$/

/** Whether a key is safe to use as a path below the root. */
export const isValidKey = (key: string): boolean =>
  KEY.test(key) && key.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..")

const CHUNK = 64 * 1024

const isMissing = (error: unknown) => (error as { code?: string } | null)?.code === "ENOENT"

/** A BlobStore whose blobs are files below `root` (created when missing). */
export const layer = (options: { readonly root: string }) => {
  const withPath = <A>(operation: string, key: string, f: (path: string) => Promise<A>) =>
    Effect.suspend(() => {
      if (!isValidKey(key)) {
        return Effect.fail(
          new Storage.StorageError({ operation: `BlobStore.${operation}`, cause: new Error(`invalid blob key ${JSON.stringify(key)}`) })
        )
      }
      return Effect.tryPromise({
        try: () => f(join(options.root, key)),
        catch: (cause) => new Storage.StorageError({ operation: `BlobStore.${operation}`, cause })
      })
    })

  return Layer.succeed(BlobStore.BlobStore, {
    append: (key, bytes) => withPath("append", key, async (path) => {
      await mkdir(dirname(path), { recursive: true })
      await appendFile(path, bytes)
    }),
    put: (key, bytes) => withPath("put", key, async (path) => {
      await mkdir(dirname(path), { recursive: true })
      const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`
      try {
        await writeFile(temporary, bytes)
        await rename(temporary, path)
      } finally {
        await rm(temporary, { force: true })
      }
    }),
    read: (key) =>
      withPath("read", key, async (path) => {
        try {
          const info = await stat(path)
          if (!info.isFile()) return Option.none()
        } catch (error) {
          if (isMissing(error)) return Option.none()
          throw error
        }
        return Option.some(
          Stream.fromAsyncIterable(
            createReadStream(path, { highWaterMark: CHUNK }) as AsyncIterable<Buffer>,
            (cause) => new Storage.StorageError({ operation: "BlobStore.read", cause })
          ).pipe(Stream.map((chunk) => new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)))
        )
      }),
    remove: (key) =>
      withPath("remove", key, async (path) => {
        try {
          await rm(path)
          return true
        } catch (error) {
          if (isMissing(error)) return false
          throw error
        }
      })
  })
}
