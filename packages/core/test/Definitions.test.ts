import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, DateTime, Effect, Either, Exit } from "effect"
import * as fc from "fast-check"
import { stringify } from "yaml"
import { Automation } from "../src/domain/Automation.js"
import type { CreateAutomationRequest, UpdateAutomationRequest } from "../src/domain/Automation.js"
import type {
  AutomationDefinition,
  DefinitionFile,
  GitHubDefinition,
  Parsed,
  WebhookDefinition,
  WebhookSecretCheck
} from "../src/domain/Definitions.js"
import { changes, describeOutcome, describePlanned, parse, plan } from "../src/domain/Definitions.js"
import { apply, DefinitionsApplyFailed, DefinitionsRejected, dryRun } from "../src/services/DefinitionsApplier.js"
import type { DefinitionsTarget } from "../src/services/DefinitionsApplier.js"
import { GITHUB_COM, GitHubAuth } from "../src/domain/GitHub.js"
import type { ConnectGitHubRequest, GitHubConnection } from "../src/domain/GitHub.js"
import { AutomationId, OutboundWebhookUid, PrincipalUid, WebhookUid } from "../src/domain/Ids.js"
import { CheckOutboundWebhookResponse, MAX_OUTBOUND_WEBHOOKS_PER_TEAM, OutboundWebhook } from "../src/domain/OutboundWebhook.js"
import type {
  CheckOutboundWebhookRequest,
  CreateOutboundWebhookRequest,
  PatchOutboundWebhookRequest,
  RotateOutboundSecretRequest
} from "../src/domain/OutboundWebhook.js"
import { AgentConfig } from "../src/domain/Run.js"
import type { SecretName } from "../src/domain/Secret.js"
import { MAX_WEBHOOKS_PER_TEAM, SignatureScheme, Webhook } from "../src/domain/Webhook.js"
import type { CreateWebhookRequest, PatchWebhookRequest } from "../src/domain/Webhook.js"
import { credentialProblem } from "../src/services/Webhooks.js"
import { signingSecretProblem } from "../src/services/OutboundWebhooks.js"

const file = (path: string, text: string): DefinitionFile => ({ path, text })

/** The messages of the errors of `files`. */
const errorsOf = (...files: ReadonlyArray<DefinitionFile>) => parse(files).errors.map((e) => e.message)

const valid = (files: ReadonlyArray<DefinitionFile>): Parsed => {
  const parsed = parse(files)
  expect(parsed.errors.map((e) => e.message)).toEqual([])
  return parsed
}

const UID_A = WebhookUid.make("AAAAAAAAAAAAAAAAAAAAAA")

describe("parse: webhook files", () => {
  it("reads every key, named by the file", () => {
    const parsed = valid([
      file(
        "webhooks/github.yaml",
        "authMode: signature\nsignatureScheme: github\nsecretName: GITHUB_SECRET\ndeliveryIdHeader: X-GitHub-Delivery\nenabled: false\n"
      )
    ])
    expect(parsed.webhooks).toEqual([{
      path: "webhooks/github.yaml",
      name: "github",
      authMode: "signature",
      signatureScheme: "github",
      secretName: "GITHUB_SECRET",
      deliveryIdHeader: "X-GitHub-Delivery",
      enabled: false
    }])
  })

  it("defaults authMode to token and enabled to true; a null key counts as omitted", () => {
    const parsed = valid([file("webhooks/plain.yaml", "secretName: TOKEN\ndeliveryIdHeader:\nenabled: ~\n")])
    expect(parsed.webhooks[0]).toMatchObject({
      authMode: "token",
      signatureScheme: null,
      deliveryIdHeader: null,
      enabled: true
    })
  })

  it("names the file and the key of every problem", () => {
    expect(errorsOf(file("webhooks/github.yaml", "authMode: signature\nsecretName: S\n"))).toEqual([
      `webhooks/github.yaml: signatureScheme: is required when authMode is signature (one of ${
        SignatureScheme.literals.join(", ")
      })`
    ])
    expect(errorsOf(file("webhooks/a.yaml", "signatureScheme: github\nsecretName: S\n"))).toEqual([
      "webhooks/a.yaml: signatureScheme: is only allowed when authMode is signature"
    ])
    expect(errorsOf(file("webhooks/a.yaml", "authMode: bearer\nsecretName: S\n"))).toEqual([
      "webhooks/a.yaml: authMode: must be one of token, url_token, signature; got \"bearer\""
    ])
    expect(errorsOf(file("webhooks/a.yaml", "authMode: signature\nsignatureScheme: github2\nsecretName: S\n"))).toEqual([
      expect.stringMatching(/^webhooks\/a\.yaml: signatureScheme: must be one of standard_webhooks, .*; got "github2"$/)
    ])
    expect(errorsOf(file("webhooks/a.yaml", "secretName: 9lives\n"))).toEqual([
      "webhooks/a.yaml: secretName: must be 1-128 letters, digits or '_', not starting with a digit"
    ])
    expect(errorsOf(file("webhooks/a.yaml", "secretName: S\ndeliveryIdHeader: 'X Id'\n"))).toEqual([
      "webhooks/a.yaml: deliveryIdHeader: must be an HTTP header name"
    ])
    expect(errorsOf(file("webhooks/a.yaml", "secretName: S\nenabled: yes\n"))).toEqual([
      "webhooks/a.yaml: enabled: must be true or false; got \"yes\""
    ])
  })

  it("requires secretName: definitions never carry secret values", () => {
    expect(errorsOf(file("webhooks/a.yaml", "authMode: url_token\n"))).toEqual([
      expect.stringMatching(/^webhooks\/a\.yaml: secretName: is required: definitions never hold secret values/)
    ])
    // An empty file is a mapping without keys.
    expect(errorsOf(file("webhooks/empty.yaml", ""))).toEqual([
      expect.stringMatching(/^webhooks\/empty\.yaml: secretName: is required/)
    ])
  })

  it("rejects unknown keys by name, and a key given both in camelCase and in the API's snake_case", () => {
    expect(errorsOf(file("webhooks/a.yaml", "authMode: signature\nsecretName: S\nsecret: hunter2\nsignatureScheme: github\nsignature_scheme: github\n"))).toEqual([
      "webhooks/a.yaml: secret: is not a known key (expected authMode, signatureScheme, secretName, deliveryIdHeader, enabled)",
      "webhooks/a.yaml: signature_scheme: is signatureScheme spelt as in the API; give one of signatureScheme and " +
      "signature_scheme, not both"
    ])
  })

  it("takes the API's snake_case names everywhere the API does (webhook_ids, agent_config, model_id, server_id, …)", () => {
    const webhook = [
      "auth_mode: signature",
      "signature_scheme: github",
      "secret_name: GH_SECRET",
      "delivery_id_header: X-Id",
      ""
    ].join("\n")
    const automation = [
      "prompt: go",
      "trigger:",
      "  filter:",
      "    webhook_ids: [AAAAAAAAAAAAAAAAAAAAAA]",
      "    webhook_names: [gh]",
      "agent_config:",
      "  model_id: m",
      "  base_prompt: be brief",
      "  worker_host: warp",
      "  mcp_servers: { tools: { server_id: reg } }",
      ""
    ].join("\n")
    const snake = parse([file("webhooks/gh.yaml", webhook), file("automations/a.yaml", automation)])
    const camelCase = parse([
      file("webhooks/gh.yaml", "authMode: signature\nsignatureScheme: github\nsecretName: GH_SECRET\ndeliveryIdHeader: X-Id\n"),
      file(
        "automations/a.yaml",
        "prompt: go\ntrigger: {filter: {webhookIds: [AAAAAAAAAAAAAAAAAAAAAA], webhookNames: [gh]}}\n" +
          "agentConfig: {modelId: m, basePrompt: be brief, workerHost: warp, mcpServers: {tools: {serverId: reg}}}\n"
      )
    ])
    expect(snake.errors).toEqual([])
    expect(snake).toEqual(camelCase)
  })
})

describe("parse: YAML and file names", () => {
  it("reports malformed YAML by line and column", () => {
    expect(errorsOf(file("webhooks/bad.yaml", "secretName: S\nauthMode: [token,\n"))).toEqual([
      expect.stringMatching(/^webhooks\/bad\.yaml: line \d+, column \d+: /)
    ])
    expect(errorsOf(file("webhooks/dup.yaml", "secretName: S\nsecretName: T\n"))).toEqual([
      "webhooks/dup.yaml: line 2, column 1: Map keys must be unique"
    ])
    expect(errorsOf(file("webhooks/two.yaml", "secretName: S\n---\nsecretName: T\n"))).toEqual([
      expect.stringMatching(/^webhooks\/two\.yaml: line 2, column 1: Source contains multiple documents/)
    ])
  })

  it("rejects what is not a mapping of JSON values", () => {
    expect(errorsOf(file("webhooks/list.yaml", "- secretName\n"))).toEqual([
      "webhooks/list.yaml: must be a mapping of authMode, signatureScheme, secretName, deliveryIdHeader, enabled; got a list"
    ])
    expect(errorsOf(file("webhooks/loop.yaml", "secretName: &a [*a]\n"))).toEqual([
      "webhooks/loop.yaml: secretName[0]: refers to itself (through a YAML alias)"
    ])
    expect(errorsOf(file("webhooks/bin.yaml", "secretName: !!binary aGVsbG8=\n"))).toEqual([
      "webhooks/bin.yaml: secretName: is not a JSON value (binary data and other YAML types are not allowed)"
    ])
    expect(errorsOf(file("webhooks/key.yaml", "secretName: S\n[a]: 1\n"))).toEqual([
      "webhooks/key.yaml: keys must be strings; quote the key a list"
    ])
  })

  it("takes only github.yaml, webhooks/<name>.yaml, automations/<name>.yaml and outbound-webhooks/<name>.yaml", () => {
    const notDefinition = "is not a definition file: definitions are webhooks/<name>.yaml, automations/<name>.yaml, " +
      "outbound-webhooks/<name>.yaml and github.yaml (at the root)"
    expect(errorsOf(file("hooks/a.yaml", "secretName: S\n"))).toEqual([`hooks/a.yaml: ${notDefinition}`])
    expect(errorsOf(file("webhooks/github.yaml", "secretName: S\n"), file("config/github.yaml", "auth: {type: token}\n")))
      .toEqual([`config/github.yaml: ${notDefinition}`])
    expect(errorsOf(file("webhooks/a.yml", "secretName: S\n"))).toEqual([
      "webhooks/a.yml: is not a definition file: the name must end in .yaml"
    ])
    expect(errorsOf(file("webhooks/ a.yaml", "secretName: S\n"))).toEqual([
      "webhooks/ a.yaml: the file name (the definition's name) must not be blank nor start or end with whitespace"
    ])
    expect(errorsOf(file("x/webhooks/a.yaml", "secretName: S\n"), file("y/webhooks/a.yaml", "secretName: S\n"))).toEqual([
      "y/webhooks/a.yaml: defines the same webhook as x/webhooks/a.yaml"
    ])
  })

  it("collects the errors of every file at once, in path order", () => {
    const parsed = parse([
      file("webhooks/b.yaml", "authMode: nope\nsecretName: S\n"),
      file("automations/x.yaml", "trigger: {filter: {webhookNames: [b]}}\n"),
      file("webhooks/a.yaml", "secretName: S\n"),
      file("webhooks/c.yaml", "secretName: [\n")
    ])
    expect(parsed.errors.map((e) => e.path)).toEqual(["automations/x.yaml", "webhooks/b.yaml", "webhooks/c.yaml"])
    expect(parsed.errors[0]!.message).toBe("automations/x.yaml: prompt: is required")
    expect(parsed.webhooks.map((w) => w.name)).toEqual(["a"])
    expect(parsed.invalidWebhookNames).toEqual(["b", "c"])
  })
})

describe("parse: automation files", () => {
  it("reads the create request's keys in camelCase; data keys stay as written", () => {
    const parsed = valid([
      file(
        "automations/triage.yaml",
        [
          "prompt: |",
          "  Triage the issue.",
          "enabled: false",
          "trigger:",
          "  provider: webhook",
          "  event: received",
          "  filter:",
          `    webhookIds: [${UID_A}]`,
          "    webhookNames: [github]",
          "    payload:",
          "      action: [opened, reopened]",
          "      issue: { labels: { not_in: [wontfix] } }",
          "agentConfig:",
          "  modelId: claude",
          "  computerUseEnabled: true",
          "  mcpServers:",
          "    my_tools: { command: tools, env: { API_KEY_NAME: x } }",
          "    registered: { serverId: srv-1 }",
          ""
        ].join("\n")
      )
    ])
    expect(parsed.automations).toEqual([{
      path: "automations/triage.yaml",
      name: "triage",
      prompt: "Triage the issue.\n",
      enabled: false,
      webhookIds: [UID_A],
      webhookNames: ["github"],
      payload: { action: ["opened", "reopened"], issue: { labels: { not_in: ["wontfix"] } } },
      agentConfig: {
        model_id: "claude",
        computer_use_enabled: true,
        mcp_servers: { my_tools: { command: "tools", env: { API_KEY_NAME: "x" } }, registered: { server_id: "srv-1" } }
      }
    }])
  })

  it("defaults enabled to true, agentConfig to {}, provider and event to their only values", () => {
    const parsed = valid([file("automations/a.yaml", "prompt: go\ntrigger:\n  filter:\n    webhookNames: [w]\n")])
    expect(parsed.automations[0]).toMatchObject({ enabled: true, agentConfig: {}, payload: null, webhookIds: [] })
  })

  it("names nested keys as paths", () => {
    const text = [
      "prompt: ' '",
      "trigger:",
      "  provider: github",
      "  filter:",
      "    webhookIds: [not-a-uid]",
      "    payload: { action: { in: [opened], nin: [x] } }",
      "agentConfig:",
      "  model_name: x",
      "  environmentId: nope",
      "  mcpServers: { a: { serverId: x, url: 'https://x' } }",
      "schedule: daily",
      ""
    ].join("\n")
    expect(errorsOf(file("automations/a.yaml", text))).toEqual([
      "automations/a.yaml: schedule: is not a known key (expected prompt, enabled, trigger, agentConfig)",
      "automations/a.yaml: prompt: must be a non-empty string; got \" \"",
      "automations/a.yaml: trigger.provider: must be one of webhook; got \"github\"",
      "automations/a.yaml: trigger.filter.webhookIds[0]: webhook uid must be exactly 22 characters of [A-Za-z0-9]",
      "automations/a.yaml: trigger.filter.payload.action.nin: is not an operator (in, not_in, exists), and an object " +
      "cannot mix operators (in) with nested field names",
      // Every key of the API's agent configuration, in camelCase (name, modelId, basePrompt, environmentId, …).
      `automations/a.yaml: agentConfig.model_name: is not a known key (expected ${Object.keys(AgentConfig.fields).map(camel).join(", ")})`,
      "automations/a.yaml: agentConfig.environmentId: environment uid must be exactly 22 characters of [A-Za-z0-9]",
      "automations/a.yaml: agentConfig.mcpServers.a: must be exactly one of {command, args?, env?}, {url, headers?} or {serverId} (or the SDK's {warpId})"
    ])
  })

  it("requires a trigger with at least one webhook", () => {
    expect(errorsOf(file("automations/a.yaml", "prompt: go\n"))).toEqual([
      "automations/a.yaml: trigger: is required (with filter.webhookIds or filter.webhookNames)"
    ])
    expect(errorsOf(file("automations/a.yaml", "prompt: go\ntrigger: {filter: {webhookIds: []}}\n"))).toEqual([
      "automations/a.yaml: trigger.filter: must name at least one webhook in webhookIds or webhookNames"
    ])
    expect(errorsOf(file("automations/a.yaml", "prompt: go\ntrigger: {filter: {webhookNames: github}}\n"))).toEqual([
      "automations/a.yaml: trigger.filter.webhookNames: must be a list; got \"github\""
    ])
    // A uid of digits only reads as a number unless quoted.
    expect(errorsOf(file("automations/a.yaml", "prompt: go\ntrigger: {filter: {webhookIds: [1234567890123456789012]}}\n")))
      .toEqual([
        "automations/a.yaml: trigger.filter.webhookIds[0]: must be a webhook uid (a string; quote it); got 1.2345678901234568e+21"
      ])
  })
})

describe("parse: github.yaml", () => {
  const github = (text: string) => parse([file("github.yaml", text)])

  it("reads a token connection, on github.com by default", () => {
    const parsed = github("auth:\n  type: token\n  tokenSecret: GH_TOKEN\n")
    expect(parsed.errors).toEqual([])
    expect(parsed.github).toEqual({ path: "github.yaml", baseUrl: GITHUB_COM, auth: { type: "token", token_secret: "GH_TOKEN" } })
    expect(parse([]).github).toBeNull()
  })

  it("reads a GitHub App connection to an Enterprise Server (the base URL without its trailing slash), in camelCase or snake_case", () => {
    const camelCase = github("baseUrl: https://ghe.example.com/\nauth: {type: app, appId: 12, installationId: 34, privateKeySecret: GH_APP_KEY}\n")
    const snake = github("base_url: https://ghe.example.com/\nauth: {type: app, app_id: 12, installation_id: 34, private_key_secret: GH_APP_KEY}\n")
    expect(camelCase.errors).toEqual([])
    expect(camelCase.github).toEqual({
      path: "github.yaml",
      baseUrl: "https://ghe.example.com",
      auth: { type: "app", app_id: 12, installation_id: 34, private_key_secret: "GH_APP_KEY" }
    })
    expect(snake).toEqual(camelCase)
  })

  it("names the file and the key of every problem", () => {
    expect(errorsOf(file("github.yaml", "auth: {type: token}\n"))).toEqual(["github.yaml: auth.tokenSecret: is required"])
    expect(errorsOf(file("github.yaml", ""))).toEqual([
      "github.yaml: auth: is required: type token (with tokenSecret) or app (with appId, installationId and privateKeySecret)"
    ])
    expect(errorsOf(file("github.yaml", "auth: {tokenSecret: GH_TOKEN}\n"))).toEqual([
      "github.yaml: auth.type: is required: token (with tokenSecret) or app (with appId, installationId and privateKeySecret)"
    ])
    expect(errorsOf(file("github.yaml", "auth: {type: oauth}\n"))).toEqual([
      "github.yaml: auth.type: must be one of token, app; got \"oauth\""
    ])
    expect(errorsOf(file("github.yaml", "auth: GH_TOKEN\n"))).toEqual([
      "github.yaml: auth: must be a mapping with type token (with tokenSecret) or app (with appId, installationId and " +
      "privateKeySecret); got a string"
    ])
    expect(errorsOf(file("github.yaml", "auth: {type: token, tokenSecret: GH_TOKEN, appId: 1}\ntoken: ghp_x\n"))).toEqual([
      "github.yaml: token: is not a known key (expected baseUrl, auth)",
      "github.yaml: auth.appId: is not a known key (expected type, tokenSecret)"
    ])
    expect(errorsOf(file("github.yaml", "auth: {type: app, appId: 0, installationId: '34', privateKeySecret: 9key}\n"))).toEqual([
      "github.yaml: auth.appId: Expected a number greater than or equal to 1, actual 0",
      "github.yaml: auth.installationId: Expected number, actual \"34\"",
      "github.yaml: auth.privateKeySecret: must be 1-128 letters, digits or '_', not starting with a digit"
    ])
    expect(errorsOf(file("github.yaml", "baseUrl: http://ghe.example.com\nauth: {type: token, tokenSecret: T}\n"))).toEqual([
      "github.yaml: baseUrl: must be https (plain http only on a loopback address)"
    ])
    expect(errorsOf(file("github.yaml", "auth: {type: app, appId: 1}\n"))).toEqual([
      "github.yaml: auth.installationId: is required",
      "github.yaml: auth.privateKeySecret: is required"
    ])
  })

  it.prop("a written GitHub definition reads back the same", [Arbitrary.make(GitHubAuth), fc.boolean()], ([auth, onGhe]) => {
    const baseUrl = onGhe ? "https://ghe.example.com" : GITHUB_COM
    const text = stringify({
      ...(onGhe ? { baseUrl } : {}),
      auth: auth.type === "token"
        ? { type: "token", tokenSecret: auth.token_secret }
        : { type: "app", appId: auth.app_id, installationId: auth.installation_id, privateKeySecret: auth.private_key_secret }
    })
    const parsed = parse([file("github.yaml", text)])
    expect(parsed.errors).toEqual([])
    expect(parsed.github).toEqual({ path: "github.yaml", baseUrl, auth } satisfies GitHubDefinition)
  })
})

// --- property tests ---------------------------------------------------------------------------

const name = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/)
const secretName = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,20}$/).map((s) => s as SecretName)
const uid = fc.stringMatching(/^[A-Za-z0-9]{22}$/).map((s) => WebhookUid.make(s))

const webhookDefinition: fc.Arbitrary<Omit<WebhookDefinition, "path">> = fc
  .record({
    name,
    authMode: fc.constantFrom("token" as const, "url_token" as const, "signature" as const),
    scheme: fc.constantFrom(...SignatureScheme.literals),
    secretName,
    deliveryIdHeader: fc.option(fc.stringMatching(/^X-[A-Za-z-]{1,20}$/), { nil: null }),
    enabled: fc.boolean()
  })
  .map(({ scheme, ...w }) => ({ ...w, signatureScheme: w.authMode === "signature" ? scheme : null }))

/** A webhook file for a definition, leaving defaults out at random. */
const webhookText = (w: Omit<WebhookDefinition, "path">, omitDefaults: boolean): string =>
  stringify({
    ...(omitDefaults && w.authMode === "token" ? {} : { authMode: w.authMode }),
    ...(w.signatureScheme === null ? {} : { signatureScheme: w.signatureScheme }),
    secretName: w.secretName,
    ...(w.deliveryIdHeader === null ? {} : { deliveryIdHeader: w.deliveryIdHeader }),
    ...(omitDefaults && w.enabled ? {} : { enabled: w.enabled })
  })

const camel = (snake: string) => snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())

/** The agent configuration as a file writes it (camelCase keys, `serverId`). */
const agentConfigInFile = (config: AgentConfig): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(config).map(([key, value]) => [
      camel(key),
      key === "mcp_servers"
        ? Object.fromEntries(
          Object.entries(value as Record<string, Record<string, unknown>>).map(([server, entry]) => [
            server,
            Object.fromEntries(Object.entries(entry).map(([k, v]) => [camel(k), v]))
          ])
        )
        : value
    ])
  )

const scalar = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null))
const payloadFilter = fc.option(
  fc.dictionary(
    fc.stringMatching(/^[a-z_]{1,8}$/),
    fc.oneof(
      fc.array(scalar, { maxLength: 3 }),
      fc.record({ not_in: fc.array(scalar, { maxLength: 3 }) }),
      fc.record({ exists: fc.boolean() })
    ),
    { maxKeys: 3 }
  ),
  { nil: null }
)

const automationDefinition: fc.Arbitrary<Omit<AutomationDefinition, "path">> = fc
  .record({
    name,
    prompt: fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim() !== ""),
    enabled: fc.boolean(),
    webhookIds: fc.uniqueArray(uid, { maxLength: 3 }),
    webhookNames: fc.uniqueArray(name, { maxLength: 3 }),
    payload: payloadFilter,
    agentConfig: Arbitrary.make(AgentConfig)
  })
  .filter((a) => a.webhookIds.length + a.webhookNames.length > 0)

const automationText = (a: Omit<AutomationDefinition, "path">, omitDefaults: boolean): string =>
  stringify({
    prompt: a.prompt,
    ...(omitDefaults && a.enabled ? {} : { enabled: a.enabled }),
    trigger: {
      ...(omitDefaults ? {} : { provider: "webhook", event: "received" }),
      filter: {
        ...(a.webhookIds.length === 0 ? {} : { webhookIds: a.webhookIds }),
        ...(a.webhookNames.length === 0 ? {} : { webhookNames: a.webhookNames }),
        ...(a.payload === null ? {} : { payload: a.payload })
      }
    },
    ...(omitDefaults && Object.keys(a.agentConfig).length === 0 ? {} : { agentConfig: agentConfigInFile(a.agentConfig) })
  })

describe("parse: properties", () => {
  it.prop("a written webhook definition reads back the same", [webhookDefinition, fc.boolean()], ([w, omit]) => {
    const path = `webhooks/${w.name}.yaml`
    const parsed = parse([file(path, webhookText(w, omit))])
    expect(parsed.errors.map((e) => e.message)).toEqual([])
    expect(parsed.webhooks).toEqual([{ ...w, path }])
  })

  it.prop("a written automation definition reads back the same", [automationDefinition, fc.boolean()], ([a, omit]) => {
    const path = `automations/${a.name}.yaml`
    const parsed = parse([file(path, automationText(a, omit))])
    expect(parsed.errors.map((e) => e.message)).toEqual([])
    expect(parsed.automations).toEqual([{ ...a, path }])
  }, { fastCheck: { numRuns: 200 } })

  const yamlish = fc.oneof(
    fc.string(),
    fc.string({ unit: "binary" }),
    fc.jsonValue({ maxDepth: 3 }).map((v) => stringify(v)),
    // Valid files cut or spliced at random places.
    fc.tuple(fc.oneof(webhookDefinition.map((w) => webhookText(w, false)), automationDefinition.map((a) => automationText(a, false))), fc.nat(), fc.string({ maxLength: 4 }))
      .map(([text, at, insert]) => text.slice(0, at % (text.length + 1)) + insert + text.slice(at % (text.length + 1))),
    fc.constantFrom("&a [*a, *a]", "a: &x {b: *x}", "!!binary x", "? [a]\n: 1", "- - - -", "{", "'", ": :", "%YAML 1.1\n---\na: 1")
  )

  it.prop("any text yields definitions or errors naming the file, never a throw", [yamlish], ([text]) => {
    const files = [file("webhooks/w.yaml", text), file("automations/a.yaml", text), file("github.yaml", text)]
    const parsed = parse(files)
    for (const error of parsed.errors) {
      expect(error.message.startsWith(`${error.path}: `)).toBe(true)
      expect(files.map((f) => f.path)).toContain(error.path)
    }
    const failed = new Set(parsed.errors.map((e) => e.path))
    expect(parsed.webhooks.length + (failed.has("webhooks/w.yaml") ? 1 : 0)).toBe(1)
    expect(parsed.automations.length + (failed.has("automations/a.yaml") ? 1 : 0)).toBe(1)
    expect((parsed.github === null ? 0 : 1) + (failed.has("github.yaml") ? 1 : 0)).toBe(1)
  }, { fastCheck: { numRuns: 500 } })
})

// --- plan and apply ---------------------------------------------------------------------------

const at = DateTime.unsafeMake(0)

/**
 * A team in memory behind the applier's port, recording each write. `secrets` maps team secret
 * names to values; the problem words are credentialProblem's, as the services' are.
 */
const memoryTeam = (secrets: Record<string, string>) => {
  let next = 0
  const id = () => `w${String(++next).padStart(21, "0")}`
  const webhooks: Array<Webhook> = []
  const automations: Array<Automation> = []
  const outbound: Array<OutboundWebhook> = []
  const writes: Array<string> = []
  /** The outbound webhook checks asked, as JSON. */
  const checks: Array<string> = []
  let github: GitHubConnection | null = null
  let failOn: string | undefined
  const target: DefinitionsTarget<Error> = {
    getGitHub: Effect.sync(() => github),
    connectGitHub: (r: ConnectGitHubRequest) =>
      Effect.suspend(() => {
        if (failOn === GITHUB) return Effect.fail(new Error("auth: the host refused the credential"))
        writes.push(`connect github ${r.base_url} ${JSON.stringify(r.auth)}`)
        github = { base_url: r.base_url, auth: r.auth, connected_by: ADMIN, connected_at: at, updated_at: at }
        return Effect.succeed(github)
      }),
    listWebhooks: Effect.sync(() => [...webhooks]),
    listAutomations: Effect.sync(() => [...automations]),
    createWebhook: (r: CreateWebhookRequest) =>
      Effect.suspend(() => {
        if (failOn === r.name) return Effect.fail(new Error(`conflict: ${r.name}`))
        writes.push(`create webhook ${r.name}`)
        const w = new Webhook({
          uid: WebhookUid.make(id()),
          name: r.name,
          auth_mode: r.auth_mode,
          signature_scheme: r.signature_scheme ?? null,
          ...(r.secret_name === undefined ? {} : { secret_name: r.secret_name }),
          ...(r.delivery_id_header === undefined ? {} : { delivery_id_header: r.delivery_id_header }),
          enabled: r.enabled,
          ingress_url: "http://x",
          created_at: at,
          updated_at: at
        })
        webhooks.push(w)
        return Effect.succeed(w)
      }),
    patchWebhook: (uid, r: PatchWebhookRequest) =>
      Effect.sync(() => {
        writes.push(`patch webhook ${uid} ${JSON.stringify(r)}`)
        const i = webhooks.findIndex((w) => w.uid === uid)
        const { delivery_id_header: _, ...rest } = webhooks[i]!
        const header = r.delivery_id_header === undefined ? webhooks[i]!.delivery_id_header : r.delivery_id_header ?? undefined
        webhooks[i] = new Webhook({
          ...rest,
          ...(header === undefined ? {} : { delivery_id_header: header }),
          enabled: r.enabled ?? rest.enabled
        })
        return webhooks[i]!
      }),
    createAutomation: (r: CreateAutomationRequest) =>
      Effect.suspend(() => {
        if (failOn === r.name) return Effect.fail(new Error(`conflict: ${r.name}`))
        writes.push(`create automation ${r.name}`)
        const a = new Automation({
          id: AutomationId.make(id()),
          name: r.name,
          enabled: r.enabled,
          prompt: r.prompt,
          agent_config: r.agent_config ?? {},
          trigger: r.trigger,
          created_at: at,
          updated_at: at
        })
        automations.push(a)
        return Effect.succeed(a)
      }),
    updateAutomation: (automationId, r: UpdateAutomationRequest) =>
      Effect.sync(() => {
        writes.push(`update automation ${r.name}`)
        const i = automations.findIndex((a) => a.id === automationId)
        automations[i] = new Automation({
          ...automations[i]!,
          enabled: r.enabled,
          prompt: r.prompt,
          trigger: r.trigger,
          agent_config: r.agent_config ?? automations[i]!.agent_config
        })
        return automations[i]!
      }),
    secretProblem: (check: WebhookSecretCheck) =>
      Effect.sync(() => {
        const value = secrets[check.secretName]
        if (value === undefined) return `no team secret named ${check.secretName}`
        const problem = credentialProblem(check.authMode, check.signatureScheme, value)
        return problem === undefined ? undefined : `the value of team secret ${check.secretName} ${problem}`
      }),
    listSecretNames: Effect.sync(() => Object.keys(secrets) as Array<SecretName>),
    listOutboundWebhooks: Effect.sync(() => [...outbound]),
    createOutboundWebhook: (r: CreateOutboundWebhookRequest) =>
      Effect.sync(() => {
        writes.push(`create outbound webhook ${r.name}`)
        const w = new OutboundWebhook({
          uid: OutboundWebhookUid.make(id()),
          name: r.name ?? null,
          url: r.url,
          description: r.description,
          events: r.events,
          filters: r.filters,
          enabled: r.enabled,
          disabled_reason: null,
          disabled_at: null,
          previous_secret_expires_at: null,
          secret_name: r.secret_name ?? null,
          created_at: at,
          updated_at: at
        })
        outbound.push(w)
        return w
      }),
    patchOutboundWebhook: (uid, r: PatchOutboundWebhookRequest) =>
      Effect.sync(() => {
        writes.push(`patch outbound webhook ${uid} ${JSON.stringify(r)}`)
        const i = outbound.findIndex((w) => w.uid === uid)
        const { name, url, events, filters, description, enabled } = outbound[i]!
        outbound[i] = new OutboundWebhook({
          ...outbound[i]!,
          name: r.name ?? name,
          url: r.url ?? url,
          events: r.events ?? events,
          filters: r.filters ?? filters,
          description: r.description ?? description,
          enabled: r.enabled ?? enabled
        })
        return outbound[i]!
      }),
    checkOutboundWebhook: (r: CheckOutboundWebhookRequest) =>
      Effect.sync(() => {
        checks.push(JSON.stringify(r))
        return new CheckOutboundWebhookResponse({
          url_problem: r.url?.includes("unreachable") === true ? "the host does not resolve" : null,
          secret_name_problem: r.secret_name === undefined ? null : signingSecretProblem(r.secret_name, secrets[r.secret_name]) ?? null
        })
      }),
    rotateOutboundSecret: (uid, r: RotateOutboundSecretRequest) =>
      Effect.sync(() => {
        writes.push(`rotate outbound webhook ${uid} ${r.secret_name}`)
        const i = outbound.findIndex((w) => w.uid === uid)
        outbound[i] = new OutboundWebhook({ ...outbound[i]!, secret_name: r.secret_name ?? null })
        return outbound[i]!
      })
  }
  return {
    target,
    webhooks,
    automations,
    outbound,
    writes,
    checks,
    github: () => github,
    /** What the team has, as `plan` takes it. */
    current: () => ({ github, webhooks, automations, outboundWebhooks: outbound }),
    /** Refuses the write of the webhook or automation of this name, or of the connection (`GITHUB`). */
    failOn: (n: string) => (failOn = n)
  }
}

/** `failOn` this to refuse connecting to GitHub. */
const GITHUB = "<github>"
const ADMIN = PrincipalUid.make("PPPPPPPPPPPPPPPPPPPPPP")

const SECRETS = { GITHUB: "gh-secret", TOKEN: "tok_abc", URL_SAFE: "abc-123", NOT_URL_SAFE: "a b/c", GH_TOKEN: "github_pat_x" }

const directory = [
  file("webhooks/github.yaml", "authMode: signature\nsignatureScheme: github\nsecretName: GITHUB\n"),
  file("webhooks/ci.yaml", "authMode: url_token\nsecretName: URL_SAFE\ndeliveryIdHeader: X-CI-Id\n"),
  file(
    "automations/triage.yaml",
    "prompt: Triage\ntrigger:\n  filter:\n    webhookNames: [github, ci]\n    payload: {action: [opened]}\nagentConfig: {modelId: m}\n"
  )
]

const rejected = <A, E>(exit: Exit.Exit<A, E>): ReadonlyArray<string> => {
  if (Exit.isSuccess(exit)) throw new Error("expected the apply to be rejected")
  const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  if (!(error instanceof DefinitionsRejected)) throw new Error(`expected DefinitionsRejected, got ${String(exit.cause)}`)
  return error.errors.map((e) => e.message)
}

describe("apply", () => {
  it.effect("creates what is missing, resolving webhookNames to the new uids; applying again changes nothing", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      const first = yield* apply(team.target, directory)
      expect(first.map((o) => describeOutcome(o))).toEqual([
        `webhooks/ci.yaml: created webhook "ci" (${team.webhooks[0]!.uid})`,
        `webhooks/github.yaml: created webhook "github" (${team.webhooks[1]!.uid})`,
        `automations/triage.yaml: created automation "triage" (${team.automations[0]!.id})`
      ])
      expect(team.automations[0]!.trigger.filter).toEqual({
        webhook_ids: [team.webhooks[1]!.uid, team.webhooks[0]!.uid],
        payload: { action: ["opened"] }
      })
      expect(team.automations[0]!.agent_config).toEqual({ model_id: "m" })
      expect(team.webhooks[0]).toMatchObject({ auth_mode: "url_token", secret_name: "URL_SAFE", delivery_id_header: "X-CI-Id" })

      const writes = team.writes.length
      const second = yield* apply(team.target, directory)
      expect(team.writes.length).toBe(writes)
      expect(second.map((o) => o.action)).toEqual(["unchanged", "unchanged", "unchanged"])
      expect(describeOutcome(second[2]!)).toBe(`automations/triage.yaml: unchanged automation "triage" (${team.automations[0]!.id})`)
      const again = plan(parse(directory), team.current(), () => undefined)
      expect(Either.isRight(again) && changes(again.right)).toEqual([])
    }))

  it.effect("updates only what differs, and says which keys", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      yield* apply(team.target, directory)
      team.writes.length = 0
      const edited = [
        file("webhooks/github.yaml", "authMode: signature\nsignatureScheme: github\nsecretName: GITHUB\nenabled: false\n"),
        file("webhooks/ci.yaml", "authMode: url_token\nsecretName: URL_SAFE\n"),
        file("automations/triage.yaml", "prompt: Triage it\ntrigger:\n  filter:\n    webhookNames: [github, ci]\n    payload: {action: [opened]}\n")
      ]
      const outcomes = yield* apply(team.target, edited)
      expect(outcomes.map((o) => [o.path, o.action, o.changed])).toEqual([
        ["webhooks/ci.yaml", "updated", ["deliveryIdHeader"]],
        ["webhooks/github.yaml", "updated", ["enabled"]],
        ["automations/triage.yaml", "updated", ["prompt", "agentConfig"]]
      ])
      expect(team.writes).toEqual([
        `patch webhook ${team.webhooks[0]!.uid} {"delivery_id_header":null}`,
        `patch webhook ${team.webhooks[1]!.uid} {"enabled":false}`,
        "update automation triage"
      ])
      // An omitted agentConfig is {}: the file is the whole definition.
      expect(team.automations[0]!.agent_config).toEqual({})
      expect(team.webhooks[0]!.delivery_id_header).toBeUndefined()
      expect((yield* apply(team.target, edited)).every((o) => o.action === "unchanged")).toBe(true)
    }))

  it.effect("leaves alone what the team has and the directory does not", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      yield* apply(team.target, directory)
      const outcomes = yield* apply(team.target, [directory[0]!])
      expect(outcomes.map((o) => o.name)).toEqual(["github"])
      expect(team.webhooks.map((w) => w.name)).toEqual(["ci", "github"])
      expect(team.automations.map((a) => a.name)).toEqual(["triage"])
    }))

  it.effect("a dry run plans and checks but writes nothing", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      const outcomes = yield* dryRun(team.target, directory)
      expect(team.writes).toEqual([])
      expect(outcomes.map(describePlanned)).toEqual([
        "webhooks/ci.yaml: would create webhook \"ci\"",
        "webhooks/github.yaml: would create webhook \"github\"",
        "automations/triage.yaml: would create automation \"triage\""
      ])
    }))

  it.effect("checks every team secret against its mode, naming the file and key; nothing is applied", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      const exit = yield* Effect.exit(apply(team.target, [
        ...directory,
        file("webhooks/missing.yaml", "secretName: NOPE\n"),
        file("webhooks/unsafe.yaml", "authMode: url_token\nsecretName: NOT_URL_SAFE\n"),
        file("webhooks/spaces.yaml", "secretName: NOT_URL_SAFE\n"),
        file("webhooks/bad.yaml", "authMode: basic\nsecretName: TOKEN\n"),
        file("automations/broken.yaml", "prompt: x\ntrigger: {filter: {webhookNames: [bad, nowhere]}}\n")
      ]))
      expect(rejected(exit)).toEqual([
        "automations/broken.yaml: trigger.filter.webhookNames[1]: no webhook named \"nowhere\" in this team or in webhooks/",
        "webhooks/bad.yaml: authMode: must be one of token, url_token, signature; got \"basic\"",
        "webhooks/missing.yaml: secretName: no team secret named NOPE",
        "webhooks/spaces.yaml: secretName: the value of team secret NOT_URL_SAFE must be visible ASCII without spaces " +
        "for a token webhook (it is sent in the Authorization header)",
        "webhooks/unsafe.yaml: secretName: the value of team secret NOT_URL_SAFE must be URL-safe (letters, digits, " +
        "'-', '.', '_', '~') for a url_token webhook"
      ])
      expect(team.writes).toEqual([])
    }))

  it.effect("refuses to change a webhook's authMode, signatureScheme or secretName", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      yield* apply(team.target, directory)
      team.writes.length = 0
      const exit = yield* Effect.exit(apply(team.target, [
        file("webhooks/github.yaml", "authMode: signature\nsignatureScheme: stripe\nsecretName: GITHUB\nenabled: false\n"),
        file("webhooks/ci.yaml", "authMode: token\nsecretName: TOKEN\n")
      ]))
      const uid = team.webhooks[0]!.uid
      expect(rejected(exit)).toEqual([
        `webhooks/ci.yaml: authMode: is token here but url_token on the server: cannot change on an existing webhook ` +
        `(its URL and senders depend on it); delete the webhook ${uid} to recreate it, or give the file another name`,
        expect.stringMatching(/^webhooks\/ci\.yaml: secretName: is TOKEN here but URL_SAFE on the server: cannot change/),
        expect.stringMatching(/^webhooks\/github\.yaml: signatureScheme: is stripe here but github on the server: cannot change/)
      ])
      expect(team.writes).toEqual([])
    }))

  it.effect("webhookIds must be webhooks of the team (ones the automation already selects stay accepted)", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      yield* apply(team.target, directory)
      const github = team.webhooks[1]!.uid
      const byId = (ids: ReadonlyArray<string>) =>
        file("automations/triage.yaml", `prompt: Triage\ntrigger: {filter: {webhookIds: [${ids.join(", ")}]}}\n`)
      expect(rejected(yield* Effect.exit(apply(team.target, [byId([github, UID_A])])))).toEqual([
        `automations/triage.yaml: trigger.filter.webhookIds[1]: no webhook ${UID_A} in this team`
      ])
      const outcomes = yield* apply(team.target, [byId([github])])
      expect(outcomes[0]).toMatchObject({ action: "updated", changed: ["trigger", "agentConfig"] })
      // The webhook goes away; the automation that selects it can still be applied unchanged.
      team.webhooks.splice(1, 1)
      expect((yield* apply(team.target, [byId([github])]))[0]!.action).toBe("unchanged")
    }))

  it.effect("refuses a webhook beyond the team's limit", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      const many = Array.from({ length: MAX_WEBHOOKS_PER_TEAM + 1 }, (_, i) =>
        file(`webhooks/w${String(i).padStart(2, "0")}.yaml`, "secretName: TOKEN\n"))
      expect(rejected(yield* Effect.exit(apply(team.target, many)))).toEqual([
        `webhooks/w${MAX_WEBHOOKS_PER_TEAM}.yaml: would be the team's webhook number ${
          MAX_WEBHOOKS_PER_TEAM + 1
        }; a team has at most ${MAX_WEBHOOKS_PER_TEAM}`
      ])
      expect(team.writes).toEqual([])
    }))

  it.effect("a write refused midway names the file and what was applied before it", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      team.failOn("github")
      const exit = yield* Effect.exit(apply(team.target, directory))
      expect(Exit.isFailure(exit)).toBe(true)
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      expect(error).toBeInstanceOf(DefinitionsApplyFailed)
      const failed = error as DefinitionsApplyFailed<Error>
      expect(failed.path).toBe("webhooks/github.yaml")
      expect(failed.cause.message).toBe("conflict: github")
      expect(failed.applied.map((o) => describeOutcome(o))).toEqual([
        `webhooks/ci.yaml: created webhook "ci" (${team.webhooks[0]!.uid})`
      ])
      expect(failed.message).toBe([
        "webhooks/github.yaml: not applied: conflict: github",
        "Applied before it (applying again resumes):",
        `  webhooks/ci.yaml: created webhook "ci" (${team.webhooks[0]!.uid})`
      ].join("\n"))
    }))
})

describe("github.yaml: plan and apply", () => {
  const TOKEN_FILE = file("github.yaml", "auth: {type: token, tokenSecret: GH_TOKEN}\n")
  const connection = (baseUrl: string, auth: GitHubConnection["auth"]): GitHubConnection =>
    ({ base_url: baseUrl, auth, connected_by: ADMIN, connected_at: at, updated_at: at })
  const planOf = (files: ReadonlyArray<DefinitionFile>, github: GitHubConnection | null) =>
    plan(parse(files), { github, webhooks: [], automations: [], outboundWebhooks: [] }, () => undefined)

  it("plans a connection when the team has none or another one, nothing when it has the same", () => {
    const none = planOf([TOKEN_FILE], null)
    expect(Either.isRight(none) && changes(none.right).map((s) => s._tag)).toEqual(["ConnectGitHub"])
    const same = planOf([TOKEN_FILE], connection(GITHUB_COM, { type: "token", token_secret: "GH_TOKEN" as SecretName }))
    expect(Either.isRight(same) && same.right.github?._tag).toBe("KeepGitHub")
    expect(Either.isRight(same) && changes(same.right)).toEqual([])
    const other = planOf([TOKEN_FILE], connection("https://ghe.example.com", { type: "token", token_secret: "OLD" as SecretName }))
    expect(Either.isRight(other) && other.right.github).toMatchObject({ _tag: "ConnectGitHub", changed: ["baseUrl", "auth"] })
    const app = planOf(
      [file("github.yaml", "auth: {type: app, appId: 1, installationId: 2, privateKeySecret: K}\n")],
      connection(GITHUB_COM, { type: "app", app_id: 1, installation_id: 3, private_key_secret: "K" as SecretName })
    )
    expect(Either.isRight(app) && app.right.github).toMatchObject({ _tag: "ConnectGitHub", changed: ["auth"] })
    // Without github.yaml the connection is left alone.
    const absent = planOf([], connection(GITHUB_COM, { type: "token", token_secret: "GH_TOKEN" as SecretName }))
    expect(Either.isRight(absent) && absent.right.github).toBeNull()
  })

  it.effect("connects first, says so, and applying again changes nothing", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      const files = [...directory, TOKEN_FILE]
      expect((yield* dryRun(team.target, files)).map(describePlanned)[0]).toBe(
        "github.yaml: would connect GitHub (https://github.com, token secret GH_TOKEN)"
      )
      const first = yield* apply(team.target, files)
      expect(first.map(describeOutcome)[0]).toBe("github.yaml: connected GitHub (https://github.com, token secret GH_TOKEN)")
      expect(team.writes[0]).toBe("connect github https://github.com {\"type\":\"token\",\"token_secret\":\"GH_TOKEN\"}")
      expect(team.writes).toHaveLength(4)
      const second = yield* apply(team.target, files)
      expect(team.writes).toHaveLength(4)
      expect(describeOutcome(second[0]!)).toBe("github.yaml: unchanged GitHub connection (https://github.com, token secret GH_TOKEN)")
      // A changed file changes the connection; a directory without github.yaml leaves it alone.
      const ghe = file("github.yaml", "baseUrl: https://ghe.example.com\nauth: {type: token, tokenSecret: GH_TOKEN}\n")
      expect((yield* apply(team.target, [ghe])).map(describeOutcome)).toEqual([
        "github.yaml: reconnected GitHub (https://ghe.example.com, token secret GH_TOKEN): baseUrl"
      ])
      yield* apply(team.target, directory)
      expect(team.github()?.base_url).toBe("https://ghe.example.com")
      expect(team.writes).toHaveLength(5)
    }))

  it.effect("a secret the team does not have is an error naming the key, reported with the other files'; nothing is applied", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      const exit = yield* Effect.exit(apply(team.target, [
        ...directory,
        file("github.yaml", "auth: {type: app, appId: 1, installationId: 2, privateKeySecret: NO_KEY}\n"),
        file("webhooks/missing.yaml", "secretName: NOPE\n")
      ]))
      expect(rejected(exit)).toEqual([
        "github.yaml: auth.privateKeySecret: no team secret named NO_KEY; put it with PUT /agent/secrets/NO_KEY first",
        "webhooks/missing.yaml: secretName: no team secret named NOPE"
      ])
      expect(team.writes).toEqual([])
    }))

  it.effect("a connection the host refuses stops the apply before anything else is written", () =>
    Effect.gen(function*() {
      const team = memoryTeam(SECRETS)
      team.failOn(GITHUB)
      const error = yield* Effect.flip(apply(team.target, [...directory, TOKEN_FILE]))
      expect(error).toBeInstanceOf(DefinitionsApplyFailed)
      expect(error.message).toBe("github.yaml: not applied: auth: the host refused the credential\nNothing was applied before it.")
      expect(team.writes).toEqual([])
    }))
})

describe("outbound-webhooks/<name>.yaml: parse, plan and apply", () => {
  const SIGNING = { OUT: `whsec_${"A".repeat(43)}=`, OUT_2: `whsec_${"B".repeat(43)}=`, PLAIN: "not a signing secret!" }
  const ALERTS = file(
    "outbound-webhooks/alerts.yaml",
    "url: https://hooks.example.com/runs\nevents: [run.succeeded, run.failed]\nsecretName: OUT\n"
  )

  it("reads every key in camelCase or the API's snake_case; filters, description and enabled take their defaults", () => {
    const parsed = valid([ALERTS])
    expect(parsed.outboundWebhooks).toEqual([{
      path: "outbound-webhooks/alerts.yaml",
      name: "alerts",
      url: "https://hooks.example.com/runs",
      events: ["run.succeeded", "run.failed"],
      filters: {},
      description: "",
      enabled: true,
      secretName: "OUT"
    }])
    const full = valid([file(
      "outbound-webhooks/ci.yaml",
      [
        "url: https://hooks.example.com/ci",
        "events: [run.created]",
        `filters: {schedule_ids: ["${"S".repeat(22)}"], environmentIds: []}`,
        "description: CI",
        "enabled: false",
        "secret_name: OUT",
        ""
      ].join("\n")
    )])
    expect(full.outboundWebhooks[0]).toMatchObject({
      filters: { schedule_ids: ["S".repeat(22)], environment_ids: [] },
      description: "CI",
      enabled: false
    })
  })

  it("names the file and the key of every problem", () => {
    expect(errorsOf(file(
      "outbound-webhooks/bad.yaml",
      "url: ftp://x\nevents: [run.created, run.created, 3]\nfilters: {automationIds: [short]}\nenabled: yes\n"
    ))).toEqual([
      "outbound-webhooks/bad.yaml: url: must be an http or https URL",
      "outbound-webhooks/bad.yaml: events[2]: must be one of run.created, run.state_changed, run.succeeded, run.failed, run.blocked, run.errored, run.cancelled; got 3",
      expect.stringMatching(/^outbound-webhooks\/bad\.yaml: filters\.automationIds\[0\]: /),
      "outbound-webhooks/bad.yaml: enabled: must be true or false; got \"yes\"",
      expect.stringMatching(/^outbound-webhooks\/bad\.yaml: secretName: is required: definitions never hold secret values/)
    ])
    expect(errorsOf(file("outbound-webhooks/twice.yaml", "url: https://x.example\nevents: [run.created, run.created]\nsecretName: OUT\n")))
      .toEqual(["outbound-webhooks/twice.yaml: events: must not repeat an event type"])
    expect(errorsOf(file("outbound-webhooks/none.yaml", "url: https://x.example\nevents: []\nsecretName: OUT\n"))).toEqual([
      expect.stringMatching(/^outbound-webhooks\/none\.yaml: events: is required: a list of event types/)
    ])
    expect(errorsOf(file(`outbound-webhooks/${"n".repeat(101)}.yaml`, "url: https://x.example\nsecretName: OUT\n"))).toEqual([
      expect.stringMatching(/the file name \(the endpoint's name\) must be at most 100 characters$/),
      expect.stringMatching(/: events: is required/)
    ])
  })

  it.effect("creates the endpoint by name with its team secret; applying again changes nothing; an edit patches and rotates", () =>
    Effect.gen(function*() {
      const team = memoryTeam({ ...SECRETS, ...SIGNING })
      const first = yield* apply(team.target, [ALERTS])
      expect(first.map(describeOutcome)).toEqual([`outbound-webhooks/alerts.yaml: created outbound webhook "alerts" (${team.outbound[0]!.uid})`])
      expect(team.outbound[0]).toMatchObject({ name: "alerts", secret_name: "OUT", events: ["run.succeeded", "run.failed"] })
      const writes = team.writes.length
      // The same events in another order are the same subscription.
      const reordered = file(ALERTS.path, ALERTS.text.replace("[run.succeeded, run.failed]", "[run.failed, run.succeeded]"))
      expect((yield* apply(team.target, [reordered])).map((o) => o.action)).toEqual(["unchanged"])
      expect(team.writes.length).toBe(writes)

      const edited = file(ALERTS.path, ALERTS.text.replace("secretName: OUT", "secretName: OUT_2\ndescription: on call"))
      expect((yield* apply(team.target, [edited])).map(describeOutcome)).toEqual([
        `outbound-webhooks/alerts.yaml: updated outbound webhook "alerts" (${team.outbound[0]!.uid}): description, secretName`
      ])
      expect(team.writes.slice(writes)).toEqual([
        `patch outbound webhook ${team.outbound[0]!.uid} {"description":"on call"}`,
        `rotate outbound webhook ${team.outbound[0]!.uid} OUT_2`
      ])
      // Only the secret differs: a rotation, no patch.
      const back = file(ALERTS.path, ALERTS.text.replace("secretName: OUT", "secretName: OUT\ndescription: on call"))
      yield* apply(team.target, [back])
      expect(team.writes.slice(-1)).toEqual([`rotate outbound webhook ${team.outbound[0]!.uid} OUT`])
    }))

  it.effect("checks a URL and a team secret only when they are new: a URL deliveries may not reach is an error naming url", () =>
    Effect.gen(function*() {
      const team = memoryTeam({ ...SECRETS, ...SIGNING })
      const unreachable = file(ALERTS.path, ALERTS.text.replace("hooks.example.com", "unreachable.example.com"))
      expect(rejected(yield* Effect.exit(apply(team.target, [unreachable])))).toEqual([
        "outbound-webhooks/alerts.yaml: url: the host does not resolve"
      ])
      expect(team.writes).toEqual([])
      yield* apply(team.target, [ALERTS])
      expect(team.checks).toEqual([
        JSON.stringify({ url: "https://hooks.example.com/runs".replace("hooks", "unreachable"), secret_name: "OUT" }),
        JSON.stringify({ url: "https://hooks.example.com/runs", secret_name: "OUT" })
      ])
      // Unchanged: not checked again (a restart does not depend on the receiver's DNS); a new URL is.
      yield* apply(team.target, [ALERTS])
      expect(team.checks).toHaveLength(2)
      yield* apply(team.target, [file(ALERTS.path, ALERTS.text.replace("/runs", "/v2"))])
      expect(team.checks[2]).toBe(JSON.stringify({ url: "https://hooks.example.com/v2" }))
    }))

  it.effect("an endpoint the service turned off stays off; filter ids in another order change nothing", () =>
    Effect.gen(function*() {
      const team = memoryTeam({ ...SECRETS, ...SIGNING })
      const ids = ["S".repeat(22), "T".repeat(22)]
      const filtered = (order: ReadonlyArray<string>) =>
        file(ALERTS.path, `${ALERTS.text}filters: {scheduleIds: [${order.map((id) => `"${id}"`).join(", ")}]}\n`)
      yield* apply(team.target, [filtered(ids)])
      team.outbound[0] = new OutboundWebhook({ ...team.outbound[0]!, enabled: false, disabled_reason: "failing for 24 hours" })
      const writes = team.writes.length
      expect((yield* apply(team.target, [filtered([...ids].reverse())])).map((o) => o.action)).toEqual(["unchanged"])
      expect(team.writes.length).toBe(writes)
      // Turned off by hand (no reason), the file turns it on again.
      team.outbound[0] = new OutboundWebhook({ ...team.outbound[0]!, disabled_reason: null })
      expect((yield* apply(team.target, [filtered(ids)])).map((o) => o.changed)).toEqual([["enabled"]])
    }))

  it.effect("an endpoint without a name, or of another name, is left alone", () =>
    Effect.gen(function*() {
      const team = memoryTeam({ ...SECRETS, ...SIGNING })
      yield* team.target.createOutboundWebhook({ url: "https://x.example", events: ["run.created"], filters: {}, description: "", enabled: true })
      yield* apply(team.target, [ALERTS])
      expect(team.outbound.map((w) => w.name)).toEqual([null, "alerts"])
    }))

  it.effect("a team secret that is not a Standard Webhooks secret, and the team's limit, are errors naming file and key", () =>
    Effect.gen(function*() {
      const team = memoryTeam({ ...SECRETS, ...SIGNING })
      const plain = file("outbound-webhooks/plain.yaml", ALERTS.text.replace("secretName: OUT", "secretName: PLAIN"))
      expect(rejected(yield* Effect.exit(apply(team.target, [plain])))).toEqual([
        "outbound-webhooks/plain.yaml: secretName: the value of team secret PLAIN must be a Standard Webhooks secret: base64, optionally prefixed whsec_"
      ])
      const many = Array.from({ length: MAX_OUTBOUND_WEBHOOKS_PER_TEAM + 1 }, (_, i) => file(`outbound-webhooks/e${String(i).padStart(2, "0")}.yaml`, ALERTS.text))
      expect(rejected(yield* Effect.exit(apply(team.target, many)))).toEqual([
        `outbound-webhooks/e${MAX_OUTBOUND_WEBHOOKS_PER_TEAM}.yaml: would be the team's outbound webhook number ${MAX_OUTBOUND_WEBHOOKS_PER_TEAM + 1}; a team has at most ${MAX_OUTBOUND_WEBHOOKS_PER_TEAM}`
      ])
      expect(team.writes).toEqual([])
    }))
})
