import { FakeOAuthServer } from '../fakes/oauth-server';
import { LOCAL_FAKES, createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';
import { findSecretsInDatabase } from '../support/snapshot';

/**
 * OAuth tokens never rest in plain text: a member connects a per-member MCP connection through
 * authorization code + PKCE against a local authorization server, then the access and refresh
 * tokens it issued, the client secret and the authorization code are looked for in every text
 * and JSON column and in every log line.
 */
const PUBLIC_BASE = 'http://cp.hardening.test';
let t: TestApp;
let auth: FakeOAuthServer;
beforeAll(async () => {
  auth = await new FakeOAuthServer({ clientId: 'hardening-client', clientSecret: 'hardening-client-secret-0123456789' }).start();
  t = await createTestApp({ env: LOCAL_FAKES, settings: { publicBaseUrl: PUBLIC_BASE } });
});
afterAll(async () => {
  await t.close();
  await auth.stop();
});

it('stores and logs no OAuth token, client secret or authorization code in plain text', async () => {
  const owner = await createOrganization(t);
  const member = await addMember(t, owner.organizationId);
  const created = await t.http.post('/v1/mcp-connections').set(...bearer(owner.token)).send({
    name: 'Tracker',
    url: 'https://mcp.tracker.example/mcp',
    authType: 'oauth',
    credentialMode: 'per_member',
    oauthClient: { authorizationUrl: auth.authorizeEndpoint(), tokenUrl: auth.tokenEndpoint(), clientId: 'hardening-client', clientSecret: 'hardening-client-secret-0123456789' },
    access: { orgWide: true },
  });
  expect(created.status).toBe(201);
  const start = await t.http.post(`/v1/mcp-connections/${created.body.item.id}/connect/start`).set(...bearer(member.token));
  expect(start.status).toBe(200);
  const consent = await fetch(start.body.authorizeUrl, { redirect: 'manual' });
  const location = new URL(consent.headers.get('location')!);
  const code = location.searchParams.get('code')!;
  const callback = await t.http.get(`${location.pathname}${location.search}`);
  expect(callback.body).toEqual({ ok: true });

  const secrets: Record<string, string> = { code, memberSession: member.token };
  auth.issuedSecrets.forEach((s, i) => (secrets[`issued #${i}`] = s));
  expect(auth.issuedSecrets.length).toBeGreaterThanOrEqual(3);
  expect(await findSecretsInDatabase(t.db, secrets)).toEqual([]);
  const logs = t.logs.join('\n');
  expect(Object.entries(secrets).filter(([, v]) => logs.includes(v)).map(([k]) => k)).toEqual([]);
});
