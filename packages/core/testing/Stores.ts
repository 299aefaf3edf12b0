/** Every storage port, as one requirement. */
import type { AutomationStore } from "../src/ports/AutomationStore.js"
import type { EnvironmentStore } from "../src/ports/EnvironmentStore.js"
import type { IdentityStore } from "../src/ports/IdentityStore.js"
import type { RunStore } from "../src/ports/RunStore.js"
import type { ScheduleStore } from "../src/ports/ScheduleStore.js"
import type { SecretStore } from "../src/ports/SecretStore.js"
import type { WebhookStore } from "../src/ports/WebhookStore.js"

export type Stores =
  | RunStore
  | ScheduleStore
  | EnvironmentStore
  | WebhookStore
  | AutomationStore
  | SecretStore
  | IdentityStore
