import type { Handlers } from './types';
import { systemHandlers } from '../system/handlers';
import { authHandlers } from '../auth/handlers';
import { orgHandlers } from '../org/handlers';
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

/**
 * operationId → handler for every operation of the contract. Typed as `Handlers`, so an operation
 * added to the spec without a handler does not compile.
 */
export const handlers: Handlers = {
  ...systemHandlers,
  ...authHandlers,
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
};
