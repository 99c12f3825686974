import type { Db } from '../db/schema';
import type { AccessTokenLoader, AnyPrincipal, SessionLoader } from '../domain/principal';
import type { Cursors } from '../lib/pagination';
import { principalFromApiKey } from './api-key';
import { principalFromSession } from './session';
import { principalFromWorkerToken, workerClaimFromToken } from './worker-token';
import { principalFromScimToken } from './scim-token';
import { principalFromAccessToken } from './access-token';
import { looksLikeJwt } from '../oauth/verify';

/**
 * Every kind of credential the service accepts, by the name of its security scheme in the spec
 * (`components.securitySchemes`): the one place a credential becomes a principal. The router
 * registers a handler for each scheme of the spec and refuses to start when one has no resolver
 * here. A new credential (SCIM token, SSO session) is a scheme in the spec plus one entry here.
 */
export interface ResolveInput {
  db: Db;
  /** The credential as sent (bearer token or header value). */
  secret: string;
  now: Date;
  /** For `bearerAuth`: the operation's own session loader, which reads its data in the same query. */
  sessionLoader?: SessionLoader;
  /** For `oauthAccessToken`: the operation's own access-token loader, which reads its data in the token's statement. */
  accessTokenLoader?: AccessTokenLoader;
  /** The request's query as sent, for the session loader. */
  query?: Record<string, unknown>;
  /** The service's cursor codec, for the session loader. */
  cursors?: Cursors;
  /**
   * The operation verifies the credential in its own statement (`deferredCredentials` in
   * src/server/registry.ts): the resolver answers an unchecked claim without a query. Only the
   * worker token supports it; other schemes ignore it.
   */
  deferred?: boolean;
  /** PUBLIC_BASE_URL: an access token's issuer, and its audience's base. */
  publicBaseUrl: string;
}

export type CredentialResolver = (input: ResolveInput) => Promise<AnyPrincipal | null>;

export const CREDENTIAL_RESOLVERS: Record<string, CredentialResolver> = {
  // A JWT is an access token (the scheme below), never a session token: no session query for it.
  bearerAuth: ({ db, secret, now, sessionLoader, query, cursors }) =>
    looksLikeJwt(secret) ? Promise.resolve(null) : sessionLoader ? sessionLoader(db, secret, now, { query: query ?? {}, cursors }) : principalFromSession(db, secret, now),
  oauthAccessToken: ({ db, secret, now, publicBaseUrl, accessTokenLoader }) =>
    accessTokenLoader ? accessTokenLoader(db, secret, now, publicBaseUrl) : principalFromAccessToken(db, secret, now, publicBaseUrl),
  orgApiKey: ({ db, secret, now }) => principalFromApiKey(db, secret, now),
  workerToken: ({ db, secret, deferred }) => (deferred ? Promise.resolve(workerClaimFromToken(secret)) : principalFromWorkerToken(db, secret)),
  scimBearer: ({ db, secret, now }) => principalFromScimToken(db, secret, now),
};

/** A security scheme as the spec declares it (the subset the service supports). */
export interface SchemeDefinition {
  type: string;
  scheme?: string;
  in?: string;
  name?: string;
}

/**
 * How to read a scheme's credential from request headers: `http` + `bearer` is
 * `Authorization: Bearer <token>`; `apiKey` in a header is that header's value. Anything else is
 * refused at start.
 */
export function credentialReader(name: string, definition: SchemeDefinition): (headers: Record<string, unknown>) => string | null {
  if (!CREDENTIAL_RESOLVERS[name]) throw new Error(`security scheme ${name} has no resolver in src/principal/schemes.ts`);
  if (definition.type === 'http' && definition.scheme?.toLowerCase() === 'bearer') {
    return (headers) => {
      const value = headers.authorization;
      if (typeof value !== 'string') return null;
      const match = /^Bearer\s+(\S+)\s*$/i.exec(value);
      return match ? match[1]! : null;
    };
  }
  if (definition.type === 'apiKey' && definition.in === 'header' && definition.name) {
    const header = definition.name.toLowerCase();
    return (headers) => {
      const value = headers[header];
      return typeof value === 'string' && value.length > 0 ? value : null;
    };
  }
  throw new Error(`security scheme ${name}: only http bearer and apiKey in a header are supported`);
}
