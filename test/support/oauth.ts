import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oauth from 'openid-client';
import { importJWK, SignJWT, type JWK } from 'jose';
import { SecretBox } from '../../src/lib/crypto';
import { newId } from '../../src/lib/ids';
import { insert as insertAuthorization } from '../../src/authorizations/store';
import { SIGNING_ALG, signingKeys } from '../../src/oauth/keys';
import { createTestApp, type TestApp, type TestAppOptions } from './app';
import { bearer, type OrgOwner } from './factories';

/**
 * The service on a real port whose PUBLIC_BASE_URL is that address, so an independent OAuth client
 * (openid-client) discovers the authorization server, calls its endpoints and fetches its JWKS as
 * it would in production.
 */
export interface OAuthTestApp extends TestApp {
  base: string;
  server: Server;
}

export async function startOAuthApp(options: TestAppOptions = {}): Promise<OAuthTestApp> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const t = await createTestApp({ ...options, settings: { publicBaseUrl: base, ...options.settings } });
  server.on('request', t.app);
  return {
    ...t,
    base,
    server,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await t.close();
    },
  };
}

export interface ServiceAccountClient {
  id: string;
  memberId: string;
  clientSecret: string;
}

/** A service account of the owner's organization (`role`) and a client secret of it, through the API. */
export async function serviceAccountClient(t: TestApp, owner: OrgOwner, role = 'member'): Promise<ServiceAccountClient> {
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  const created = await t.http.post('/v1/service-accounts').set(...bearer(owner.token)).send({ name: 'CI deploy', role });
  if (created.status !== 201) throw new Error(`create service account: ${created.status} ${JSON.stringify(created.body)}`);
  const secret = await t.http.post(`/v1/service-accounts/${created.body.item.id}/secrets`).set(...bearer(owner.token)).send({});
  if (secret.status !== 201) throw new Error(`create secret: ${secret.status} ${JSON.stringify(secret.body)}`);
  return { id: created.body.item.id, memberId: created.body.item.memberId, clientSecret: secret.body.clientSecret };
}

/** openid-client's configuration for a client of the service (discovered through RFC 8414 metadata). */
export function discover(t: OAuthTestApp, clientId: string, clientSecret: string): Promise<oauth.Configuration> {
  return oauth.discovery(new URL(t.base), clientId, undefined, oauth.ClientSecretBasic(clientSecret), { algorithm: 'oauth2', execute: [oauth.allowInsecureRequests] });
}

/**
 * An access token for an organization client as the authorization server issues one after a
 * member's consent: the member's authorization of the client (written with the store the consent
 * step uses) and a JWT under it, signed with the service's signing key (RFC 9068 claims, `typ:
 * at+jwt`, the key's `kid`). Until the authorization-code flow issues tokens to organization
 * clients, this is how a test holds one.
 */
export async function organizationClientToken(
  t: OAuthTestApp,
  claims: { clientId: string; memberId: string; organizationId: string; scope: string },
  ttlSeconds = 600,
): Promise<string> {
  const nowDate = t.clock.now();
  const authorization = await insertAuthorization(
    t.db,
    {
      id: newId('oauthAuthorization'),
      organizationId: claims.organizationId,
      memberId: claims.memberId,
      clientId: claims.clientId,
      clientType: 'organization',
      clientName: 'Test client',
      scopes: claims.scope.split(' '),
      resource: `${t.base}/v1`,
      grantKey: null,
      expiresAt: new Date(nowDate.getTime() + 86_400_000),
    },
    nowDate,
  );
  const now = Math.floor(nowDate.getTime() / 1000);
  const keys = await signingKeys(t.db, new SecretBox(t.settings.secretKey!), nowDate);
  const jwk = keys.jwks[0]!;
  const key = await importJWK(jwk as JWK, SIGNING_ALG);
  return new SignJWT({ client_id: claims.clientId, scope: claims.scope, org_id: claims.organizationId, authorization_id: authorization.id })
    .setProtectedHeader({ alg: SIGNING_ALG, typ: 'at+jwt', kid: jwk.kid })
    .setIssuer(t.base)
    .setAudience(`${t.base}/v1`)
    .setSubject(claims.memberId)
    .setJti(randomUUID())
    .setIssuedAt(now)
    .setExpirationTime(now + ttlSeconds)
    .sign(key);
}
