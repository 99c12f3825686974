/**
 * The permission catalogue: one key (`area.verb`) for every protected action of the service.
 * Operations name the key they need in the spec (`x-permission: <key>`, which the router checks
 * before the handler: src/server/access.ts, with the rest of the access vocabulary, `x-access:
 * member|account|worker|scim` and `x-platform-admin`); permissions a service consults besides,
 * from data or input (the one that passes a resource-role rule), go in `x-permission-also`. The
 * router refuses to start on an operation naming a key missing here, and a test fails on a key
 * here named by no operation. Adding a permission: one line below, and `x-permission` on the
 * operation.
 *
 * `minimum` is the lowest built-in role holding the key (owner ⊇ admin ⊇ member): this is the one
 * place that says what the built-in roles may do. `reason` is the stable `reason` of the 403
 * (wave-1 clients rely on `org_admin_required` and friends; keys new in wave 2 use
 * `permission_required`).
 */
import type { CodeWithStatus } from '../lib/error-codes';

export interface PermissionDefinition {
  description: string;
  minimum: 'owner' | 'admin' | 'member';
  reason: CodeWithStatus<403>;
}

const ADMIN = 'org_admin_required';
const MEMBER = 'org_member_required';

export const PERMISSION_CATALOGUE = {
  'org.update': { description: 'Rename the organization.', minimum: 'admin', reason: ADMIN },
  'org.export': { description: "Export all of the organization's data (a zip with a file per kind of data) and download it.", minimum: 'owner', reason: 'owner_required' },
  'members.read': { description: "List the organization's members and read any member's permissions.", minimum: 'member', reason: MEMBER },
  'members.changeRole': { description: "Change a member's role.", minimum: 'admin', reason: ADMIN },
  'members.remove': { description: 'Remove another member from the organization.', minimum: 'admin', reason: ADMIN },
  'invitations.manage': { description: 'Invite people, list, resend and cancel invitations.', minimum: 'admin', reason: ADMIN },
  'teams.read': { description: 'List and read teams.', minimum: 'member', reason: MEMBER },
  'teams.manage': { description: 'Create, rename and delete teams and change their members.', minimum: 'admin', reason: ADMIN },
  'apiKeys.manage': { description: "Create, list and revoke the organization's API keys.", minimum: 'admin', reason: ADMIN },
  'serviceAccounts.manage': {
    description: "Create, change, disable and delete the organization's service accounts and their secrets and API keys.",
    minimum: 'admin',
    reason: 'permission_required',
  },
  'oauthClients.manage': { description: "Register and manage the organization's OAuth clients and its members' authorizations of them.", minimum: 'admin', reason: 'permission_required' },
  'roles.manage': { description: 'Create, change and delete custom roles.', minimum: 'admin', reason: 'permission_required' },
  'marketplaces.create': { description: 'Create marketplaces.', minimum: 'admin', reason: ADMIN },
  'connectors.create': { description: 'Create connector instances.', minimum: 'admin', reason: ADMIN },
  'mcpConnections.manage': { description: 'Create, update and delete MCP connections.', minimum: 'admin', reason: ADMIN },
  'mcpConnections.use': { description: 'Use the MCP connections the caller may access (agents acting for the caller included).', minimum: 'member', reason: 'permission_required' },
  'resources.manage': {
    description: 'Manager on every marketplace, plugin, connector instance and MCP connection, and share plugins organization-wide.',
    minimum: 'admin',
    reason: ADMIN,
  },
  'workers.manage': { description: 'Update and delete any worker and read its runtime (creators may always).', minimum: 'admin', reason: 'worker_creator_or_admin_required' },
  'suite.manage': { description: "Set the organization's office-suite OAuth client.", minimum: 'admin', reason: ADMIN },
  'analytics.read': { description: 'Read usage analytics.', minimum: 'admin', reason: ADMIN },
  'webhooks.manage': { description: 'Manage webhook endpoints, see their deliveries and read the events feed.', minimum: 'admin', reason: 'permission_required' },
  'audit.read': { description: 'Search, export and verify the audit log.', minimum: 'admin', reason: ADMIN },
  'audit.manage': { description: "Create, change and delete the organization's audit log streams.", minimum: 'admin', reason: 'permission_required' },
  'billing.read': { description: "Read the organization's plan, limits and metered usage.", minimum: 'admin', reason: ADMIN },
  'templates.manage': { description: 'Edit and delete templates created by others (creators may always).', minimum: 'admin', reason: 'permission_required' },
  'llmProviders.manage': { description: 'Create LLM providers (then manager through grants; admins are manager on all).', minimum: 'admin', reason: 'permission_required' },
  'sso.manage': {
    description: "Manage the organization's single sign-on: identity-provider connections, verified domains and enforcement.",
    minimum: 'admin',
    reason: 'permission_required',
  },
  'scim.manage': { description: "Create, list and revoke the organization's SCIM tokens (identity-provider provisioning).", minimum: 'admin', reason: 'permission_required' },
} as const satisfies Record<string, PermissionDefinition>;

export type Permission = keyof typeof PERMISSION_CATALOGUE;

export const PERMISSION_KEYS = Object.keys(PERMISSION_CATALOGUE) as Permission[];

export function isPermission(key: string): key is Permission {
  return Object.hasOwn(PERMISSION_CATALOGUE, key);
}

export function permissionDefinition(key: Permission): PermissionDefinition {
  return PERMISSION_CATALOGUE[key];
}
