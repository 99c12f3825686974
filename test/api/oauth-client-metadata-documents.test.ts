import * as oauth from 'openid-client';
import { createOutbound } from '../../src/outbound';
import { startOAuthApp, type OAuthTestApp } from '../support/oauth';
import { authorizeAsPerson, pageText } from '../support/oauth-person';
import { bearer, createOrganization } from '../support/factories';
import { startClientMetadataServer, type ClientMetadataServer } from '../fakes/client-metadata-server';

/**
 * Client ID Metadata Documents (docs/oauth.md#client-id-metadata-documents): a client whose
 * client_id is an https URL, served by a real local HTTPS server with its own name and
 * certificate. The service fetches the document through the egress policy (the outbound client,
 * here allowed to reach loopback and trusting the server's certificate), caches it by its headers,
 * and the client completes authorization code + PKCE with openid-client. Refusals: a private
 * address under production egress rules, a document naming another client_id, a shared-secret
 * authentication method, a document too large, OAUTH_CIMD=off.
 */
const REDIRECT = 'http://127.0.0.1:9/callback';
let cimd: ClientMetadataServer;
let t: OAuthTestApp;

beforeAll(async () => {
  cimd = await startClientMetadataServer();
  t = await startOAuthApp({ outbound: createOutbound({ allowedNetworks: ['127.0.0.0/8'], lookup: cimd.lookup, ca: cimd.ca }) });
});
afterAll(async () => {
  await t?.close();
  await cimd?.close();
});

const options = { algorithm: 'oauth2' as const, execute: [oauth.allowInsecureRequests] };

function document(clientId: string, extra: Record<string, unknown> = {}) {
  return { client_id: clientId, client_name: 'Research <agent>', client_uri: 'https://agent.example', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', ...extra };
}

async function authorizeUrl(app: OAuthTestApp, clientId: string) {
  const config = await oauth.discovery(new URL(app.base), clientId, undefined, oauth.None(), options);
  const verifier = oauth.randomPKCECodeVerifier();
  const state = oauth.randomState();
  const url = oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'members.read offline_access', state, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', resource: `${app.base}/v1` });
  return { config, url, verifier, state };
}

describe('client ID metadata documents', () => {
  it('the metadata says so; a metadata-document client completes authorization code + PKCE, consent shows its document as its claim, and the document is fetched once while cached', async () => {
    expect((await t.http.get('/.well-known/oauth-authorization-server')).body.client_id_metadata_document_supported).toBe(true);
    const clientId = `${cimd.origin}/oauth/client.json`;
    cimd.serve('/oauth/client.json', document(clientId), { 'cache-control': 'max-age=600' });
    const owner = await createOrganization(t, 'Acme');

    const flow = await authorizeUrl(t, clientId);
    const answer = await authorizeAsPerson(t.base, flow.url.href, { email: owner.email });
    const consent = pageText(answer.consent!);
    expect(consent).toContain('Research <agent> wants to act for you');
    expect(consent).toContain(`This application describes itself at ${clientId}`);
    expect(consent).toContain('its name is its own claim');
    const tokens = await oauth.authorizationCodeGrant(flow.config, answer.url, { pkceCodeVerifier: flow.verifier, expectedState: flow.state }, { resource: `${t.base}/v1` });
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(200);
    const mine = await t.http.get('/v1/me/authorizations').set(...bearer(owner.token));
    expect(mine.body.items).toEqual([expect.objectContaining({ client: { id: clientId, name: 'Research <agent>', type: 'metadata_document' } })]);

    // Cached (max-age 600): a second authorization, its token and a refresh fetch nothing more.
    const again = await authorizeUrl(t, clientId);
    const second = await authorizeAsPerson(t.base, again.url.href, { email: owner.email });
    const more = await oauth.authorizationCodeGrant(again.config, second.url, { pkceCodeVerifier: again.verifier, expectedState: again.state }, { resource: `${t.base}/v1` });
    await oauth.refreshTokenGrant(again.config, more.refresh_token!, { resource: `${t.base}/v1` });
    expect(cimd.hits('/oauth/client.json')).toBe(1);
  });

  async function refusal(app: OAuthTestApp, clientId: string) {
    const res = await app.http.get('/oauth/auth').query({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, scope: 'members.read', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' });
    return { status: res.status, body: res.body as { error?: string; error_description?: string } };
  }

  it('a document naming another client_id is refused', async () => {
    const clientId = `${cimd.origin}/mismatch.json`;
    cimd.serve('/mismatch.json', document(`${cimd.origin}/other.json`));
    const res = await refusal(t, clientId);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_client_metadata', error_description: 'client_id metadata document client_id does not match the expected value' });
  });

  it('a document asking for an authentication method other than none is refused (invalid_client)', async () => {
    for (const method of ['client_secret_basic', 'private_key_jwt']) {
      const clientId = `${cimd.origin}/secret-${method}.json`;
      cimd.serve(`/secret-${method}.json`, document(clientId, { token_endpoint_auth_method: method }));
      const res = await refusal(t, clientId);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/^invalid_client/);
    }
  });

  it('a document over 64 KB, one that is no JSON, or an answer that is no 200 is refused', async () => {
    const big = `${cimd.origin}/big.json`;
    cimd.serve('/big.json', document(big, { padding: 'x'.repeat(70 * 1024) }));
    const missing = `${cimd.origin}/missing.json`;
    const notJson = `${cimd.origin}/not-json.json`;
    cimd.serve('/not-json.json', '<html>');
    for (const clientId of [big, missing, notJson]) {
      const res = await refusal(t, clientId);
      expect(res).toMatchObject({ status: 400, body: { error: 'invalid_client', error_description: 'client_id metadata document fetch failed' } });
    }
  });

  it("under production egress rules a document on a private address is never fetched", async () => {
    const production = await startOAuthApp({ database: t.database, outbound: createOutbound({ lookup: cimd.lookup, ca: cimd.ca }) });
    try {
      const clientId = `${cimd.origin}/private.json`;
      cimd.serve('/private.json', document(clientId));
      const res = await refusal(production, clientId);
      expect(res).toMatchObject({ status: 400, body: { error: 'invalid_client', error_description: 'client_id metadata document fetch failed' } });
      expect(cimd.hits('/private.json')).toBe(0);
      expect(production.logs.join('')).toMatch(/oauth.client_metadata_fetch_refused.*not_allowed/);
    } finally {
      await production.close();
    }
  });

  it('with OAUTH_CIMD=off a URL client_id is an unknown client', async () => {
    const off = await startOAuthApp({ database: t.database, env: { OAUTH_CIMD: 'off' }, outbound: createOutbound({ allowedNetworks: ['127.0.0.0/8'], lookup: cimd.lookup, ca: cimd.ca }) });
    try {
      const clientId = `${cimd.origin}/off.json`;
      cimd.serve('/off.json', document(clientId));
      expect((await off.http.get('/.well-known/oauth-authorization-server')).body.client_id_metadata_document_supported).toBeUndefined();
      const res = await refusal(off, clientId);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_client');
      expect(cimd.hits('/off.json')).toBe(0);
    } finally {
      await off.close();
    }
  });
});
