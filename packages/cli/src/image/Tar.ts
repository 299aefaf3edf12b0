/**
 * A tar stream (POSIX ustar, with a pax header for a name, link target or size ustar cannot hold)
 * written from a list of entries, for `docker import -`: directories, regular files read from the
 * host or given inline, symbolic links and hard links (to an earlier entry), each with the mode and
 * owner it has in the image whoever builds it. Files are streamed as they are read, so an image of
 * a gigabyte goes through without being held in memory or copied to disk first; a file that shrinks
 * while it is read fails the archive (one that grows is cut at the size it had).
 */
import * as Fs from "node:fs"
import type { Writable } from "node:stream"

interface Common {
  /** Its path in the image, absolute (`/usr/bin/git`). */
  readonly path: string
  /** Permission bits (`0o755`); setuid, setgid and sticky bits included. */
  readonly mode: number
  readonly uid?: number
  readonly gid?: number
}

export type TarEntry =
  | Common & { readonly type: "directory" }
  /** A host file's content (read when the stream reaches it). */
  | Common & { readonly type: "file"; readonly source: string }
  | Common & { readonly type: "file"; readonly content: string | Uint8Array }
  | { readonly type: "symlink"; readonly path: string; readonly target: string }
  /** Another name of the file of an earlier entry (`target`: its path in the image). */
  | { readonly type: "hardlink"; readonly path: string; readonly target: string }

const BLOCK = 512
const MAX_OCTAL_SIZE = 0o77777777777

/** The name an entry has in the archive: relative to its root, a directory with a trailing slash. */
const archiveName = (path: string, directory: boolean): string => {
  const relative = path.replace(/^\/+/, "")
  return directory && relative !== "" ? `${relative}/` : relative === "" ? "./" : relative
}

const writeString = (header: Buffer, offset: number, length: number, value: string): void => {
  header.write(value, offset, Math.min(length, Buffer.byteLength(value)), "utf8")
}

const writeOctal = (header: Buffer, offset: number, length: number, value: number): void => {
  writeString(header, offset, length, `${value.toString(8).padStart(length - 1, "0")}\0`)
}

/** A pax record: `"<length> <key>=<value>\n"`, where length counts the whole record. */
const paxRecord = (key: string, value: string): string => {
  const body = ` ${key}=${value}\n`
  const bodyBytes = Buffer.byteLength(body)
  let length = bodyBytes + 1
  while (String(length).length + bodyBytes !== length) length = String(length).length + bodyBytes
  return `${length}${body}`
}

interface HeaderFields {
  readonly name: string
  readonly mode: number
  readonly uid: number
  readonly gid: number
  readonly size: number
  readonly mtime: number
  /** `0` file, `1` hard link, `2` symbolic link, `5` directory, `x` pax header. */
  readonly typeflag: string
  readonly linkname: string
}

const ustarHeader = (fields: HeaderFields): Buffer => {
  const header = Buffer.alloc(BLOCK)
  writeString(header, 0, 100, fields.name)
  writeOctal(header, 100, 8, fields.mode & 0o7777)
  writeOctal(header, 108, 8, fields.uid)
  writeOctal(header, 116, 8, fields.gid)
  writeOctal(header, 124, 12, fields.size)
  writeOctal(header, 136, 12, Math.max(0, Math.floor(fields.mtime)))
  header.fill(" ", 148, 156)
  writeString(header, 156, 1, fields.typeflag)
  writeString(header, 157, 100, fields.linkname)
  writeString(header, 257, 6, "ustar\0")
  writeString(header, 263, 2, "00")
  let sum = 0
  for (const byte of header) sum += byte
  writeString(header, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `)
  return header
}

const padding = (size: number): Buffer => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK)

const fits = (value: string): boolean => Buffer.byteLength(value) <= 100 && /^[\x20-\x7e]*$/.test(value)

/** The header blocks of an entry: a pax header first when ustar cannot say it all. */
export const headerBlocks = (fields: HeaderFields): Buffer => {
  const records = [
    ...(fits(fields.name) ? [] : [paxRecord("path", fields.name)]),
    ...(fits(fields.linkname) ? [] : [paxRecord("linkpath", fields.linkname)]),
    ...(fields.size > MAX_OCTAL_SIZE ? [paxRecord("size", String(fields.size))] : [])
  ]
  const ustar = ustarHeader({
    ...fields,
    name: fits(fields.name) ? fields.name : "pax-long-name",
    linkname: fits(fields.linkname) ? fields.linkname : "pax-long-link",
    size: fields.size > MAX_OCTAL_SIZE ? 0 : fields.size
  })
  if (records.length === 0) return ustar
  const body = Buffer.from(records.join(""), "utf8")
  const pax = ustarHeader({ name: "PaxHeader", mode: 0o644, uid: 0, gid: 0, size: body.length, mtime: fields.mtime, typeflag: "x", linkname: "" })
  return Buffer.concat([pax, body, padding(body.length), ustar])
}

/** Buffers for file contents, reused once written: fresh gigabytes would cost more than the copy. */
class BufferPool {
  private readonly free: Array<Buffer>
  private readonly waiting: Array<(buffer: Buffer) => void> = []
  constructor(count: number, readonly size: number) {
    this.free = Array.from({ length: count }, () => Buffer.allocUnsafeSlow(size))
  }
  take(): Promise<Buffer> {
    const buffer = this.free.pop()
    return buffer !== undefined ? Promise.resolve(buffer) : new Promise((resolve) => this.waiting.push(resolve))
  }
  give(buffer: Buffer): void {
    const next = this.waiting.shift()
    if (next !== undefined) next(buffer)
    else this.free.push(buffer)
  }
}

const headerOf = (entry: TarEntry, mtime: number, size: number): Buffer => {
  const owner = entry.type === "symlink" || entry.type === "hardlink" ? { uid: 0, gid: 0 } : { uid: entry.uid ?? 0, gid: entry.gid ?? 0 }
  const base = { ...owner, mtime, linkname: "", size: 0 }
  switch (entry.type) {
    case "directory":
      return headerBlocks({ ...base, name: archiveName(entry.path, true), mode: entry.mode, typeflag: "5" })
    case "symlink":
      return headerBlocks({ ...base, name: archiveName(entry.path, false), mode: 0o777, typeflag: "2", linkname: entry.target })
    case "hardlink":
      return headerBlocks({ ...base, name: archiveName(entry.path, false), mode: 0o644, typeflag: "1", linkname: archiveName(entry.target, false) })
    case "file":
      return headerBlocks({ ...base, name: archiveName(entry.path, false), mode: entry.mode, size, typeflag: "0" })
  }
}

/**
 * Writes the archive of `entries`, in their order (a directory before what it holds), to `out`,
 * and ends it; `mtime` (seconds) is the time of all but host files. Host files are read as they
 * come, into a few buffers that are reused once `out` has taken them, so memory stays small and
 * `out`'s backpressure is obeyed. Fails when `out` fails or a file shrinks while it is read.
 */
export const writeTar = async (entries: Iterable<TarEntry>, out: Writable, mtime: number = Date.now() / 1000): Promise<void> => {
  const failed = new Promise<never>((_, reject) => out.once("error", reject))
  failed.catch(() => undefined)
  const pool = new BufferPool(4, 4 * 1024 * 1024)
  const write = (chunk: Buffer, written?: () => void) => {
    out.write(chunk, () => written?.())
  }
  for (const entry of entries) {
    if (entry.type !== "file") {
      write(headerOf(entry, mtime, 0))
    } else if ("content" in entry) {
      const content = typeof entry.content === "string" ? Buffer.from(entry.content, "utf8") : Buffer.from(entry.content)
      write(headerOf(entry, mtime, content.length))
      write(content)
      write(padding(content.length))
    } else {
      const fd = Fs.openSync(entry.source, "r")
      try {
        const stat = Fs.fstatSync(fd)
        write(headerOf(entry, stat.mtimeMs / 1000, stat.size))
        for (let left = stat.size; left > 0;) {
          const buffer = await Promise.race([pool.take(), failed])
          const read = Fs.readSync(fd, buffer, 0, Math.min(left, pool.size), null)
          if (read === 0) {
            pool.give(buffer)
            throw new Error(`${entry.source} shrank while it was read`)
          }
          left -= read
          write(read === buffer.length ? buffer : buffer.subarray(0, read), () => pool.give(buffer))
        }
        write(padding(stat.size))
      } finally {
        Fs.closeSync(fd)
      }
    }
  }
  write(Buffer.alloc(2 * BLOCK))
  await Promise.race([new Promise<void>((resolve) => out.end(resolve)), failed])
}
