import * as oauth from 'openid-client';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';
import { discover, organizationClientToken, serviceAccountClient, startOAuthApp, type OAuthTestApp } from '../support/oauth';

/**
 * Audit entries made with an OAuth access token name its client (`actor.clientId`,
 * docs/audit.md#the-actor), stored with the entry so the list, the export and the hash chain all
 * carry it: the chain still verifies after such entries.
 */
let t: OAuthTestApp;
let owner: OrgOwner;
beforeAll(async () => {
  t = await startOAuthApp();
  owner = await createOrganization(t);
});
afterAll(() => t.close());

async function entryOf(teamId: string) {
  const res = await t.http.get(`/v1/audit-logs?targetId=${teamId}`).set(...bearer(owner.token));
  expect(res.status).toBe(200);
  expect(res.body.items).toHaveLength(1);
  return res.body.items[0];
}

async function teamBy(token: string, name: string): Promise<string> {
  const res = await t.http.post('/v1/teams').set(...bearer(token)).send({ name });
  expect(res.status).toBe(201);
  return res.body.item.id;
}

it("a service account's token: the service account acts, its client is named", async () => {
  const sa = await serviceAccountClient(t, owner, 'admin');
  const tokens = await oauth.clientCredentialsGrant(await discover(t, sa.id, sa.clientSecret), { scope: 'teams.manage' });
  const entry = await entryOf(await teamBy(tokens.access_token, 'By robot'));
  expect(entry.actor).toEqual({ type: 'service_account', id: sa.id, memberId: sa.memberId, clientId: sa.id });
});

it("a person's token through an organization client: the person acts, the client is named", async () => {
  const created = await t.http
    .post('/v1/oauth-clients')
    .set(...bearer(owner.token))
    .send({ name: 'Dashboard', type: 'public', redirectUris: ['http://127.0.0.1/cb'], scopes: ['teams.manage'] });
  expect(created.status).toBe(201);
  const clientId: string = created.body.item.id;
  const token = await organizationClientToken(t, { clientId, memberId: owner.memberId, organizationId: owner.organizationId, scope: 'teams.manage' });
  const entry = await entryOf(await teamBy(token, 'By dashboard'));
  expect(entry.actor).toEqual({ type: 'member', id: owner.userId, memberId: owner.memberId, clientId });
});

it('a session names no client; the chain verifies and the export carries the client', async () => {
  const entry = await entryOf(await teamBy(owner.token, 'By hand'));
  expect(entry.actor).toEqual({ type: 'member', id: owner.userId, memberId: owner.memberId });
  const verify = await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token));
  expect(verify.body).toMatchObject({ ok: true, firstBrokenId: null });
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  const exported = await t.http.get('/v1/audit-logs/export?format=ndjson').set(...bearer(owner.token));
  expect(exported.status).toBe(200);
  const actors = exported.text.trim().split('\n').map((line) => JSON.parse(line).actor);
  expect(actors.filter((a) => a.clientId).map((a) => a.type).sort()).toEqual(['member', 'service_account']);
});
