/**
 * `agent-runs login --sso`: sign-in with the server's OpenID Connect provider through the device
 * flow (docs/sign-in.md). The server starts it (`POST /auth/oidc/device`) and holds the client's
 * secret; the CLI shows the code and where to enter it on stderr, opens that page in the browser
 * (`$BROWSER` when set, else the platform's opener; `--no-browser` only prints), and asks the
 * server for the session (`POST /auth/oidc/device/token`, which waits up to 20 s each time) until
 * the user approved, refused, or the code expired.
 */
import { Clock, Console, Data, Effect } from "effect"
import { spawn } from "node:child_process"

/** The sign-in did not happen; the message says why. */
export class SignInFailed extends Data.TaggedError("SignInFailed")<{ readonly message: string }> {}

/** What the server answers once the user approved: a session token and when it expires. */
export interface DeviceSession {
  readonly token: string
  readonly expires_at: string
  readonly principal: { readonly uid: string; readonly display_name: string }
}

interface DeviceStart {
  readonly device_code: string
  readonly user_code: string
  readonly verification_uri: string
  readonly verification_uri_complete?: string
  readonly expires_in: number
  readonly interval: number
}

const post = (url: string, body: unknown) =>
  Effect.tryPromise({
    try: async () => {
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
      const text = await response.text()
      return { status: response.status, body: (text === "" ? undefined : JSON.parse(text)) as Record<string, unknown> | undefined }
    },
    catch: (error) => new SignInFailed({ message: `could not reach ${new URL(url).origin}: ${(error as Error).message}` })
  })

const refusal = (status: number, body: Record<string, unknown> | undefined) =>
  new SignInFailed({
    message: status === 404
      ? "this server does not offer single sign-on (its administrator sets AGENT_RUNS_OIDC_ISSUER); use --token"
      : `the server answered ${status}: ${typeof body?.["error"] === "string" ? body["error"] : "no reason given"}`
  })

/** Opens `url` in the user's browser, best effort: `$BROWSER`, else the platform's opener. */
export const openBrowser = (url: string): Effect.Effect<void> =>
  Effect.sync(() => {
    const [command, args] = process.env["BROWSER"]
      ? [process.env["BROWSER"], [url]]
      : process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
      ? ["cmd", ["/c", "start", "", url]]
      : ["xdg-open", [url]]
    const child = spawn(command, args, { detached: true, stdio: "ignore" })
    child.on("error", () => undefined)
    child.unref()
  })

/** Signs in through the device flow of the server at `server` (its base URL). */
export const deviceSignIn = (server: string, options: { readonly openBrowser: boolean }) =>
  Effect.gen(function*() {
    const started = yield* post(`${server}/auth/oidc/device`, {})
    if (started.status !== 200) return yield* refusal(started.status, started.body)
    const device = started.body as unknown as DeviceStart
    const page = device.verification_uri_complete ?? device.verification_uri
    yield* Console.error(`To sign in, open ${device.verification_uri} and enter the code ${device.user_code}`)
    if (options.openBrowser) yield* openBrowser(page)
    const deadline = (yield* Clock.currentTimeMillis) + device.expires_in * 1000
    while ((yield* Clock.currentTimeMillis) < deadline) {
      const poll = yield* post(`${server}/auth/oidc/device/token`, {
        device_code: device.device_code,
        interval: device.interval,
        expires_in: device.expires_in
      })
      if (poll.status === 200) return poll.body as unknown as DeviceSession
      if (poll.status !== 202) return yield* refusal(poll.status, poll.body)
    }
    return yield* new SignInFailed({ message: "the code expired before the sign-in was approved; run agent-runs login --sso again" })
  })
