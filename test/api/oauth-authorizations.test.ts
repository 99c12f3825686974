import { SignJWT, importJWK } from 'jose';
import { randomUUID } from 'node:crypto';
import { SecretBox } from '../../src/lib/crypto';
import { newId } from '../../src/lib/ids';
import { signingKeys } from '../../src/oauth/keys';
import { keyOf } from '../../src/oauth/records';
import * as store from '../../src/authorizations/store';
import type { AuthorizationClientType } from '../../src/authorizations/tables';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';

/**
 * Members' authorizations of OAuth clients (docs/oauth.md#authorizations): each person's own list
 * and revocation, the admins' list and revocation, tenant isolation, and a token issued under an
 * authorization failing on its next request once the authorization is revoked; the organization's
 * oauth-policy and its maxScopes applied to outside clients' tokens per request. Authorizations are
 * made here with the store the consent step uses; the flows that make them through the
 * authorization server are test/api/oauth-authorization-code.test.ts and oauth-device.test.ts.
 */
let t: TestApp;
let secrets: SecretBox;
beforeAll(async () => {
  t = await createTestApp();
  secrets = new SecretBox(t.settings.secretKey!);
});
afterAll(() => t.close());

const api = () => `${t.settings.publicBaseUrl}/v1`;

async function organizationClient(owner: OrgOwner, scopes: string[]): Promise<string> {
  const id = `oac_${randomUUID().replace(/-/g, '').slice(0, 26)}`;
  const now = t.clock.now();
  await t.db
    .insertInto('oauth_clients')
    .values({ id, organization_id: owner.organizationId, name: 'Deploy bot', type: 'public', redirect_uris: ['http://127.0.0.1/cb'], scopes, logo_url: null, secret_hash: null, created_by_member_id: owner.memberId, created_at: now, updated_at: now })
    .execute();
  return id;
}

async function authorize(who: { organizationId: string; memberId: string }, clientId: string, scopes: string[], clientType: AuthorizationClientType = 'organization') {
  const grantId = randomUUID();
  const now = t.clock.now();
  const row = await store.insert(
    t.db,
    { id: newId('oauthAuthorization'), organizationId: who.organizationId, memberId: who.memberId, clientId, clientType, clientName: 'Deploy bot', scopes, resource: api(), grantKey: keyOf('Grant', grantId), expiresAt: new Date(now.getTime() + 86_400_000) },
    now,
  );
  // A refresh token of the grant, as the authorization server stores it.
  await t.db.insertInto('oauth_records').values({ id: keyOf('RefreshToken', randomUUID()), model: 'RefreshToken', payload_sealed: secrets.encrypt('{}'), grant_key: keyOf('Grant', grantId) }).execute();
  return row;
}

/** An access token as the authorization server signs it for a member's authorization. */
async function tokenUnder(auth: store.AuthorizationRow, scopes: string[]): Promise<string> {
  const keys = await signingKeys(t.db, secrets, t.clock.now());
  const jwk = keys.jwks[0]!;
  const key = await importJWK(jwk as Parameters<typeof importJWK>[0], 'RS256');
  const now = Math.floor(t.clock.now().getTime() / 1000);
  return new SignJWT({ client_id: auth.client_id, scope: scopes.join(' '), org_id: auth.organization_id, authorization_id: auth.id })
    .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: jwk.kid })
    .setIssuer(t.settings.publicBaseUrl)
    .setAudience(api())
    .setSubject(auth.member_id)
    .setJti(randomUUID())
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(key);
}

describe('/v1/me/authorizations', () => {
  it("lists the caller's own authorizations only, and revoking one ends its tokens on the next request", async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId, 'member');
    const clientId = await organizationClient(owner, ['members.read', 'offline_access']);
    const mine = await authorize(member, clientId, ['members.read', 'offline_access']);
    const owners = await authorize(owner, clientId, ['members.read']);

    const list = await t.http.get('/v1/me/authorizations').set(...bearer(member.token));
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      items: [
        {
          id: mine.id,
          client: { id: clientId, name: 'Deploy bot', type: 'organization' },
          organizationId: owner.organizationId,
          memberId: member.memberId,
          scopes: ['members.read', 'offline_access'],
          resource: api(),
          createdAt: mine.created_at.toISOString(),
          lastUsedAt: mine.last_used_at.toISOString(),
          expiresAt: mine.expires_at.toISOString(),
        },
      ],
      nextCursor: null,
    });

    const token = await tokenUnder(mine, ['members.read']);
    expect((await t.http.get('/v1/members').set(...bearer(token))).status).toBe(200);

    // Another person's authorization is not found, and stays.
    expect((await t.http.delete(`/v1/me/authorizations/${owners.id}`).set(...bearer(member.token))).status).toBe(404);
    const revoked = await t.http.delete(`/v1/me/authorizations/${mine.id}`).set(...bearer(member.token));
    expect(revoked.status).toBe(204);
    const refused = await t.http.get('/v1/members').set(...bearer(token));
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toMatch(/^Bearer error="invalid_token"/);
    // The grant's refresh tokens are gone with it; the owner's are not.
    expect(await t.db.selectFrom('oauth_records').select('id').where('grant_key', '=', mine.grant_key).execute()).toEqual([]);
    expect(await t.db.selectFrom('oauth_records').select('id').where('grant_key', '=', owners.grant_key).execute()).toHaveLength(1);
    expect((await t.http.get('/v1/me/authorizations').set(...bearer(member.token))).body.items).toEqual([]);
    expect((await t.http.delete(`/v1/me/authorizations/${mine.id}`).set(...bearer(member.token))).status).toBe(404);

    const audit = await t.db.selectFrom('audit_logs').select(['action', 'actor_id', 'actor_member_id', 'target_type', 'target_id']).where('action', '=', 'oauth_authorization.revoked').where('target_id', '=', mine.id).execute();
    expect(audit).toEqual([{ action: 'oauth_authorization.revoked', actor_id: member.userId, actor_member_id: member.memberId, target_type: 'oauth_authorization', target_id: mine.id }]);
  });

  it('is session only: an API key gets 401', async () => {
    const owner = await createOrganization(t);
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'ci' });
    expect((await t.http.get('/v1/me/authorizations').set('x-api-key', key.body.key)).status).toBe(401);
  });

  it('pages newest first', async () => {
    const owner = await createOrganization(t);
    const clientId = await organizationClient(owner, ['members.read']);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      // One per resource: a member has one live authorization per client and resource.
      const grantKey = keyOf('Grant', randomUUID());
      const now = t.clock.now();
      const row = await store.insert(t.db, { id: newId('oauthAuthorization'), organizationId: owner.organizationId, memberId: owner.memberId, clientId, clientType: 'organization', clientName: 'Deploy bot', scopes: ['members.read'], resource: `${api()}/${i}`, grantKey, expiresAt: new Date(now.getTime() + 86_400_000) }, now);
      ids.unshift(row.id);
    }
    const first = await t.http.get('/v1/me/authorizations?limit=2').set(...bearer(owner.token));
    expect(first.body.items.map((a: { id: string }) => a.id)).toEqual(ids.slice(0, 2));
    const second = await t.http.get(`/v1/me/authorizations?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`).set(...bearer(owner.token));
    expect(second.body).toMatchObject({ items: [{ id: ids[2] }], nextCursor: null });
  });
});

describe('/v1/oauth-authorizations', () => {
  it("lists the organization's authorizations to admins, and revokes one; another organization's is 404", async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId, 'member');
    const other = await createOrganization(t, 'Other');
    const clientId = await organizationClient(owner, ['members.read']);
    const a = await authorize(member, clientId, ['members.read']);
    const otherClient = await organizationClient(other, ['members.read']);
    const b = await authorize(other, otherClient, ['members.read']);

    const list = await t.http.get('/v1/oauth-authorizations').set(...bearer(owner.token));
    expect(list.status).toBe(200);
    expect(list.body.items.map((x: { id: string }) => x.id)).toEqual([a.id]);
    expect((await t.http.get('/v1/oauth-authorizations').set(...bearer(member.token))).status).toBe(403);
    expect((await t.http.delete(`/v1/oauth-authorizations/${a.id}`).set(...bearer(member.token))).status).toBe(403);

    expect((await t.http.delete(`/v1/oauth-authorizations/${b.id}`).set(...bearer(owner.token))).status).toBe(404);
    const token = await tokenUnder(a, ['members.read']);
    expect((await t.http.get('/v1/members').set(...bearer(token))).status).toBe(200);
    expect((await t.http.delete(`/v1/oauth-authorizations/${a.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.get('/v1/members').set(...bearer(token))).status).toBe(401);
    expect((await t.http.get('/v1/oauth-authorizations').set(...bearer(owner.token))).body.items).toEqual([]);
    expect((await t.http.get('/v1/oauth-authorizations').set(...bearer(other.token))).body.items.map((x: { id: string }) => x.id)).toEqual([b.id]);
  });

  it('refuses a token whose authorization names another client or member, or has expired', async () => {
    const owner = await createOrganization(t);
    const clientId = await organizationClient(owner, ['members.read']);
    const auth = await authorize(owner, clientId, ['members.read']);
    const otherClient = await organizationClient(owner, ['members.read']);
    expect((await t.http.get('/v1/members').set(...bearer(await tokenUnder({ ...auth, client_id: otherClient }, ['members.read'])))).status).toBe(401);
    const member = await addMember(t, owner.organizationId, 'member');
    expect((await t.http.get('/v1/members').set(...bearer(await tokenUnder({ ...auth, member_id: member.memberId }, ['members.read'])))).status).toBe(401);
    const token = await tokenUnder(auth, ['members.read']);
    expect((await t.http.get('/v1/members').set(...bearer(token))).status).toBe(200);
    await t.db.updateTable('oauth_authorizations').set({ expires_at: t.clock.now() }).where('id', '=', auth.id).execute();
    expect((await t.http.get('/v1/members').set(...bearer(token))).status).toBe(401);
  });
});

describe('/v1/org/oauth-policy', () => {
  it('answers the defaults until set, then what was set, audited; per organization', async () => {
    const owner = await createOrganization(t);
    const other = await createOrganization(t, 'Other');
    expect((await t.http.get('/v1/org/oauth-policy').set(...bearer(owner.token))).body).toEqual({ ok: true, item: { thirdPartyClients: 'allow', allowList: [], maxScopes: null } });
    const put = await t.http
      .put('/v1/org/oauth-policy')
      .set(...bearer(owner.token))
      .send({ thirdPartyClients: 'allowList', allowList: ['https://agent.example.com/client.json'], maxScopes: ['teams.read', 'members.read'] });
    expect(put.status).toBe(200);
    expect(put.body.item).toEqual({ thirdPartyClients: 'allowList', allowList: ['https://agent.example.com/client.json'], maxScopes: ['members.read', 'teams.read'] });
    expect((await t.http.get('/v1/org/oauth-policy').set(...bearer(owner.token))).body.item).toEqual(put.body.item);
    expect((await t.http.get('/v1/org/oauth-policy').set(...bearer(other.token))).body.item.thirdPartyClients).toBe('allow');
    const audit = await t.db.selectFrom('audit_logs').select(['changes']).where('organization_id', '=', owner.organizationId).where('action', '=', 'organization.oauth_policy_updated').execute();
    expect(audit).toEqual([
      {
        changes: {
          thirdPartyClients: { from: 'allow', to: 'allowList' },
          allowList: { from: [], to: ['https://agent.example.com/client.json'] },
          maxScopes: { from: null, to: ['members.read', 'teams.read'] },
        },
      },
    ]);
  });

  it('is for admins with a session; refuses unknown permissions and bad values naming the field', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId, 'member');
    const body = { thirdPartyClients: 'deny', allowList: [], maxScopes: null };
    expect((await t.http.put('/v1/org/oauth-policy').set(...bearer(member.token)).send(body)).status).toBe(403);
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'ci' });
    expect((await t.http.put('/v1/org/oauth-policy').set('x-api-key', key.body.key).send(body)).status).toBe(401);
    const unknown = await t.http.put('/v1/org/oauth-policy').set(...bearer(owner.token)).send({ ...body, maxScopes: ['members.read', 'nothing.here'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['body', 'maxScopes', '1'] }] });
    const wrong = await t.http.put('/v1/org/oauth-policy').set(...bearer(owner.token)).send({ ...body, thirdPartyClients: 'some' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.details[0].path).toEqual(['body', 'thirdPartyClients']);
  });

  it("limits an outside client's token to maxScopes on its next request, not an organization client's", async () => {
    const owner = await createOrganization(t);
    const outside = await authorize(owner, 'https://agent.example.com/client.json', ['serviceAccounts.manage', 'members.read'], 'metadata_document');
    const outsideToken = await tokenUnder(outside, ['serviceAccounts.manage', 'members.read']);
    const clientId = await organizationClient(owner, ['serviceAccounts.manage', 'members.read']);
    const own = await authorize(owner, clientId, ['serviceAccounts.manage', 'members.read']);
    const ownToken = await tokenUnder(own, ['serviceAccounts.manage', 'members.read']);
    await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();

    expect((await t.http.get('/v1/service-accounts').set(...bearer(outsideToken))).status).toBe(200);
    await t.http.put('/v1/org/oauth-policy').set(...bearer(owner.token)).send({ thirdPartyClients: 'allow', allowList: [], maxScopes: ['members.read'] }).expect(200);
    const limited = await t.http.get('/v1/service-accounts').set(...bearer(outsideToken));
    expect(limited.status).toBe(403);
    expect((await t.http.get('/v1/members').set(...bearer(outsideToken))).status).toBe(200);
    expect((await t.http.get('/v1/service-accounts').set(...bearer(ownToken))).status).toBe(200);
  });
});
