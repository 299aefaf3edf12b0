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
export { cliPath } from "./CliPath.js"
export { fakeModel } from "./FakeModelScope.js"
export { assistantTexts, type ConversationStep, type FinishedRun, freePort, mountedApi } from "./MountedApi.js"
