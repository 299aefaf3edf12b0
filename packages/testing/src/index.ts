export {
  type FakeModelOptions,
  type FakeModelServer,
  type ModelReply,
  type ModelTurn,
  type Protocol,
  type RecordedRequest,
  defaultScript,
  findShellTool,
  shellToolCall,
  startFakeModel,
  userPartText,
  userText
} from "./FakeModel.js"
export { cliPath } from "./CliPath.js"
export { fakeModel } from "./FakeModelScope.js"
