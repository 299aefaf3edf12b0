/**
 * A real OpenID Connect provider on 127.0.0.1 for tests (panva's `oidc-provider`), and a
 * browser-less login that drives its pages with `fetch`.
 *
 * Decisions:
 * - Plain http on loopback: the issuer is `http://127.0.0.1:<port>`; the provider listens itself
 *   (no `proxy`), so its cookies are not `Secure` and work for `fetch` and Chromium alike.
 * - One confidential client of `application_type: "native"`: the provider then matches a
 *   loopback http redirect URI on any port (RFC 8252 §7.3); native clients always pass the
 *   consent prompt, which the interaction pages grant at once.
 * - Codes need PKCE; a refresh token comes with every code or device grant (no `offline_access`);
 *   `conformIdTokenClaims: false` puts the scopes' claims (email, groups…) in the ID token.
 * - Interaction pages are ours, minimal and script-free: `GET /interaction/:uid` is a login form
 *   (`username`, a configured user's `sub`) posted to `/interaction/:uid/login`, or a consent
 *   granted at once; the device flow's pages are plain forms too. No dev interactions (and so
 *   none of their warnings); the signing key is made at start, in memory. `oidc-provider` loads
 *   on first start, so importing this package costs nothing more (nor its Node 20 warning).
 * - The fetch login submits each page's form as a browser would, keeping cookies per path, and
 *   stops at the first redirect away from the provider.
 */
import { generateKeyPair, randomBytes, randomUUID } from "node:crypto"
import { once } from "node:events"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { promisify } from "node:util"
import type { Configuration, ErrorOut, Interaction, KoaContextWithOIDC, default as Provider } from "oidc-provider"

/** A user of the provider; `sub` is also the username typed on the login page. */
export interface OidcUser {
  readonly sub: string
  readonly email: string
  readonly email_verified?: boolean
  readonly name?: string
  readonly groups?: ReadonlyArray<string>
}

export interface OidcProviderOptions {
  readonly users: ReadonlyArray<OidcUser>
  /** Default `"agent-runs"`. */
  readonly clientId?: string
  /** Default: random. */
  readonly clientSecret?: string
  /** Loopback http URIs match on any port. Default `["http://127.0.0.1/callback"]`. */
  readonly redirectUris?: ReadonlyArray<string>
  /** How the client authenticates at the token endpoint; default `client_secret_post` (openid-client's default). */
  readonly clientAuthMethod?: "client_secret_post" | "client_secret_basic"
}

export interface OidcProviderServer {
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: string
  readonly redirectUris: ReadonlyArray<string>
  /** Space-separated scopes the provider serves. */
  readonly scopes: string
  readonly close: () => Promise<void>
}

/** The scopes served and the claims each releases. */
const claims = { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"], groups: ["groups"] }
const scopes = Object.keys(claims).join(" ")
const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

/** The provider's default lifetimes in seconds, given as numbers so it does not ask to change them. */
const hour = 60 * 60
const fortnight = 14 * 24 * hour
const ttl = {
  AccessToken: hour,
  AuthorizationCode: 60,
  DeviceCode: 10 * 60,
  Grant: fortnight,
  IdToken: hour,
  Interaction: hour,
  RefreshToken: fortnight,
  Session: fortnight
}

/** Starts a provider on a free port of 127.0.0.1 (see the module's comment). */
export const startOidcProvider = async (options: OidcProviderOptions): Promise<OidcProviderServer> => {
  const server = createServer()
  server.listen(0, "127.0.0.1")
  await once(server, "listening")
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const client = {
    clientId: options.clientId ?? "agent-runs",
    clientSecret: options.clientSecret ?? randomBytes(24).toString("base64url"),
    redirectUris: options.redirectUris ?? ["http://127.0.0.1/callback"],
    authMethod: options.clientAuthMethod ?? "client_secret_post"
  }
  const users = new Map(options.users.map((user) => [user.sub, user]))
  const { default: Provider } = await import("oidc-provider")
  const provider = new Provider(issuer, await configuration(client, users))
  const handle = requestHandler(provider, users)
  server.on("request", (req: IncomingMessage, res: ServerResponse) => void handle(req, res))
  const close = async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
  return { issuer, clientId: client.clientId, clientSecret: client.clientSecret, redirectUris: client.redirectUris, scopes, close }
}

interface ClientSettings {
  readonly clientId: string
  readonly clientSecret: string
  readonly redirectUris: ReadonlyArray<string>
  readonly authMethod: NonNullable<OidcProviderOptions["clientAuthMethod"]>
}

const configuration = async (client: ClientSettings, users: ReadonlyMap<string, OidcUser>): Promise<Configuration> => ({
  clients: [{
    client_id: client.clientId,
    client_secret: client.clientSecret,
    application_type: "native",
    redirect_uris: [...client.redirectUris],
    grant_types: ["authorization_code", "refresh_token", deviceGrant],
    response_types: ["code"],
    token_endpoint_auth_method: client.authMethod
  }],
  claims,
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  issueRefreshToken: (_ctx, oidcClient) => oidcClient.grantTypeAllowed("refresh_token"),
  findAccount: (_ctx, sub) => {
    const user = users.get(sub)
    return user && { accountId: sub, claims: () => ({ ...user, groups: [...(user.groups ?? [])] }) }
  },
  ttl,
  jwks: { keys: [await signingKey()] },
  cookies: { keys: [randomBytes(32).toString("base64url")] },
  features: {
    devInteractions: { enabled: false },
    deviceFlow: { enabled: true, userCodeInputSource: userCodePage, userCodeConfirmSource: confirmPage, successSource: successPage }
  },
  renderError: errorPage
})

/** A fresh RS256 key pair as a private JWK. */
const signingKey = async () => {
  const { privateKey } = await promisify(generateKeyPair)("rsa", { modulusLength: 2048 })
  return { ...privateKey.export({ format: "jwk" }), kid: randomUUID(), alg: "RS256", use: "sig" }
}

// ---- Pages --------------------------------------------------------------------------------

const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

const page = (title: string, body: string) =>
  `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`

const loginPage = (uid: string, error?: string) =>
  page("Sign in", `${error === undefined ? "" : `<p role="alert">${escapeHtml(error)}</p>`}
<form method="post" action="/interaction/${uid}/login">
<label>Username <input type="text" name="username" autofocus autocomplete="off"></label>
<button type="submit">Sign in</button>
</form>`)

// The device flow's `form` arguments are the provider's own forms (with its CSRF field); a
// button outside a form names it with `form=`.
const userCodePage = (ctx: KoaContextWithOIDC, form: string, _out?: ErrorOut, error?: Error) => {
  ctx.body = page("Enter the code", `${error === undefined ? "" : `<p role="alert">The code was not accepted.</p>`}
${form}<button type="submit" form="op.deviceInputForm">Continue</button>`)
}

const confirmPage = (ctx: KoaContextWithOIDC, form: string, _client: unknown, _info: unknown, userCode: string) => {
  ctx.body = page("Confirm the device", `<p>Code <code>${escapeHtml(userCode)}</code></p>
${form}<button type="submit" form="op.deviceConfirmForm">Continue</button>`)
}

const successPage = (ctx: KoaContextWithOIDC) => {
  ctx.body = page("Signed in", "<p>The device is signed in; you can close this page.</p>")
}

const errorPage = (ctx: KoaContextWithOIDC, out: ErrorOut) => {
  ctx.type = "html"
  ctx.body = page("Error", `<p>${escapeHtml(out.error)}: ${escapeHtml(out.error_description ?? "")}</p>`)
}

// ---- Interactions -------------------------------------------------------------------------

const interactionPath = /^\/interaction\/[^/]+(\/login)?$/

/** Our interaction routes, then everything else to the provider. */
const requestHandler = (provider: Provider, users: ReadonlyMap<string, OidcUser>) => {
  const oidc = provider.callback()
  return async (req: IncomingMessage, res: ServerResponse) => {
    const match = interactionPath.exec(new URL(req.url ?? "/", "http://127.0.0.1").pathname)
    if (match === null) return oidc(req, res)
    try {
      if (match[1] !== undefined && req.method === "POST") return await login(provider, users, req, res)
      if (req.method === "GET") return await showInteraction(provider, req, res)
      send(res, 405, "method not allowed")
    } catch (error) {
      send(res, 400, page("Error", `<p>${escapeHtml(String(error))}</p>`))
    }
  }
}

const send = (res: ServerResponse, status: number, html: string) => {
  res.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" })
  res.end(html)
}

/** The login form, or the consent granted at once. */
const showInteraction = async (provider: Provider, req: IncomingMessage, res: ServerResponse) => {
  const details = await provider.interactionDetails(req, res)
  if (details.prompt.name === "login") return send(res, 200, loginPage(details.uid))
  if (details.prompt.name !== "consent") return send(res, 501, page("Error", "<p>unsupported prompt</p>"))
  const grantId = await grantAll(provider, details)
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true })
}

/** Grants what the consent prompt found missing, in the interaction's grant or a new one. */
const grantAll = async (provider: Provider, details: Interaction) => {
  const existing = details.grantId === undefined ? undefined : await provider.Grant.find(details.grantId)
  const grant = existing ?? new provider.Grant({ accountId: details.session?.accountId, clientId: String(details.params.client_id) })
  const missing = details.prompt.details as {
    missingOIDCScope?: ReadonlyArray<string>
    missingOIDCClaims?: ReadonlyArray<string>
    missingResourceScopes?: Record<string, ReadonlyArray<string>>
  }
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "))
  if (missing.missingOIDCClaims) grant.addOIDCClaims([...missing.missingOIDCClaims])
  for (const [indicator, resourceScopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, resourceScopes.join(" "))
  }
  return grant.save()
}

/** The login form's post: a configured user's `sub` signs in; anything else sees the form again. */
const login = async (provider: Provider, users: ReadonlyMap<string, OidcUser>, req: IncomingMessage, res: ServerResponse) => {
  const details = await provider.interactionDetails(req, res)
  const username = new URLSearchParams(await readBody(req)).get("username")?.trim() ?? ""
  if (details.prompt.name !== "login" || !users.has(username)) {
    return send(res, 401, loginPage(details.uid, "Unknown user."))
  }
  await provider.interactionFinished(req, res, { login: { accountId: username } }, { mergeWithLastSubmission: false })
}

const readBody = async (req: IncomingMessage) => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8")
}

// ---- Browser-less login -------------------------------------------------------------------

/**
 * Signs `username` in from an authorization URL by submitting the provider's pages with
 * `fetch`; resolves to the redirect back to the client (`…/callback?code=…&state=…`).
 */
export const completeLogin = async (authorizationUrl: string | URL, username: string): Promise<URL> => {
  const redirect = await drive(new URL(authorizationUrl), { username })
  if (redirect === undefined) throw new Error("the login ended on the provider without redirecting to the client")
  return redirect
}

/** Signs `username` in on the device flow's verification page for `userCode`. */
export const completeDeviceLogin = async (verificationUri: string | URL, userCode: string, username: string): Promise<void> => {
  const redirect = await drive(new URL(verificationUri), { user_code: userCode, username })
  if (redirect !== undefined) throw new Error(`the device login was redirected away to ${redirect.href}`)
}

interface Step {
  readonly url: URL
  readonly form?: URLSearchParams
}

const maxSteps = 12

/**
 * Follows redirects and submits each page's form (its fields, with `fields` filled in where the
 * form has them) until a redirect leaves the provider (that URL) or a page has no form (undefined).
 */
const drive = (start: URL, fields: Readonly<Record<string, string>>): Promise<URL | undefined> => {
  const jar = cookieJar()
  const step = async ({ url, form }: Step, left: number): Promise<URL | undefined> => {
    if (left === 0) throw new Error(`the login took more than ${maxSteps} steps`)
    const response = await jar.fetch(url, form)
    const location = response.headers.get("location")
    if (response.status >= 300 && response.status < 400 && location !== null) {
      const next = new URL(location, url)
      return next.origin === start.origin ? step({ url: next }, left - 1) : next
    }
    const html = await response.text()
    if (!response.ok) throw new Error(`${response.status} at ${url.pathname}: ${html}`)
    const next = formOf(html)
    return next === undefined
      ? undefined
      : step({ url: new URL(next.action, url), form: filled(next.inputs, fields) }, left - 1)
  }
  return step({ url: start }, maxSteps)
}

const filled = (inputs: ReadonlyArray<readonly [string, string]>, fields: Readonly<Record<string, string>>) =>
  new URLSearchParams(inputs.map(([name, value]): [string, string] => [name, fields[name] ?? value]))

/** The first form of a page we serve: its action and named inputs with their values. */
const formOf = (html: string) => {
  const form = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(html)
  if (form === null) return undefined
  const inputs = [...(form[2] ?? "").matchAll(/<input\b[^>]*>/gi)].flatMap(([tag]) => {
    const name = attribute(tag, "name")
    return name === undefined ? [] : [[name, attribute(tag, "value") ?? ""] as const]
  })
  return { action: attribute(form[1] ?? "", "action") ?? "", inputs }
}

const attribute = (tag: string, name: string) => {
  const value = new RegExp(`\\s${name}="([^"]*)"`, "i").exec(tag)?.[1]
  return value === undefined ? undefined : unescapeHtml(value)
}

const unescapeHtml = (text: string) =>
  text.replace(/&quot;/g, "\"").replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&")

interface StoredCookie {
  readonly name: string
  readonly value: string
  readonly path: string
}

/** `fetch` without following redirects, keeping the cookies set (by name and path) as a browser does. */
const cookieJar = () => {
  const cookies = new Map<string, StoredCookie>()
  const store = (response: Response) => {
    for (const header of response.headers.getSetCookie()) {
      const cookie = parseSetCookie(header)
      const key = `${cookie.name} ${cookie.path}`
      if (cookie.expired) cookies.delete(key)
      else cookies.set(key, cookie)
    }
  }
  const header = (url: URL) =>
    [...cookies.values()]
      .filter(({ path }) => url.pathname === path || url.pathname.startsWith(path.endsWith("/") ? path : `${path}/`))
      .map(({ name, value }) => `${name}=${value}`)
      .join("; ")
  const fetchWithCookies = async (url: URL, form?: URLSearchParams) => {
    const headers: Record<string, string> = { cookie: header(url) }
    if (form !== undefined) headers["content-type"] = "application/x-www-form-urlencoded"
    const response = await fetch(url, { method: form === undefined ? "GET" : "POST", headers, body: form ?? null, redirect: "manual" })
    store(response)
    return response
  }
  return { fetch: fetchWithCookies }
}

const parseSetCookie = (header: string) => {
  const [pair = "", ...rest] = header.split(";")
  const equals = pair.indexOf("=")
  const attributes = new Map(rest.map((part) => {
    const [key = "", value = ""] = part.split("=", 2)
    return [key.trim().toLowerCase(), value.trim()] as const
  }))
  const value = pair.slice(equals + 1).trim()
  const expires = attributes.get("expires")
  const expired = value === "" || attributes.get("max-age") === "0" || (expires !== undefined && Date.parse(expires) <= Date.now())
  return { name: pair.slice(0, equals).trim(), value, path: attributes.get("path") ?? "/", expired }
}
