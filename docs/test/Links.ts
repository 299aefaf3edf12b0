/**
 * The checker of the Markdown links of the repository (docs/test/links.test.ts): every link or
 * image `[text](target)`, reference definition `[id]: target` and HTML `href`/`src` of every
 * Markdown file whose target is not an external URL (`http:`, `https:`, `mailto:`, any other
 * scheme, `//host`) must name a file or directory of the repository, resolved relative to the
 * Markdown file (`#anchor` and `?query` stripped), without leaving the repository; a link with an
 * `#anchor` to a Markdown file (itself, for `#anchor` alone) must name one of its headings.
 *
 * Decisions:
 * - The repository's files are those git knows and does not ignore (`git ls-files --cached
 *   --others --exclude-standard`) that exist on disk, so a link to a built or ignored file (`dist/`,
 *   `data/`) is broken, as it is on GitHub; a directory exists when it holds such a file.
 * - Anchors follow GitHub's slugs: the heading's text without Markdown (code spans, emphasis,
 *   links keep their text), lower case, every character but letters, digits, marks, `_`, `-` and
 *   spaces dropped, each space a `-`; a repeated slug gets `-1`, `-2`, … in order. HTML
 *   `id`/`name` attributes count too. Anchors of files other than Markdown are not checked.
 * - Fenced code blocks and code spans hold no links and no headings. An absolute path (`/docs`) is
 *   broken: on GitHub it does not resolve inside the repository.
 */
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { posix } from "node:path"

/** A link that does not resolve. */
export interface BrokenLink {
  /** The Markdown file, relative to the root, with `/`. */
  readonly file: string
  readonly line: number
  readonly target: string
  readonly reason: string
}

/** A link as written: where, and its target. */
export interface Link {
  readonly line: number
  readonly target: string
}

/** `file:line → target (reason)`. */
export const formatBroken = (broken: BrokenLink): string =>
  `${broken.file}:${broken.line} → ${broken.target} (${broken.reason})`

/** The files of the repository at `root` that git does not ignore and that exist, relative, with `/`. */
export const repositoryFiles = (root: string): Array<string> =>
  execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024
  })
    .split("\0")
    .filter((file) => file !== "" && existsSync(posix.join(root, file)))

const FENCE = /^ {0,3}(`{3,}|~{3,})/

/**
 * The text with fenced code blocks and code spans blanked out (every character but newlines
 * becomes a space), so that positions and line numbers stay those of the original.
 */
export const withoutCode = (markdown: string): string => {
  const lines = markdown.split("\n")
  let fence: string | undefined
  const kept = lines.map((line) => {
    const opening = FENCE.exec(line)?.[1]
    if (fence === undefined) {
      if (opening === undefined) return line
      fence = opening
      return ""
    }
    if (opening !== undefined && opening[0] === fence[0] && opening.length >= fence.length && line.trim() === opening) {
      fence = undefined
    }
    return ""
  })
  return kept
    .join("\n")
    .replace(/(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n)[\s\S])*?)(?<!`)\1(?!`)/g, (span) => span.replace(/[^\n]/g, " "))
}

const lineAt = (text: string, index: number): number => {
  let line = 1
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++
  return line
}

const INLINE_LINK =
  /!?\[(?:[^[\]\\]|\\.|\[(?:[^[\]\\]|\\.)*\])*\]\(\s*(<[^<>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g
const REFERENCE_DEFINITION = /^ {0,3}\[[^\]\n]+\]:[ \t]*(<[^<>\n]*>|\S+)/gm
const HTML_LINK = /<(?:a|img)\b[^>]*?\s(?:href|src)\s*=\s*"([^"]*)"/gi

/** Every link, image, reference definition and HTML `href`/`src` of a Markdown text, in order. */
export const linksOf = (markdown: string): Array<Link> => {
  const text = withoutCode(markdown)
  const found: Array<{ index: number; target: string }> = []
  for (const pattern of [INLINE_LINK, REFERENCE_DEFINITION, HTML_LINK]) {
    for (const match of text.matchAll(pattern)) {
      const raw = match[1] ?? ""
      found.push({ index: match.index, target: raw.startsWith("<") && raw.endsWith(">") ? raw.slice(1, -1) : raw })
    }
  }
  return found.sort((a, b) => a.index - b.index).map(({ index, target }) => ({ line: lineAt(text, index), target }))
}

/** GitHub's anchor of a heading's text, before the `-N` of repeated ones. */
export const slugOf = (heading: string): string =>
  heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/`/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-")

const ATX_HEADING = /^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/
const SETEXT_UNDERLINE = /^ {0,3}(?:=+|-+)[ \t]*$/
const PARAGRAPH_LINE = /^ {0,3}(?![-*+>#|]|\d+[.)]\s)\S/

/** The anchors of a Markdown text: its headings' slugs (GitHub's rules) and HTML ids and names. */
export const anchorsOf = (markdown: string): Set<string> => {
  const lines = withoutCode(markdown).split("\n")
  const original = markdown.split("\n")
  const anchors = new Set<string>()
  const counts = new Map<string, number>()
  const add = (heading: string) => {
    const slug = slugOf(heading)
    const seen = counts.get(slug) ?? 0
    counts.set(slug, seen + 1)
    anchors.add(seen === 0 ? slug : `${slug}-${seen}`)
  }
  lines.forEach((line, i) => {
    const atx = ATX_HEADING.exec(line)
    if (atx !== null) {
      // The heading's own text, code spans included (blanked above only to find the heading).
      add(ATX_HEADING.exec(original[i]!)?.[1] ?? atx[1] ?? "")
      return
    }
    const previous = lines[i - 1]
    if (i > 0 && SETEXT_UNDERLINE.test(line) && previous !== undefined && PARAGRAPH_LINE.test(previous)) {
      const before = lines[i - 2]
      if (before === undefined || before.trim() === "") add(original[i - 1]!)
    }
  })
  for (const match of markdown.matchAll(/<[a-z]+\b[^>]*?\s(?:id|name)\s*=\s*"([^"]+)"/gi)) anchors.add(match[1]!)
  return anchors
}

const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")

const decode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * The broken links of the Markdown files among `files` (paths relative to `root`, with `/`; the
 * repository's files, which link targets must be among).
 */
export const checkLinks = (root: string, files: ReadonlyArray<string>): Array<BrokenLink> => {
  const fileSet = new Set(files)
  const directories = new Set<string>([""])
  for (const file of files) {
    for (let dir = posix.dirname(file); dir !== "." && !directories.has(dir); dir = posix.dirname(dir)) {
      directories.add(dir)
    }
  }
  const texts = new Map<string, string>()
  const textOf = (file: string): string => {
    let text = texts.get(file)
    if (text === undefined) {
      text = readFileSync(posix.join(root, file), "utf8")
      texts.set(file, text)
    }
    return text
  }
  const anchorCache = new Map<string, Set<string>>()
  const anchorsOfFile = (file: string): Set<string> => {
    let anchors = anchorCache.get(file)
    if (anchors === undefined) {
      anchors = anchorsOf(textOf(file))
      anchorCache.set(file, anchors)
    }
    return anchors
  }

  const broken: Array<BrokenLink> = []
  const markdownFiles = files.filter((file) => file.endsWith(".md") && !file.split("/").includes("node_modules")).sort()
  for (const file of markdownFiles) {
    for (const { line, target } of linksOf(textOf(file))) {
      const refuse = (reason: string) => broken.push({ file, line, target, reason })
      const trimmed = target.trim()
      if (trimmed === "") {
        refuse("empty target")
        continue
      }
      if (isExternal(trimmed)) continue
      const hash = trimmed.indexOf("#")
      const beforeHash = hash === -1 ? trimmed : trimmed.slice(0, hash)
      const anchor = hash === -1 ? undefined : decode(trimmed.slice(hash + 1))
      const path = decode(beforeHash.split("?")[0]!)
      let resolved = file
      if (path !== "") {
        if (path.startsWith("/")) {
          refuse("absolute path: link relative to the file instead")
          continue
        }
        resolved = posix.normalize(posix.join(posix.dirname(file), path)).replace(/\/+$/, "")
        if (resolved === ".." || resolved.startsWith("../")) {
          refuse("leaves the repository")
          continue
        }
        if (resolved === ".") resolved = ""
      }
      if (fileSet.has(resolved)) {
        if (anchor !== undefined && anchor !== "" && resolved.endsWith(".md") && !anchorsOfFile(resolved).has(anchor)) {
          refuse(`no heading #${anchor} in ${resolved}`)
        }
      } else if (!directories.has(resolved)) {
        refuse(`no such file or directory: ${resolved}`)
      }
    }
  }
  return broken
}
