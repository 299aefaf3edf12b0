/**
 * The end of a process's output, kept as it comes (a failed setup command's message quotes it):
 * shared by the executors.
 */

/** The last `limit` bytes of everything pushed. */
export class OutputTail {
  private chunks: Array<Uint8Array> = []
  private size = 0

  constructor(private readonly limit: number) {}

  push(bytes: Uint8Array): void {
    this.chunks.push(Uint8Array.from(bytes))
    this.size += bytes.length
    while (this.chunks.length > 1 && this.size - this.chunks[0]!.length >= this.limit) {
      this.size -= this.chunks.shift()!.length
    }
  }

  /** The kept bytes as text (a character cut at the start becomes U+FFFD). */
  toString(): string {
    const all = new Uint8Array(this.size)
    let offset = 0
    for (const chunk of this.chunks) {
      all.set(chunk, offset)
      offset += chunk.length
    }
    return new TextDecoder().decode(all.subarray(Math.max(0, all.length - this.limit)))
  }
}
