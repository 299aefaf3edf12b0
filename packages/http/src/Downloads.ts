/**
 * Signed download URLs (docs/reference/api.md): a transcript redirect (and the transcript link,
 * the same URL as JSON) points at
 * `{public_url}/api/v1/downloads/transcripts/{runId}?expires=<unix seconds>&signature=<hex>`, which
 * needs no bearer token. The signature is HMAC-SHA256 over `<path>\n<expires>` with a key derived
 * from the server's secret key (so the storage encryption key is never used directly for two
 * purposes). Verification compares in constant time; an altered path, an altered or missing
 * signature, or a time at or after `expires` is refused.
 */
import { HttpServerResponse } from "@effect/platform"
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import { API_PREFIX } from "@agent-runs/api/Api"

/** How long a download URL stays valid by default: 15 minutes. */
export const DEFAULT_DOWNLOAD_TTL_SECONDS = 15 * 60

/** The route of transcript downloads, below the API prefix. */
export const TRANSCRIPT_DOWNLOAD_ROUTE = `${API_PREFIX}/downloads/transcripts/:runId`

/** Why a download URL was refused. */
export type DownloadRefusal = "expired" | "invalid"

/** A signed download URL and when it stops working (epoch milliseconds, a whole second). */
export interface SignedUrl {
  readonly url: string
  readonly expiresAtMillis: number
}

export class DownloadUrls extends Context.Tag("@agent-runs/http/DownloadUrls")<DownloadUrls, {
  /** The absolute, signed URL of a run's transcript, valid from `nowMillis` for the configured time. */
  readonly transcript: (runId: string, nowMillis: number) => SignedUrl
  /** Checks a download of `path` (without the query) at `nowMillis`. */
  readonly verify: (
    path: string,
    params: { readonly expires: string | undefined; readonly signature: string | undefined },
    nowMillis: number
  ) => DownloadRefusal | undefined
}>() {}

/** The path of a run's transcript download. */
export const transcriptPath = (runId: string): string => `${API_PREFIX}/downloads/transcripts/${encodeURIComponent(runId)}`

/** Signs download URLs with a key derived from `secretKey`; verifies them under it or one of `otherKeys` (a rotation). */
export const layer = (options: {
  readonly secretKey: Redacted.Redacted<Uint8Array>
  readonly otherKeys?: ReadonlyArray<Redacted.Redacted<Uint8Array>>
  readonly publicUrl: string
  readonly ttlSeconds?: number
}) =>
  Layer.sync(DownloadUrls, () => {
    const derive = (k: Redacted.Redacted<Uint8Array>) => createHmac("sha256", Redacted.value(k)).update("agent-runs download urls v1").digest()
    const keys = [options.secretKey, ...(options.otherKeys ?? [])].map(derive)
    const ttl = options.ttlSeconds ?? DEFAULT_DOWNLOAD_TTL_SECONDS
    const base = options.publicUrl.replace(/\/+$/, "")
    const macWith = (key: Buffer, path: string, expires: string) => createHmac("sha256", key).update(`${path}\n${expires}`).digest()
    const mac = (path: string, expires: string) => macWith(keys[0]!, path, expires)
    return {
      transcript: (runId, nowMillis) => {
        const path = transcriptPath(runId)
        const expiresAt = Math.floor(nowMillis / 1000) + ttl
        const expires = String(expiresAt)
        return {
          url: `${base}${path}?expires=${expires}&signature=${mac(path, expires).toString("hex")}`,
          expiresAtMillis: expiresAt * 1000
        }
      },
      verify: (path, { expires, signature }, nowMillis) => {
        if (expires === undefined || signature === undefined || !/^\d{1,12}$/.test(expires)) return "invalid"
        if (!/^[0-9a-f]{64}$/.test(signature)) return "invalid"
        const given = Buffer.from(signature, "hex")
        if (!keys.some((key) => timingSafeEqual(macWith(key, path, expires), given))) return "invalid"
        return nowMillis >= Number(expires) * 1000 ? "expired" : undefined
      }
    }
  })

/** A run's signed transcript URL, valid from now. */
export const transcriptLink = (runId: string) =>
  Effect.gen(function*() {
    const downloads = yield* DownloadUrls
    return downloads.transcript(runId, yield* Clock.currentTimeMillis)
  })

/** The 302 answer of a transcript endpoint: `Location` is the run's signed transcript URL. */
export const transcriptRedirect = (runId: string) =>
  Effect.map(transcriptLink(runId), (link) => HttpServerResponse.empty({ status: 302, headers: { location: link.url } }))
