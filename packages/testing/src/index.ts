export {
  type FakeModelOptions,
  type FakeModelServer,
  type ModelReply,
  type ModelTurn,
  type Protocol,
  type RecordedRequest,
  asJson,
  defaultScript,
  findShellTool,
  jsonFor,
  shellToolCall,
  startFakeModel,
  userPartText,
  userText
} from "./FakeModel.js"
export { claudeCodePackage, cliPath, runnableCopy } from "./CliPath.js"
export { fakeModel } from "./FakeModelScope.js"
export { eventually, type Received, Receiver, signs } from "./WebhookReceiver.js"
export { assistantTexts, type ConversationStep, type FinishedRun, freePort, mountedApi } from "./MountedApi.js"
export {
  type OidcProviderOptions,
  type OidcProviderServer,
  type OidcUser,
  completeDeviceLogin,
  completeLogin,
  startOidcProvider
} from "./OidcProvider.js"
export { type FakeGitHub, type GitHubApp, startFakeGitHub } from "./github/FakeGitHub.js"
export type { ApiRequest } from "./github/GitHubApi.js"
export type { GitRequest, GitService } from "./github/GitHttpBackend.js"
export type { Grant, Permission, PullRequest, Repository } from "./github/GitHubState.js"
