import type { AppDeps } from '../domain/deps';
import { Invalid, Upstream } from '../lib/errors';
import { checkTenantUrl, OutboundError } from '../outbound';
import { checkIssuer, type PendingAuthorization } from '../connected-accounts/service';

/**
 * The authorization server of an OAuth connection: its endpoints and issuer, configured or read
 * from its metadata (RFC 8414), and the RFC 9207 check of the callback's `iss` against it.
 */
export interface AuthorizationServer {
  authorizationUrl: string;
  tokenUrl: string;
  issuer: string | null;
  /** The metadata says every authorization response carries `iss` (RFC 9207 §3). */
  issParameterSupported: boolean;
}

const ISSUER = ['body', 'oauthClient', 'issuer'];
const MAX_METADATA_BYTES = 262_144;

/**
 * Where the metadata of an issuer is published: RFC 8414 §3.1 inserts the well-known segment
 * between host and path; OpenID Connect Discovery appends it (many servers publish only that).
 */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/+$/, '');
  return [`${url.origin}/.well-known/oauth-authorization-server${path}`, `${url.origin}${path}/.well-known/openid-configuration`];
}

function endpointOf(deps: AppDeps, metadata: Record<string, unknown>, name: string): string {
  const value = metadata[name];
  if (typeof value !== 'string' || !/^https?:\/\/\S+$/.test(value)) throw Invalid.at(ISSUER, `the authorization server's metadata has no usable ${name}`);
  // The metadata is the tenant's too: its endpoints pass the same egress check as typed ones.
  checkTenantUrl(deps.outbound.policy, value, ISSUER);
  return value;
}

function readMetadata(deps: AppDeps, issuer: string, text: string): AuthorizationServer {
  let metadata: unknown;
  try {
    metadata = JSON.parse(text);
  } catch {
    metadata = null;
  }
  if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata)) throw Invalid.at(ISSUER, "the authorization server's metadata is not a JSON object");
  const fields = metadata as Record<string, unknown>;
  // RFC 8414 §3.3: the metadata's issuer must be identical to the one it was read for.
  if (fields.issuer !== issuer) throw Invalid.at(ISSUER, `the authorization server's metadata names another issuer (${String(fields.issuer).slice(0, 200)})`);
  return {
    authorizationUrl: endpointOf(deps, fields, 'authorization_endpoint'),
    tokenUrl: endpointOf(deps, fields, 'token_endpoint'),
    issuer,
    issParameterSupported: fields.authorization_response_iss_parameter_supported === true,
  };
}

/** Reads an issuer's metadata through the egress policy; a server that cannot be asked is a 502. */
export async function discover(deps: AppDeps, issuer: string): Promise<AuthorizationServer> {
  for (const url of metadataUrls(issuer)) {
    let res;
    try {
      res = await deps.outbound.request(url, { method: 'GET', headers: { accept: 'application/json' }, timeoutMs: deps.settings.mcpOAuthTimeoutMs, maxBytes: MAX_METADATA_BYTES });
    } catch (err) {
      if (err instanceof OutboundError) throw new Upstream('mcp_oauth_error', `Reading the authorization server's metadata failed: ${url} ${err.message}.`);
      throw err;
    }
    if (res.status === 404) continue;
    if (res.status !== 200) throw new Upstream('mcp_oauth_error', `Reading the authorization server's metadata failed: ${url} answered ${res.status}.`);
    return readMetadata(deps, issuer, res.text());
  }
  throw Invalid.at(ISSUER, 'the authorization server publishes no metadata for this issuer (RFC 8414 or OpenID discovery)');
}

export interface ServerInput {
  authorizationUrl?: string;
  tokenUrl?: string;
  issuer?: string;
}

/** `issuer` alone: everything from the metadata. Otherwise both endpoints, the issuer optional. */
export async function resolveServer(deps: AppDeps, input: ServerInput): Promise<AuthorizationServer> {
  const { authorizationUrl, tokenUrl, issuer } = input;
  if (issuer !== undefined && authorizationUrl === undefined && tokenUrl === undefined) return discover(deps, issuer);
  const unless = 'is required unless issuer is given alone (the endpoints are then read from its metadata)';
  if (authorizationUrl === undefined) throw Invalid.at(['body', 'oauthClient', 'authorizationUrl'], unless);
  if (tokenUrl === undefined) throw Invalid.at(['body', 'oauthClient', 'tokenUrl'], unless);
  return { authorizationUrl, tokenUrl, issuer: issuer ?? null, issParameterSupported: false };
}

/** What the callback knows of the server the flow was started with. */
export interface IssuerOfFlow {
  oauth_authorization_url: string | null;
  oauth_issuer: string | null;
  oauth_iss_parameter_supported: boolean;
}

/**
 * RFC 9207 §2.4: a present `iss` must equal the issuer (simple string comparison), else a mix-up
 * attack could bring another server's code here; when the metadata says the server always sends
 * it, a missing `iss` is refused too. Checked before the code is exchanged, so nothing is stored.
 * A connection made before issuers were stored takes the issuer to be the authorization
 * endpoint's origin and a leading part of its path (https://as.example/tenant → …/tenant/authorize).
 */
export function checkCallbackIssuer(pending: PendingAuthorization, server: IssuerOfFlow): void {
  const issuer = server.oauth_issuer;
  if (pending.iss === undefined && issuer !== null && server.oauth_iss_parameter_supported) {
    throw Invalid.at(['query', 'iss'], "is required: the authorization server's metadata says it sends iss (RFC 9207)");
  }
  checkIssuer(pending, (iss) => (issuer !== null ? iss === issuer : prefixesEndpoint(iss, server.oauth_authorization_url)));
}

function prefixesEndpoint(iss: string, authorizationUrl: string | null): boolean {
  if (!authorizationUrl) return false;
  try {
    const issuer = new URL(iss);
    const endpoint = new URL(authorizationUrl);
    const base = issuer.pathname.replace(/\/+$/, '');
    return issuer.origin === endpoint.origin && !issuer.search && !issuer.hash && (base === '' || endpoint.pathname === base || endpoint.pathname.startsWith(`${base}/`));
  } catch {
    return false;
  }
}
