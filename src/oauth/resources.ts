import { PERMISSION_KEYS } from '../access/permissions';

/**
 * The protected resources of the service (docs/oauth.md#resources): the API under `/v1` and the MCP
 * endpoint `/mcp` (docs/mcp-server.md). A token's audience (RFC 8707 `resource`, RFC 9068 `aud`)
 * names one of them, and is accepted by that one only.
 */
export const OFFLINE_ACCESS = 'offline_access';

export const apiResource = (publicBaseUrl: string) => `${publicBaseUrl}/v1`;

/** RFC 9728: where a client reads what the resource accepts. */
export const apiResourceMetadataUrl = (publicBaseUrl: string) => `${publicBaseUrl}/.well-known/oauth-protected-resource/v1`;

/** GET /.well-known/oauth-protected-resource/v1. */
export function apiResourceMetadata(publicBaseUrl: string) {
  return {
    resource: apiResource(publicBaseUrl),
    authorization_servers: [publicBaseUrl],
    scopes_supported: [...PERMISSION_KEYS],
    bearer_methods_supported: ['header'],
  };
}

export const mcpResource = (publicBaseUrl: string) => `${publicBaseUrl}/mcp`;

export const mcpResourceMetadataUrl = (publicBaseUrl: string) => `${publicBaseUrl}/.well-known/oauth-protected-resource/mcp`;

/** GET /.well-known/oauth-protected-resource/mcp: the same document, for the MCP endpoint. */
export function mcpResourceMetadata(publicBaseUrl: string) {
  return { ...apiResourceMetadata(publicBaseUrl), resource: mcpResource(publicBaseUrl) };
}

/** Every resource a token may be issued for. */
export const protectedResources = (publicBaseUrl: string) => [apiResource(publicBaseUrl), mcpResource(publicBaseUrl)];
