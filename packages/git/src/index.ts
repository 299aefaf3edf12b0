export { type CheckoutOptions, checkout, checkoutCommit } from "./Checkout.js"
export { readClones, writeClones } from "./ClonesRecord.js"
export { credentialEnv } from "./Credential.js"
export { type GitOptions, type GitResult, runGit } from "./GitCommand.js"
export { GitError } from "./GitError.js"
export { describeFailure, hostStatus, type HostStatus } from "./HostAnswer.js"
export * as MirrorCache from "./MirrorCache.js"
export type { Remote } from "./MirrorCache.js"
export { findFiles, parseLsTree, type RepoFile, type RepoFilesOptions } from "./RepoFiles.js"
export {
  type Cloned,
  cloneRepository,
  type CloneRepositoryOptions,
  publishClone,
  publishRepository,
  type PublishRepositoryOptions,
  type SandboxClones
} from "./CloneRepository.js"
export { type Published, publishBranch, type PublishBranchOptions, type SandboxProcess, type StartInSandbox } from "./PublishBranch.js"
export { isSafeFileName, isSafeSegment, type Staged, stageWorkspace, type StageWorkspaceOptions } from "./StageWorkspace.js"
