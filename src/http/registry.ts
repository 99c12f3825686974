import type { Handlers, OperationId } from './types';
import type { SessionLoader } from '../principal';
import { systemHandlers } from '../system/handlers';
import { authHandlers } from '../auth/handlers';
import { orgHandlers } from '../org/handlers';
import { loadSessionWithOrganization } from '../org/service';
import { loadSessionWithMembersPage } from '../members/service';
import { marketplaceHandlers } from '../marketplaces/handlers';
import { pluginHandlers } from '../plugins/handlers';
import { connectorHandlers } from '../connectors/handlers';
import { workerHandlers } from '../workers/handlers';
import { telemetryHandlers } from '../telemetry/handlers';
import { memberHandlers } from '../members/handlers';
import { invitationHandlers } from '../invitations/handlers';
import { teamHandlers } from '../teams/handlers';
import { apiKeyHandlers } from '../api-keys/handlers';
import { adminHandlers } from '../admin/handlers';
import { mcpHandlers } from '../mcp/handlers';
import { suiteHandlers } from '../suite/handlers';
import { webhookHandlers } from '../webhooks/handlers';
import { auditHandlers } from '../audit/handlers';
import { billingHandlers } from '../plans/handlers';
import { templateHandlers } from '../templates/handlers';
import { llmProviderHandlers } from '../llm-providers/handlers';
import { capabilitySourceHandlers } from '../capability-sources/handlers';
import { scimProtocolHandlers, scimTokenHandlers } from '../scim/handlers';
import { roleHandlers } from '../roles/handlers';
import { ssoConnectionHandlers, ssoDomainHandlers } from '../sso/handlers';
import { ssoSignInHandlers } from '../sso/signin/handlers';
import { mfaHandlers } from '../mfa/handlers';
import { accountHandlers } from '../account/handlers';

/**
 * operationId → handler for every operation of the contract. Typed as `Handlers`, so an operation
 * added to the spec without a handler does not compile.
 */
export const handlers: Handlers = {
  ...systemHandlers,
  ...authHandlers,
  ...mfaHandlers,
  ...accountHandlers,
  ...orgHandlers,
  ...marketplaceHandlers,
  ...pluginHandlers,
  ...connectorHandlers,
  ...workerHandlers,
  ...telemetryHandlers,
  ...memberHandlers,
  ...invitationHandlers,
  ...teamHandlers,
  ...apiKeyHandlers,
  ...adminHandlers,
  ...mcpHandlers,
  ...suiteHandlers,
  ...webhookHandlers,
  ...auditHandlers,
  ...billingHandlers,
  ...templateHandlers,
  ...llmProviderHandlers,
  ...capabilitySourceHandlers,
  ...scimTokenHandlers,
  ...scimProtocolHandlers,
  ...roleHandlers,
  ...ssoConnectionHandlers,
  ...ssoDomainHandlers,
  ...ssoSignInHandlers,
};

/**
 * Operations whose session check also reads the operation's data in the same round trip (the
 * bearerAuth handler calls the loader instead of principalFromSession; the loader answers the
 * same principal, or null for a dead session). Only for hot read paths.
 */
export const sessionLoaders: Partial<Record<OperationId, SessionLoader>> = {
  getOrg: loadSessionWithOrganization,
  listMembers: loadSessionWithMembersPage,
};

/**
 * Operations that check their worker token inside the statement that does the work (one round
 * trip): the security handler hands them an unchecked `workerClaim` (src/principal/worker-token.ts)
 * and the operation answers 401 when its statement finds no worker with that id and token hash.
 * Only for hot paths whose statement is written that way.
 */
export const deferredCredentials: ReadonlySet<OperationId> = new Set<OperationId>(['workerHeartbeat']);
