import type { components } from '../../generated/api';
import type { Membership } from '../domain/principal';
import { Invalid, NotFound } from '../lib/errors';
import { visibilityOf } from '../access/resource-roles';
import type { AccountTarget } from '../connected-accounts/service';
import { accessOf, type ConnectionGrant } from './access';
import type { ConnectionRow } from './store';

/** The API shape of an MCP connection (the contract's), which every MCP operation reads. */
export type McpConnection = components['schemas']['McpConnection'];

export const notFound = () => new NotFound('connection_not_found', 'The MCP connection could not be found.');

export const notThisKind = (what: string) => Invalid.at(['path', 'connectionId'], `the connection is not a per_member ${what} connection`);

export function splitScopes(value: string): string[] {
  return value.split(' ').filter(Boolean);
}

/** Who is asking, for the store's "connections this member may use" queries. */
export function viewer(membership: Membership) {
  return { organizationId: membership.organizationId, memberId: membership.memberId, visibleToMemberId: visibilityOf(membership) };
}

/** The caller's own account on a per-member connection. */
export function accountTarget(membership: Membership, connectionId: string): AccountTarget {
  return { organizationId: membership.organizationId, memberId: membership.memberId, provider: 'mcp', connectionId };
}

export function toConnection(row: ConnectionRow, grants: ConnectionGrant[]): McpConnection {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    url: row.url,
    authType: row.auth_type,
    credentialMode: row.credential_mode,
    hasApiKey: row.has_api_key,
    oauthClient:
      row.auth_type === 'oauth' && row.oauth_authorization_url && row.oauth_token_url && row.oauth_client_id
        ? {
            authorizationUrl: row.oauth_authorization_url,
            tokenUrl: row.oauth_token_url,
            clientId: row.oauth_client_id,
            scopes: splitScopes(row.oauth_scopes),
            hasClientSecret: row.has_client_secret,
            issuer: row.oauth_issuer,
            issParameterSupported: row.oauth_iss_parameter_supported,
          }
        : null,
    access: accessOf(grants.filter((g) => g.resource_id === row.id)),
    connectedForMe: row.connected_for_me,
    createdByOrgMembershipId: row.created_by_member_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
