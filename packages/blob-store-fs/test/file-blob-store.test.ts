/** The file-system BlobStore on real temporary directories. */
import { BlobStore } from "@agent-runs/core"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, Option, Stream } from "effect"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as fc from "fast-check"
import { CHUNK_BYTES, isValidKey, layer } from "../src/FileBlobStore.js"

/** A fresh directory holding `root` (the store's root, not created yet) and a sibling outside it. */
const freshDirs = Effect.acquireRelease(
  Effect.sync(() => {
    const base = mkdtempSync(join(tmpdir(), "agent-runs-blobs-"))
    return { base, root: join(base, "root") }
  }),
  ({ base }) => Effect.sync(() => rmSync(base, { recursive: true, force: true }))
)

/** Runs `f` with a store on a fresh root. */
const withStore = <A, E>(
  f: (store: BlobStore.BlobStore["Type"], dirs: { readonly base: string; readonly root: string }) => Effect.Effect<A, E>
) =>
  Effect.scoped(
    Effect.flatMap(freshDirs, (dirs) =>
      Effect.flatMap(Effect.provide(BlobStore.BlobStore, layer({ root: dirs.root })), (store) => f(store, dirs)))
  )

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (data: Uint8Array) => new TextDecoder().decode(data)

const concat = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0))
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}

/** The blob's chunks, or none when it is missing. */
const chunksOf = (store: BlobStore.BlobStore["Type"], key: string) =>
  Effect.flatMap(
    store.read(key),
    Option.match({
      onNone: () => Effect.succeed(Option.none<ReadonlyArray<Uint8Array>>()),
      onSome: (stream) => Effect.map(Stream.runCollect(stream), (c) => Option.some(Chunk.toReadonlyArray(c)))
    })
  )

const contentOf = (store: BlobStore.BlobStore["Type"], key: string) =>
  Effect.map(chunksOf(store, key), Option.map((chunks) => text(concat(chunks))))

describe("FileBlobStore", () => {
  it.scoped("put, read and remove round trip; put replaces; the root is created on demand", () =>
    withStore((store, { root }) =>
      Effect.gen(function*() {
        expect(existsSync(root)).toBe(false)
        yield* store.put("transcripts/run-1.jsonl", bytes("first\n"))
        expect(readFileSync(join(root, "transcripts/run-1.jsonl"), "utf8")).toBe("first\n")
        expect(yield* contentOf(store, "transcripts/run-1.jsonl")).toEqual(Option.some("first\n"))
        yield* store.put("transcripts/run-1.jsonl", bytes("second"))
        expect(yield* contentOf(store, "transcripts/run-1.jsonl")).toEqual(Option.some("second"))
        // no temporary file is left beside the blob
        expect(readdirSync(join(root, "transcripts"))).toEqual(["run-1.jsonl"])
        yield* store.put("empty", new Uint8Array(0))
        expect(yield* contentOf(store, "empty")).toEqual(Option.some(""))
        expect(yield* store.remove("transcripts/run-1.jsonl")).toBe(true)
        expect(yield* store.read("transcripts/run-1.jsonl")).toEqual(Option.none())
        expect(yield* store.remove("transcripts/run-1.jsonl")).toBe(false)
      })))

  it.scoped("append creates the blob, then adds to its end", () =>
    withStore((store) =>
      Effect.gen(function*() {
        yield* store.append("a/b/c.log", bytes("one\n"))
        yield* store.append("a/b/c.log", bytes("two\n"))
        yield* store.append("a/b/c.log", new Uint8Array(0))
        expect(yield* contentOf(store, "a/b/c.log")).toEqual(Option.some("one\ntwo\n"))
        yield* store.put("a/b/c.log", bytes("reset\n"))
        yield* store.append("a/b/c.log", bytes("three\n"))
        expect(yield* contentOf(store, "a/b/c.log")).toEqual(Option.some("reset\nthree\n"))
      })))

  it.scoped("appendAt writes only what lies beyond the blob's end: a repeated write is a no-op; size follows", () =>
    withStore((store) =>
      Effect.gen(function*() {
        expect(yield* store.size("t/run.jsonl")).toBe(0)
        expect(yield* store.appendAt("t/run.jsonl", 0, bytes("one\n"))).toBe(4)
        // the same write again (a retry after a lost answer): nothing appended
        expect(yield* store.appendAt("t/run.jsonl", 0, bytes("one\n"))).toBe(4)
        expect(yield* store.appendAt("t/run.jsonl", 4, bytes("two\n"))).toBe(8)
        // a write overlapping the end: only its new tail
        expect(yield* store.appendAt("t/run.jsonl", 6, bytes("o\nthree\n"))).toBe(14)
        // an offset past the end (bytes lost earlier): appended at the end
        expect(yield* store.appendAt("t/run.jsonl", 100, bytes("four\n"))).toBe(19)
        expect(yield* contentOf(store, "t/run.jsonl")).toEqual(Option.some("one\ntwo\nthree\nfour\n"))
        expect(yield* store.size("t/run.jsonl")).toBe(19)
        // concurrent repeats of one write append it once
        yield* Effect.all(Array.from({ length: 8 }, () => store.appendAt("t/run.jsonl", 19, bytes("five\n"))), { concurrency: "unbounded" })
        expect(yield* contentOf(store, "t/run.jsonl")).toEqual(Option.some("one\ntwo\nthree\nfour\nfive\n"))
      })))

  it.scoped("missing keys: read is none, remove is false; a directory is not a blob", () =>
    withStore((store) =>
      Effect.gen(function*() {
        expect(yield* store.read("nothing/here")).toEqual(Option.none())
        expect(yield* store.remove("nothing/here")).toBe(false)
        yield* store.put("dir/file", bytes("x"))
        expect(yield* store.read("dir")).toEqual(Option.none())
        expect(yield* store.remove("dir")).toBe(false)
        expect(yield* contentOf(store, "dir/file")).toEqual(Option.some("x"))
      })))

  it.scoped("hostile keys fail with a StorageError and touch nothing outside (or inside) the root", () =>
    withStore((store, { base, root }) =>
      Effect.gen(function*() {
        writeFileSync(join(base, "outside"), "secret")
        mkdirSync(root, { recursive: true })
        const hostile = [
          "",
          "/etc/passwd",
          "../outside",
          "a/../../outside",
          "a/./b",
          ".",
          "..",
          "a//b",
          "a/",
          "/",
          "a\\..\\outside",
          "a\u0000b",
          "name with space",
          "ünïcode",
          "x".repeat(513)
        ]
        for (const key of hostile) {
          for (
            const attempt of [
              store.put(key, bytes("pwned")),
              store.append(key, bytes("pwned")),
              store.read(key),
              store.remove(key)
            ] as ReadonlyArray<Effect.Effect<unknown, unknown>>
          ) {
            const result = yield* Effect.either(attempt)
            expect(Either.isLeft(result)).toBe(true)
            if (Either.isLeft(result)) expect((result.left as { _tag: string })._tag).toBe("StorageError")
          }
        }
        expect(readFileSync(join(base, "outside"), "utf8")).toBe("secret")
        expect(readdirSync(root)).toEqual([])
        expect(readdirSync(base).sort()).toEqual(["outside", "root"])
      })))

  it("accepts exactly the keys of safe relative segments", () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[A-Za-z0-9._-]{1,20}$/), { minLength: 1, maxLength: 5 }),
        (segments) => {
          const key = segments.join("/")
          const safe = segments.every((s) => s !== "." && s !== "..")
          expect(isValidKey(key)).toBe(safe)
        }
      )
    )
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (key) => {
        if (isValidKey(key)) {
          expect(key.startsWith("/")).toBe(false)
          expect(key.split("/")).not.toContain("..")
          expect(key.split("/")).not.toContain("")
        }
      })
    )
  })

  it.scoped("streams a 20 MB blob in chunks, byte for byte", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const size = 20 * 1024 * 1024 + 123
        const data = new Uint8Array(size)
        for (let i = 0; i < size; i++) data[i] = (i * 7 + (i >>> 11)) & 0xff
        yield* store.put("big/blob.bin", data)
        const chunks = Option.getOrThrow(yield* chunksOf(store, "big/blob.bin"))
        expect(chunks.length).toBe(Math.ceil(size / CHUNK_BYTES))
        expect(chunks.every((c) => c.byteLength <= CHUNK_BYTES)).toBe(true)
        const read = concat(chunks)
        expect(read.byteLength).toBe(size)
        expect(Buffer.from(read).equals(Buffer.from(data))).toBe(true)
        // appending a large piece in one call keeps it whole
        yield* store.append("big/blob.bin", data.subarray(0, 3 * 1024 * 1024))
        const total = Option.getOrThrow(yield* chunksOf(store, "big/blob.bin")).reduce((n, c) => n + c.byteLength, 0)
        expect(total).toBe(size + 3 * 1024 * 1024)
      })), { timeout: 60_000 })

  it.scoped("a read opens the file only while its stream runs, and closes it when the stream stops early", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const openFiles = () => existsSync("/proc/self/fd") ? readdirSync("/proc/self/fd").length : 0
        yield* store.put("partial", new Uint8Array(5 * CHUNK_BYTES))
        const before = openFiles()
        const stream = Option.getOrThrow(yield* store.read("partial"))
        expect(openFiles()).toBe(before)
        const first = yield* Stream.runCollect(Stream.take(stream, 1))
        expect(Chunk.size(first)).toBe(1)
        expect(openFiles()).toBe(before)
        // a blob removed after `read` fails the stream when it runs
        expect(yield* store.remove("partial")).toBe(true)
        const gone = yield* Effect.either(Stream.runDrain(stream))
        expect(Either.isLeft(gone) && gone.left._tag).toBe("StorageError")
      })))

  it.scoped("concurrent appends from one process keep every chunk whole", () =>
    withStore((store) =>
      Effect.gen(function*() {
        // pieces large enough that one write system call could not carry them (Node splits at 512 KiB)
        const pieces = Array.from({ length: 24 }, (_, i) => {
          const size = 700 * 1024 + i * 1013
          const piece = new Uint8Array(size).fill(65 + i)
          piece[size - 1] = 10
          return piece
        })
        const small = Array.from({ length: 200 }, (_, i) => bytes(`line ${i}\n`))
        yield* Effect.forEach([...pieces, ...small], (piece) => store.append("shared.log", piece), {
          concurrency: "unbounded",
          discard: true
        })
        const content = concat(Option.getOrThrow(yield* chunksOf(store, "shared.log")))
        expect(content.byteLength).toBe([...pieces, ...small].reduce((n, p) => n + p.byteLength, 0))
        // every piece appears exactly once, contiguous
        const lines = text(content).split("\n").slice(0, -1)
        const smallLines = lines.filter((l) => l.startsWith("line "))
        expect(smallLines.sort()).toEqual(small.map((s) => text(s).trimEnd()).sort())
        const bigLines = lines.filter((l) => !l.startsWith("line "))
        expect(bigLines).toHaveLength(pieces.length)
        for (const line of bigLines) {
          expect(new Set(line).size).toBe(1)
        }
        expect(bigLines.map((l) => l.length + 1).sort((a, b) => a - b)).toEqual(
          pieces.map((p) => p.byteLength).sort((a, b) => a - b)
        )
      })), { timeout: 60_000 })

  it.scoped("concurrent puts leave one whole version", () =>
    withStore((store, { root }) =>
      Effect.gen(function*() {
        const versions = Array.from({ length: 16 }, (_, i) => new Uint8Array(256 * 1024 + i).fill(97 + i))
        yield* Effect.forEach(versions, (v) => store.put("doc", v), { concurrency: "unbounded", discard: true })
        const content = concat(Option.getOrThrow(yield* chunksOf(store, "doc")))
        expect(versions.some((v) => Buffer.from(v).equals(Buffer.from(content)))).toBe(true)
        expect(readdirSync(root)).toEqual(["doc"])
      })))
})
