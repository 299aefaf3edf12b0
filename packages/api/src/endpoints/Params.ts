/**
 * Path parameters. Every id in a path is decoded with its core branded schema, so a malformed id
 * is a 400 (`invalid_request`, naming the parameter) before any lookup; a well-formed id that is
 * unknown or invisible to the caller is a 404. Parameter names are the published SDK's (`runId`,
 * `scheduleId`, `conversation_id`) and ours (`uid`, `id`, `delivery_id`, `name`, `token_id`).
 */
import { HttpApiSchema } from "@effect/platform"
import { Ids, Secret } from "@agent-runs/core"

export const runId = HttpApiSchema.param("runId", Ids.RunId)
export const conversationId = HttpApiSchema.param("conversation_id", Ids.ConversationId)
export const scheduleId = HttpApiSchema.param("scheduleId", Ids.ScheduleId)
export const environmentUid = HttpApiSchema.param("uid", Ids.EnvironmentUid)
export const webhookUid = HttpApiSchema.param("uid", Ids.WebhookUid)
export const deliveryId = HttpApiSchema.param("delivery_id", Ids.DeliveryId)
export const automationId = HttpApiSchema.param("id", Ids.AutomationId)
export const secretName = HttpApiSchema.param("name", Secret.SecretName)
export const teamUid = HttpApiSchema.param("uid", Ids.TeamUid)
export const principalUid = HttpApiSchema.param("uid", Ids.PrincipalUid)
export const tokenId = HttpApiSchema.param("token_id", Ids.TokenId)
export const memberUid = HttpApiSchema.param("principal_uid", Ids.PrincipalUid)
export const membershipTeamUid = HttpApiSchema.param("team_uid", Ids.TeamUid)
export const outboundWebhookUid = HttpApiSchema.param("uid", Ids.OutboundWebhookUid)
export const outboundDeliveryId = HttpApiSchema.param("delivery_id", Ids.OutboundDeliveryId)
