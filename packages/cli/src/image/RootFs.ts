/**
 * A root file system put together from this machine's files, as the entries of a tar stream
 * (Tar.ts) rather than a copy on disk: each entry by its path in the image, added once (the first
 * addition of a path wins), its parent directories made as it is added (root's, 0755).
 *
 * - A host file is added by its real path's content (a symbolic link on the host is followed),
 *   with its permission bits and owned by root unless told otherwise; a file that is the same
 *   inode as one already added becomes a hard link to it, so a command that is a hard link to its
 *   platform package's binary is stored once.
 * - A host tree is added with its symbolic links kept as links.
 * - `sharedLibraries` adds what `ldd` lists for ELF executables, at the paths it prints (with
 *   their real content), the dynamic loader included.
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { TarEntry } from "./Tar.js"

export interface Owner {
  readonly uid: number
  readonly gid: number
}

const root: Owner = { uid: 0, gid: 0 }

/** Whether a host file starts like an ELF object (an executable or a shared library). */
export const isElf = (file: string): boolean => {
  let fd: number | undefined
  try {
    fd = Fs.openSync(file, "r")
    const magic = Buffer.alloc(4)
    return Fs.readSync(fd, magic, 0, 4, 0) === 4 && magic.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))
  } catch {
    return false
  } finally {
    if (fd !== undefined) Fs.closeSync(fd)
  }
}

/** The libraries `ldd` lists for these ELF files (absolute paths as it prints them, each once); none for static ones. */
export const lddLibraries = (files: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (files.length === 0) return []
  const result = spawnSync("ldd", [...files], { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 })
  if (result.error !== undefined) throw new Error(`ldd could not run: ${result.error.message}`)
  const libraries = new Set<string>()
  for (const line of (result.stdout ?? "").split("\n")) {
    const library = /(\/\S+)\s+\(0x/.exec(line)?.[1]
    if (library !== undefined) libraries.add(library)
  }
  return [...libraries]
}

export class RootFs {
  private readonly byPath = new Map<string, TarEntry>()
  private readonly byInode = new Map<string, string>()
  private contentBytes = 0

  /** How many entries so far. */
  get size(): number {
    return this.byPath.size
  }

  /** The bytes of file content so far (a hard link counts nothing). */
  get bytes(): number {
    return this.contentBytes
  }

  has(path: string): boolean {
    return this.byPath.has(Path.posix.resolve("/", path))
  }

  /** The entries in the order added: every directory before what it holds. */
  entries(): Iterable<TarEntry> {
    return this.byPath.values()
  }

  /** A directory (its parents made root's, 0755). */
  directory(path: string, mode = 0o755, owner: Owner = root): this {
    const at = Path.posix.resolve("/", path)
    if (at === "/" || this.byPath.has(at)) return this
    this.parents(at)
    this.byPath.set(at, { type: "directory", path: at, mode, ...owner })
    return this
  }

  /** A file of the given content. */
  text(path: string, content: string, mode = 0o644, owner: Owner = root): this {
    const at = Path.posix.resolve("/", path)
    if (this.byPath.has(at)) return this
    this.parents(at)
    this.byPath.set(at, { type: "file", path: at, mode, content, ...owner })
    this.contentBytes += Buffer.byteLength(content)
    return this
  }

  /** A symbolic link at `path` to `target` (kept as written). */
  symlink(path: string, target: string): this {
    const at = Path.posix.resolve("/", path)
    if (this.byPath.has(at)) return this
    this.parents(at)
    this.byPath.set(at, { type: "symlink", path: at, target })
    return this
  }

  /** The host file `hostPath` (its real content) at `path` (by default the same path). */
  file(hostPath: string, path: string = hostPath, owner: Owner = root): this {
    const at = Path.posix.resolve("/", path)
    if (this.byPath.has(at)) return this
    const real = Fs.realpathSync(hostPath)
    const stat = Fs.statSync(real)
    if (!stat.isFile()) throw new Error(`${hostPath} is not a regular file`)
    this.parents(at)
    const inode = `${stat.dev}:${stat.ino}`
    const first = this.byInode.get(inode)
    if (first !== undefined) {
      this.byPath.set(at, { type: "hardlink", path: at, target: first })
      return this
    }
    this.byInode.set(inode, at)
    this.byPath.set(at, { type: "file", path: at, mode: stat.mode & 0o777, source: real, ...owner })
    this.contentBytes += stat.size
    return this
  }

  /**
   * The host directory `hostDir` and everything in it at `path` (by default the same path):
   * directories with their modes, files, symbolic links as links. `skip` leaves out an entry
   * (and, for a directory, what it holds) by its host path.
   */
  tree(hostDir: string, path: string = hostDir, skip: (hostPath: string) => boolean = () => false): this {
    const at = Path.posix.resolve("/", path)
    const stat = Fs.statSync(hostDir)
    this.directory(at, stat.mode & 0o777)
    for (const name of Fs.readdirSync(hostDir).sort()) {
      const host = Path.join(hostDir, name)
      if (skip(host)) continue
      const inImage = Path.posix.join(at, name)
      const entry = Fs.lstatSync(host)
      if (entry.isSymbolicLink()) this.symlink(inImage, Fs.readlinkSync(host))
      else if (entry.isDirectory()) this.tree(host, inImage, skip)
      else if (entry.isFile()) this.file(host, inImage)
    }
    return this
  }

  /** The shared libraries of these ELF files (others are ignored), each once. */
  sharedLibraries(files: Iterable<string>): this {
    for (const library of lddLibraries([...new Set(files)].filter(isElf))) this.file(library)
    return this
  }

  private parents(at: string): void {
    const parent = Path.posix.dirname(at)
    if (parent !== "/" && !this.byPath.has(parent)) this.directory(parent)
  }
}
