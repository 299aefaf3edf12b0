/**
 * The Docker engine's multiplexed stream (a stream attached without a TTY): frames of an 8-byte
 * header (stream type 0/1/2 for stdin/stdout/stderr, three zero bytes, a big-endian 32-bit
 * length) followed by that many bytes. The demultiplexer is incremental and copies nothing it
 * does not have to: a payload is handed on in the pieces it arrives in, so a 10 MB line never
 * sits in one buffer.
 */

export interface Piece {
  /** 1 = stdout, 2 = stderr (0 = stdin, never sent by the engine). */
  readonly stream: number
  readonly bytes: Uint8Array
}

export class Demultiplexer {
  private header = Buffer.alloc(8)
  private headerLength = 0
  private remaining = 0
  private stream = 0

  /** The payload pieces `chunk` completes, in order. */
  push(chunk: Uint8Array): Array<Piece> {
    const pieces: Array<Piece> = []
    let offset = 0
    while (offset < chunk.length) {
      if (this.remaining === 0) {
        const take = Math.min(8 - this.headerLength, chunk.length - offset)
        this.header.set(chunk.subarray(offset, offset + take), this.headerLength)
        this.headerLength += take
        offset += take
        if (this.headerLength === 8) {
          this.stream = this.header[0]!
          this.remaining = this.header.readUInt32BE(4)
          this.headerLength = 0
        }
        continue
      }
      const take = Math.min(this.remaining, chunk.length - offset)
      pieces.push({ stream: this.stream, bytes: chunk.subarray(offset, offset + take) })
      this.remaining -= take
      offset += take
    }
    return pieces
  }
}
