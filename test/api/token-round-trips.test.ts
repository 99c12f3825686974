import * as oauth from 'openid-client';
import type supertest from 'supertest';
import { startOAuthApp, type OAuthTestApp } from '../support/oauth';
import { authorizeAsPerson } from '../support/oauth-person';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';
import { countingApp } from '../support/statement-counter';
import { ACCESS_TOKEN_TYPE, delegate, TOKEN_EXCHANGE, workerWithCeiling } from '../support/workers-oauth';

/**
 * Statements per token request at the token endpoint (bench scenario 18, docs/oauth.md): a client's
 * lookup reads what its secret check compares, so a confidential client is one statement whatever
 * its kind; an exchange reads the worker and the delegation; a refresh rotation reads and stamps the
 * member's authorization in one statement.
 */
let t: OAuthTestApp;
let http: ReturnType<typeof supertest>;
let statements: ReturnType<typeof countingApp>['statements'];
let owner: OrgOwner;
const REDIRECT = 'http://127.0.0.1:9/callback';
beforeAll(async () => {
  t = await startOAuthApp();
  ({ http, statements } = countingApp(t));
  owner = await createOrganization(t, 'Round trips');
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
});
afterAll(() => t.close());

it("a worker's client_credentials token is one statement: its lookup reads its host token's hash", async () => {
  const worker = await workerWithCeiling(t, owner.token, ['members.read']);
  const ask = (secret: string) => http.post('/oauth/token').auth(worker.id, secret).type('form').send({ grant_type: 'client_credentials' });
  expect((await ask(worker.hostToken)).status).toBe(200);
  let res: supertest.Response | undefined;
  expect(await statements(async () => (res = await ask(worker.hostToken)))).toBe(1);
  expect(res!.status).toBe(200);
  expect(await statements(async () => (res = await ask(`${worker.hostToken}x`)))).toBe(1);
  expect([res!.status, res!.body.error]).toEqual([401, 'invalid_client']);
});

it('a token exchange is two statements: the worker (with its secret) and the delegation', async () => {
  const worker = await workerWithCeiling(t, owner.token, ['members.read', 'teams.read']);
  const delegation = await delegate(t, owner.token, worker.id, ['members.read']);
  const ask = () => http.post('/oauth/token').auth(worker.id, worker.hostToken).type('form').send({ grant_type: TOKEN_EXCHANGE, subject_token: delegation.subjectToken, subject_token_type: ACCESS_TOKEN_TYPE });
  expect((await ask()).status).toBe(200);
  let res: supertest.Response | undefined;
  expect(await statements(async () => (res = await ask()))).toBe(2);
  expect([res!.status, res!.body.scope]).toEqual([200, 'members.read']);
  expect((await http.get('/v1/members').set(...bearer(res!.body.access_token))).status).toBe(200);
});

/** An organization client's refresh token, through authorization code + PKCE at the hosted pages (openid-client). */
async function refreshTokenOf(type: 'confidential' | 'public') {
  const created = await t.http.post('/v1/oauth-clients').set(...bearer(owner.token)).send({ name: `Refreshing ${type}`, type, redirectUris: [REDIRECT], scopes: ['members.read', 'offline_access'] });
  expect(created.status).toBe(201);
  const clientId = created.body.item.id as string;
  const secret = created.body.clientSecret as string | undefined;
  const config = await oauth.discovery(new URL(t.base), clientId, undefined, secret ? oauth.ClientSecretBasic(secret) : oauth.None(), { algorithm: 'oauth2', execute: [oauth.allowInsecureRequests] });
  const verifier = oauth.randomPKCECodeVerifier();
  const state = oauth.randomState();
  const url = oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'members.read offline_access', state, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', resource: `${t.base}/v1` });
  const answer = await authorizeAsPerson(t.base, url.href, { email: owner.email, organizationId: owner.organizationId });
  const tokens = await oauth.authorizationCodeGrant(config, answer.url, { pkceCodeVerifier: verifier, expectedState: state }, { resource: `${t.base}/v1` });
  return { clientId, secret, refreshToken: tokens.refresh_token! };
}

it("a confidential organization client's refresh: its lookup reads its secret's hash, the authorization is read and stamped in one statement", async () => {
  const { clientId, secret, refreshToken } = await refreshTokenOf('confidential');
  const refresh = (secretUsed = secret!) => http.post('/oauth/token').auth(clientId, secretUsed).type('form').send({ grant_type: 'refresh_token', refresh_token: refreshToken, resource: `${t.base}/v1` });
  expect((await refresh()).status).toBe(200);
  let res: supertest.Response | undefined;
  // The client with its secret's hash, the library's reads of the refresh token and its grant, the authorization read and stamped (7 before).
  expect(await statements(async () => (res = await refresh()))).toBe(5);
  expect(res!.status).toBe(200);
  expect((await http.get('/v1/members').set(...bearer(res!.body.access_token))).status).toBe(200);
  expect(await statements(async () => (res = await refresh(`${secret}x`)))).toBe(1);
  expect([res!.status, res!.body.error]).toEqual([401, 'invalid_client']);
});

it("a public organization client's refresh rotation reads and stamps the authorization in one statement", async () => {
  const issued = await refreshTokenOf('public');
  const clientId = issued.clientId;
  let refreshToken = issued.refreshToken;
  const rotate = () => http.post('/oauth/token').type('form').send({ grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken, resource: `${t.base}/v1` });
  let res = await rotate();
  expect(res.status).toBe(200);
  refreshToken = res.body.refresh_token;
  // The client, the refresh token (and one more read of the library's records), its grant, the old token consumed, the new one stored, the authorization read and stamped (8 before).
  expect(await statements(async () => (res = await rotate()))).toBe(7);
  expect(res.status).toBe(200);
  expect(res.body.refresh_token).not.toBe(refreshToken);
  refreshToken = res.body.refresh_token;
  expect((await rotate()).status).toBe(200);
});
