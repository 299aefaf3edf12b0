/**
 * The BlobStore port on the local file system: each key is a relative path below `root`.
 *
 * - Keys are 1–512 characters of `[A-Za-z0-9._/-]`, made of non-empty segments that are not `.`
 *   or `..`, so no key can reach outside the root (no absolute paths, no parent segments, no
 *   empty segments); any other key fails with a StorageError and touches nothing.
 * - Writes to one key are serialized within the layer (one lock per key, striped): `append`
 *   writes its bytes as one piece, never interleaved with another append, put or remove of the
 *   same key from this process. This is the "one writer" the store supports: two processes
 *   appending to the same blob are not coordinated.
 * - `appendAt` reads the file's size and appends what lies beyond it under the same lock, so a
 *   repeated write is a no-op within a process (across processes, see "one writer").
 * - `put` writes a temporary file beside the blob and renames it over the blob, so a reader sees
 *   the old or the new bytes, never half of them; a failed put leaves no temporary file behind.
 * - `read` only checks that the blob is a file; the file is opened when the stream is run and
 *   closed when it ends or is interrupted, and read in chunks of `CHUNK_BYTES`. A missing key (or
 *   a key naming a directory) is `None`; a blob removed between `read` and running the stream
 *   fails the stream with a StorageError.
 * - Directories are created as needed (the root too) and never removed.
 */
import { BlobStore, Storage } from "@agent-runs/core"
import { Effect, Layer, Option, Stream } from "effect"
import { randomBytes } from "node:crypto"
import type { FileHandle } from "node:fs/promises"
import { appendFile, mkdir, open, rename, rm, stat, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"

const KEY = /^[A-Za-z0-9._/-]{1,512}$/

/** Whether a key is safe to use as a path below the root. */
export const isValidKey = (key: string): boolean =>
  KEY.test(key) && key.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..")

/** The size of the chunks `read` streams. */
export const CHUNK_BYTES = 64 * 1024

/** How many locks the keys are spread over. */
const STRIPES = 64

const isMissing = (error: unknown) => (error as { code?: string } | null)?.code === "ENOENT"

const storageError = (operation: string, cause: unknown) =>
  new Storage.StorageError({ operation: `BlobStore.${operation}`, cause })

const stripeOf = (key: string): number => {
  let hash = 0
  for (let i = 0; i < key.length; i++) hash = (hash * 31 + key.charCodeAt(i)) | 0
  return Math.abs(hash) % STRIPES
}

/** A file's size; 0 when missing. */
const sizeOf = async (path: string): Promise<number> => {
  try {
    return (await stat(path)).size
  } catch (error) {
    if (isMissing(error)) return 0
    throw error
  }
}

/** The file's bytes in chunks; the file is open only while the stream runs. */
const chunksOf = (path: string): Stream.Stream<Uint8Array, Storage.StorageError> =>
  Stream.unwrapScoped(
    Effect.map(
      Effect.acquireRelease(
        Effect.tryPromise({ try: () => open(path, "r"), catch: (cause) => storageError("read", cause) }),
        (handle: FileHandle) => Effect.promise(() => handle.close().catch(() => undefined))
      ),
      (handle) =>
        Stream.repeatEffectOption(
          Effect.tryPromise({
            try: async () => {
              const buffer = new Uint8Array(CHUNK_BYTES)
              const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, null)
              return bytesRead === 0 ? undefined : buffer.subarray(0, bytesRead)
            },
            catch: (cause) => Option.some(storageError("read", cause))
          }).pipe(Effect.flatMap((chunk) => chunk === undefined ? Effect.fail(Option.none()) : Effect.succeed(chunk)))
        )
    )
  )

/** A BlobStore whose blobs are files below `root` (created when missing). */
export const layer = (options: { readonly root: string }): Layer.Layer<BlobStore.BlobStore> =>
  Layer.effect(
    BlobStore.BlobStore,
    Effect.gen(function*() {
      const locks = yield* Effect.forEach(Array.from({ length: STRIPES }), () => Effect.makeSemaphore(1))

      /** Runs `f` on the key's path: a StorageError for an invalid key or a failed `f`. */
      const withPath = <A>(operation: string, key: string, f: (path: string) => Promise<A>) =>
        Effect.suspend(() =>
          isValidKey(key)
            ? Effect.tryPromise({ try: () => f(join(options.root, key)), catch: (cause) => storageError(operation, cause) })
            : Effect.fail(storageError(operation, new Error(`invalid blob key ${JSON.stringify(key.slice(0, 600))}`)))
        )

      /** `withPath`, holding the key's lock. */
      const exclusive = <A>(operation: string, key: string, f: (path: string) => Promise<A>) =>
        locks[stripeOf(key)]!.withPermits(1)(withPath(operation, key, f))

      return BlobStore.BlobStore.of({
        append: (key, bytes) =>
          exclusive("append", key, async (path) => {
            await mkdir(dirname(path), { recursive: true })
            await appendFile(path, bytes)
          }),
        appendAt: (key, offset, bytes) =>
          exclusive("appendAt", key, async (path) => {
            await mkdir(dirname(path), { recursive: true })
            const size = await sizeOf(path)
            const from = Math.min(Math.max(size - offset, 0), bytes.byteLength)
            if (from < bytes.byteLength) await appendFile(path, bytes.subarray(from))
            return size + bytes.byteLength - from
          }),
        size: (key) => withPath("size", key, sizeOf),
        put: (key, bytes) =>
          exclusive("put", key, async (path) => {
            await mkdir(dirname(path), { recursive: true })
            const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`
            try {
              await writeFile(temporary, bytes)
              await rename(temporary, path)
            } catch (error) {
              await rm(temporary, { force: true })
              throw error
            }
          }),
        read: (key) =>
          withPath("read", key, async (path) => {
            try {
              if (!(await stat(path)).isFile()) return Option.none()
            } catch (error) {
              if (isMissing(error)) return Option.none()
              throw error
            }
            return Option.some(chunksOf(path))
          }),
        remove: (key) =>
          exclusive("remove", key, async (path) => {
            try {
              if (!(await stat(path)).isFile()) return false
              await rm(path)
              return true
            } catch (error) {
              if (isMissing(error)) return false
              throw error
            }
          })
      })
    })
  )
