import pino from 'pino';
import { LOCAL_FAKES, TEST_SECRET_KEY, createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { McpAuthServer, MCP_SCOPES } from '../fakes/mcp-oauth-provider';
import { findPlainText } from '../fakes/oauth-db-scan';
import { createDeps } from '../../src/server/app';
import { SecretBox } from '../../src/lib/crypto';
import { principalFromSession } from '../../src/principal';
import { memberAccessToken } from '../../src/mcp/tokens';
import type { ManualClock } from '../support/clock';

/**
 * The generic OAuth flow of MCP connections, end to end through the HTTP API, against a certified
 * authorization server (oidc-provider) rather than a fake of our own: what it really sends to the
 * callback (code, state, RFC 9207 `iss`), its code exchange, its RFC 8414 metadata, and its
 * refresh-token grant with rotation. The egress policy allows 127.0.0.1 here (LOCAL_FAKES).
 */
const PUBLIC_BASE = 'http://cp.example.test';
const CALLBACK = `${PUBLIC_BASE}/v1/mcp-connections/oauth/callback`;
const PUBLIC_CLIENT = 'mcp-public';
const CONFIDENTIAL_CLIENT = 'mcp-confidential';
const CLIENT_SECRET = 'mcp-confidential-secret-5d4c3b2a';

let t: TestApp;
let as: McpAuthServer;
const clock = () => t.clock as ManualClock;
const box = new SecretBox(TEST_SECRET_KEY);

beforeAll(async () => {
  as = await McpAuthServer.start({
    clients: [
      { clientId: PUBLIC_CLIENT, redirectUris: [CALLBACK] },
      { clientId: CONFIDENTIAL_CLIENT, clientSecret: CLIENT_SECRET, redirectUris: [CALLBACK] },
    ],
  });
  t = await createTestApp({ env: LOCAL_FAKES, settings: { publicBaseUrl: PUBLIC_BASE } });
});
afterAll(async () => {
  await t?.close();
  await as?.stop();
});

async function createConnection(owner: OrgOwner, oauthClient: Record<string, unknown>) {
  return t.http
    .post('/v1/mcp-connections')
    .set(...bearer(owner.token))
    .send({ name: 'Tracker', url: 'https://mcp.tracker.example/mcp', authType: 'oauth', credentialMode: 'per_member', oauthClient: { scopes: MCP_SCOPES, ...oauthClient }, access: { orgWide: true } });
}

/** A connection whose OAuth client comes from the server's metadata (`issuer` alone). */
async function discovered(owner: OrgOwner, clientId = CONFIDENTIAL_CLIENT): Promise<string> {
  const res = await createConnection(owner, { issuer: as.issuer, clientId, ...(clientId === CONFIDENTIAL_CLIENT ? { clientSecret: CLIENT_SECRET } : {}) });
  expect(res.status).toBe(201);
  return res.body.item.id;
}

/** A connection configured by hand: both endpoints and, optionally, the issuer. */
async function configured(owner: OrgOwner, issuer?: string): Promise<string> {
  const res = await createConnection(owner, { authorizationUrl: as.authorizationEndpoint, tokenUrl: as.tokenEndpoint, clientId: PUBLIC_CLIENT, ...(issuer ? { issuer } : {}) });
  expect(res.status).toBe(201);
  return res.body.item.id;
}

/** connect/start, then a browser at oidc-provider logs in; the URL it is sent back to. */
async function signIn(token: string, connectionId: string): Promise<URL> {
  const start = await t.http.post(`/v1/mcp-connections/${connectionId}/connect/start`).set(...bearer(token));
  expect(start.status).toBe(200);
  const back = await as.login(start.body.authorizeUrl);
  expect(`${back.origin}${back.pathname}`).toBe(CALLBACK);
  return back;
}

const callback = (url: URL) => t.http.get(`${url.pathname}${url.search}`);

function withParams(url: URL, change: (params: URLSearchParams) => void): URL {
  const copy = new URL(url);
  change(copy.searchParams);
  return copy;
}

async function storedSecrets(memberId: string, connectionId: string): Promise<{ accessToken: string; refreshToken: string | null } | null> {
  const row = await t.db.selectFrom('connected_accounts').select('secrets_sealed').where('member_id', '=', memberId).where('connection_id', '=', connectionId).executeTakeFirst();
  return row ? (JSON.parse(box.decrypt(row.secrets_sealed)) as { accessToken: string; refreshToken: string | null }) : null;
}

const codeGrants = () => as.grants.filter((g) => g.grantType === 'authorization_code').length;
const refreshGrants = () => as.grants.filter((g) => g.grantType === 'refresh_token').length;

describe('MCP OAuth against oidc-provider', () => {
  it('reads the OAuth client from the server metadata (RFC 8414): endpoints, issuer, iss promise', async () => {
    const owner = await createOrganization(t);
    const id = await discovered(owner);
    const item = (await t.http.get(`/v1/mcp-connections/${id}`).set(...bearer(owner.token))).body.item;
    expect(item.oauthClient).toEqual({
      authorizationUrl: as.authorizationEndpoint,
      tokenUrl: as.tokenEndpoint,
      clientId: CONFIDENTIAL_CLIENT,
      scopes: MCP_SCOPES,
      hasClientSecret: true,
      issuer: as.issuer,
      issParameterSupported: true,
    });
  });

  it('refuses metadata that names another issuer (400 on issuer, nothing stored)', async () => {
    const owner = await createOrganization(t);
    const before = await t.db.selectFrom('mcp_connections').select('id').where('organization_id', '=', owner.organizationId).execute();
    // The same server with a trailing slash is another issuer (RFC 8414 §3.3: identical strings).
    const res = await createConnection(owner, { issuer: `${as.issuer}/`, clientId: PUBLIC_CLIENT });
    expect(res.status).toBe(400);
    expect(res.body.details[0].path).toEqual(['body', 'oauthClient', 'issuer']);
    expect(await t.db.selectFrom('mcp_connections').select('id').where('organization_id', '=', owner.organizationId).execute()).toEqual(before);
  });

  it('connects with what the server really sends (code, state, iss) and stores its tokens encrypted', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const id = await discovered(owner);
    const back = await signIn(member.token, id);
    expect([...back.searchParams.keys()].sort()).toEqual(['code', 'iss', 'state']);
    expect(back.searchParams.get('iss')).toBe(as.issuer);
    const res = await callback(back);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect(as.grants.at(-1)).toEqual({ grantType: 'authorization_code', clientId: CONFIDENTIAL_CLIENT });
    const stored = await storedSecrets(member.memberId, id);
    expect(stored?.refreshToken).toBe(as.issuedRefreshTokens.at(-1));
    expect(stored?.accessToken).toEqual(expect.any(String));
    expect(await findPlainText(t.db, [stored!.accessToken, stored!.refreshToken!, CLIENT_SECRET])).toEqual([]);
    expect((await t.http.get(`/v1/mcp-connections/${id}`).set(...bearer(member.token))).body.item.connectedForMe).toBe(true);
  });

  it('refuses a wrong iss (400, nothing stored, the code never exchanged)', async () => {
    const owner = await createOrganization(t);
    const id = await discovered(owner);
    const back = await signIn(owner.token, id);
    const exchanges = codeGrants();
    const res = await callback(withParams(back, (p) => p.set('iss', 'https://attacker.example')));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String), details: [{ path: ['query', 'iss'], message: expect.any(String) }] });
    expect(codeGrants()).toBe(exchanges);
    expect(await storedSecrets(owner.memberId, id)).toBeNull();
  });

  it('refuses a missing iss when the metadata advertises authorization_response_iss_parameter_supported', async () => {
    const owner = await createOrganization(t);
    const id = await discovered(owner);
    const back = await signIn(owner.token, id);
    const exchanges = codeGrants();
    const res = await callback(withParams(back, (p) => p.delete('iss')));
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: ['query', 'iss'], message: expect.stringContaining('required') }]);
    expect(codeGrants()).toBe(exchanges);
    expect(await storedSecrets(owner.memberId, id)).toBeNull();
  });

  it('accepts a missing iss when nothing says the server sends it (issuer configured by hand)', async () => {
    const owner = await createOrganization(t);
    const id = await configured(owner, as.issuer);
    const item = (await t.http.get(`/v1/mcp-connections/${id}`).set(...bearer(owner.token))).body.item;
    expect(item.oauthClient).toMatchObject({ issuer: as.issuer, issParameterSupported: false });
    const back = await signIn(owner.token, id);
    expect((await callback(withParams(back, (p) => p.delete('iss')))).status).toBe(200);
    expect(await storedSecrets(owner.memberId, id)).not.toBeNull();
  });

  it('checks iss against the configured issuer exactly (a prefix of the path is not enough)', async () => {
    const owner = await createOrganization(t);
    const id = await configured(owner, `${as.issuer}/tenant-a`);
    const back = await signIn(owner.token, id);
    const res = await callback(back);
    expect(res.status).toBe(400);
    expect(res.body.details[0].path).toEqual(['query', 'iss']);
  });

  it('ends the flow with oauth_error when the user cancels at the server', async () => {
    const owner = await createOrganization(t);
    const id = await discovered(owner);
    const start = await t.http.post(`/v1/mcp-connections/${id}/connect/start`).set(...bearer(owner.token));
    const back = await as.deny(start.body.authorizeUrl);
    expect(back.searchParams.get('error')).toBe('access_denied');
    const res = await callback(back);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'oauth_error', message: expect.stringContaining('access_denied') });
    expect((await callback(back)).status).toBe(400);
  });
});

describe('MCP token refresh against oidc-provider (rotating refresh tokens)', () => {
  const deps = () => createDeps({ db: t.db, clock: t.clock, logger: pino({ level: 'silent' }), fetch: globalThis.fetch, settings: t.settings });

  async function membershipOf(token: string) {
    const principal = await principalFromSession(t.db, token, t.clock.now());
    return principal!.membership!;
  }

  it('refreshes an expired token with the refresh-token grant and stores the rotated refresh token', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const id = await configured(owner, as.issuer);
    expect((await callback(await signIn(member.token, id))).status).toBe(200);
    const first = (await storedSecrets(member.memberId, id))!;
    const membership = await membershipOf(member.token);

    // Not expired: the stored token, no call to the server.
    const refreshes = refreshGrants();
    expect(await memberAccessToken(deps(), membership, id)).toBe(first.accessToken);
    expect(refreshGrants()).toBe(refreshes);

    clock().advance(2 * 3600_000);
    try {
      const token = await memberAccessToken(deps(), membership, id);
      expect(refreshGrants()).toBe(refreshes + 1);
      expect(as.grants.at(-1)).toEqual({ grantType: 'refresh_token', clientId: PUBLIC_CLIENT });
      const second = (await storedSecrets(member.memberId, id))!;
      expect(token).not.toBe(first.accessToken);
      expect(second.accessToken).toBe(token);
      // Rotation: the server spent the old refresh token and issued a new one; the new one is stored.
      expect(second.refreshToken).toBe(as.issuedRefreshTokens.at(-1));
      expect(second.refreshToken).not.toBe(first.refreshToken);
      expect(await as.refreshTokenIsActive(first.refreshToken!)).toBe(false);
      expect(await as.refreshTokenIsActive(second.refreshToken!)).toBe(true);
      expect(await memberAccessToken(deps(), membership, id)).toBe(token);
      expect(refreshGrants()).toBe(refreshes + 1);
    } finally {
      clock().advance(-2 * 3600_000);
    }
  });

  it('two processes refreshing at once spend the refresh token once; both get the new token', async () => {
    const owner = await createOrganization(t);
    const id = await configured(owner, as.issuer);
    expect((await callback(await signIn(owner.token, id))).status).toBe(200);
    const membership = await membershipOf(owner.token);
    clock().advance(2 * 3600_000);
    try {
      const refreshes = refreshGrants();
      const [a, b] = await Promise.all([memberAccessToken(deps(), membership, id), memberAccessToken(deps(), membership, id)]);
      expect(a).toBe(b);
      expect(refreshGrants()).toBe(refreshes + 1);
      expect(await as.refreshTokenIsActive((await storedSecrets(owner.memberId, id))!.refreshToken!)).toBe(true);
    } finally {
      clock().advance(-2 * 3600_000);
    }
  });
});
