/** Schedules, environments, webhooks, deliveries, automations, secrets, teams, principals, tokens. */
import { Effect } from "effect"

export default Effect.void
