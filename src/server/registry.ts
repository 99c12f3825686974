import type { AccessTokenLoaders, Handlers, OperationId, SessionLoaders } from '../contract';
import type { Dialect, Front } from '../contract/fronts';
import { systemHandlers } from '../system/handlers';
import { authHandlers } from '../auth/handlers';
import { orgAccessTokenLoaders, orgHandlers, orgSessionLoaders } from '../org/handlers';
import { marketplaceHandlers } from '../marketplaces/handlers';
import { pluginHandlers } from '../plugins/handlers';
import { connectorHandlers } from '../connectors/handlers';
import { workerDeferredCredentials, workerHandlers } from '../workers/handlers';
import { telemetryHandlers } from '../telemetry/handlers';
import { memberHandlers, memberSessionLoaders } from '../members/handlers';
import { invitationHandlers } from '../invitations/handlers';
import { teamHandlers } from '../teams/handlers';
import { apiKeyHandlers } from '../api-keys/handlers';
import { serviceAccountHandlers } from '../service-accounts/handlers';
import { adminHandlers } from '../admin/handlers';
import { mcpHandlers } from '../mcp/handlers';
import { mcpServerHandlers } from '../mcp-server/handlers';
import { authorizationHandlers } from '../authorizations/handlers';
import { suiteHandlers } from '../suite/handlers';
import { webhookHandlers } from '../webhooks/handlers';
import { auditHandlers } from '../audit/handlers';
import { exportHandlers } from '../exports/handlers';
import { auditStreamHandlers } from '../audit-streams/handlers';
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
import { scimDialect } from '../scim/dialect';
import { pagesFront } from '../pages/router';
import { oauthFront } from '../oauth/front';
import { oauthHandlers } from '../oauth/handlers';
import { mcpServerFront } from '../mcp-server/front';
import { oauthClientHandlers } from '../oauth-clients/handlers';

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
  ...serviceAccountHandlers,
  ...adminHandlers,
  ...oauthHandlers,
  ...oauthClientHandlers,
  ...mcpHandlers,
  ...mcpServerHandlers,
  ...authorizationHandlers,
  ...suiteHandlers,
  ...webhookHandlers,
  ...auditHandlers,
  ...exportHandlers,
  ...auditStreamHandlers,
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

/** Session checks that read their operation's data in the same query, as each area declares them. */
export const sessionLoaders: SessionLoaders = { ...orgSessionLoaders, ...memberSessionLoaders };

/** Access-token checks that read their operation's data in the same statement. */
export const accessTokenLoaders: AccessTokenLoaders = { ...orgAccessTokenLoaders };

/** Operations that verify their worker token in their own statement, as each area declares them. */
export const deferredCredentials: ReadonlySet<OperationId> = new Set<OperationId>([...workerDeferredCredentials]);

/** Dialects of the contract's operations (src/contract/fronts.ts): their paths' answers have their own shape. */
export const dialects: readonly Dialect[] = [scimDialect];

/** Fronts outside the contract's operations, mounted before the API router in this order. */
export const fronts: readonly Front[] = [pagesFront, oauthFront, mcpServerFront];
