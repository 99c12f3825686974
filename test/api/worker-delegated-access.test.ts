import * as oauth from 'openid-client';
import { addMember, bearer, createOrganization, type OrgMember, type OrgOwner } from '../support/factories';
import { discover, startOAuthApp, type OAuthTestApp } from '../support/oauth';
import { delegate, exchange, workerWithCeiling, type TestWorker } from '../support/workers-oauth';

/**
 * What a worker sees depends on whom it acts for (docs/workers-and-usage.md#the-credential-broker):
 * GET /v1/workers/{id}/llm-config with `x-worker-token` answers its creator's LLM providers, with a
 * token it exchanged for a member (openid-client, RFC 8693) the member's. And a worker's own
 * client-credentials token is no member (docs/workers-and-usage.md#workers-as-oauth-clients): GET
 * /v1/org is 403 for it, and it is not the creator of what its creator made.
 */
let t: OAuthTestApp;
let owner: OrgOwner;
let creator: OrgMember;
let alice: OrgMember;
let worker: TestWorker;
let creatorsProvider: string;
let alicesProvider: string;

async function provider(name: string, grantee: string): Promise<string> {
  const res = await t.http.post('/v1/llm-providers').set(...bearer(owner.token)).send({ name, provider: 'openai', apiKey: `sk-${name}-0123456789abcdef`, models: ['gpt-4o'] });
  expect(res.status).toBe(201);
  expect((await t.http.post(`/v1/llm-providers/${res.body.item.id}/access`).set(...bearer(owner.token)).send({ orgMembershipId: grantee, role: 'viewer' })).status).toBe(201);
  return res.body.item.id;
}

beforeAll(async () => {
  t = await startOAuthApp();
  owner = await createOrganization(t);
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  creator = await addMember(t, owner.organizationId, 'member');
  alice = await addMember(t, owner.organizationId, 'member');
  worker = await workerWithCeiling(t, creator.token, ['members.read', 'mcpConnections.use'], 'Helper');
  creatorsProvider = await provider('creators', creator.memberId);
  alicesProvider = await provider('alices', alice.memberId);
});
afterAll(() => t.close());

const llmConfig = (credential: [string, string], id = worker.id) => t.http.get(`/v1/workers/${id}/llm-config`).set(...credential);
const ids = (body: { items: { id: string }[] }) => body.items.map((p) => p.id);

describe('GET /v1/workers/{id}/llm-config', () => {
  it("answers the creator's providers to x-worker-token and the member's to a token exchanged for them", async () => {
    const byHostToken = await llmConfig(['x-worker-token', worker.hostToken]);
    expect(byHostToken.status).toBe(200);
    expect(ids(byHostToken.body)).toEqual([creatorsProvider]);
    const delegation = await delegate(t, alice.token, worker.id, ['members.read']);
    const token = (await exchange(t, worker, delegation.subjectToken)).access_token;
    const byDelegation = await llmConfig(bearer(token));
    expect(byDelegation.status).toBe(200);
    expect(ids(byDelegation.body)).toEqual([alicesProvider]);
    expect(byDelegation.body.items[0].apiKey).toBe('sk-alices-0123456789abcdef');
    const log = await t.http.get(`/v1/audit-logs?targetId=${worker.id}&action=credential.issued`).set(...bearer(owner.token));
    expect(log.body.items).toHaveLength(1);
    expect(log.body.items[0]).toMatchObject({ target: { type: 'worker', id: worker.id }, actor: { type: 'member', memberId: alice.memberId, clientId: worker.id, act: { sub: worker.id } }, changes: { llmProviders: { to: [alicesProvider] } } });
    expect(JSON.stringify(log.body)).not.toContain('sk-alices');
    // Revoking Alice's grant applies at once; revoking the delegation ends the token.
    const grants = await t.http.get(`/v1/llm-providers/${alicesProvider}/access`).set(...bearer(owner.token));
    const grant = grants.body.items.find((g: { orgMembershipId: string }) => g.orgMembershipId === alice.memberId);
    expect((await t.http.delete(`/v1/llm-providers/${alicesProvider}/access/${grant.id}`).set(...bearer(owner.token))).status).toBe(200);
    expect(ids((await llmConfig(bearer(token))).body)).toEqual([]);
    expect((await t.http.delete(`/v1/me/authorizations/${delegation.id}`).set(...bearer(alice.token))).status).toBe(204);
    expect((await llmConfig(bearer(token))).status).toBe(401);
    expect((await llmConfig(['x-worker-token', worker.hostToken])).status).toBe(200);
  });

  it("refuses a token that is not delegated, or acts through another worker (403 delegation_required)", async () => {
    const own = await oauth.clientCredentialsGrant(await discover(t, worker.id, worker.hostToken));
    const byOwn = await llmConfig(bearer(own.access_token));
    expect(byOwn.status).toBe(403);
    expect(byOwn.body.reason).toBe('delegation_required');
    const other = await workerWithCeiling(t, creator.token, ['members.read']);
    const token = (await exchange(t, other, (await delegate(t, alice.token, other.id, ['members.read'])).subjectToken)).access_token;
    const elsewhere = await llmConfig(bearer(token));
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.body.reason).toBe('delegation_required');
    // A session stays refused as before (the route is the worker's).
    expect((await llmConfig(bearer(alice.token))).status).toBe(401);
    // Stopping the worker ends its delegated tokens here too.
    const mine = (await exchange(t, worker, (await delegate(t, alice.token, worker.id, ['members.read'])).subjectToken)).access_token;
    expect((await llmConfig(bearer(mine))).status).toBe(200);
    expect((await t.http.post(`/v1/workers/${worker.id}/stop`).set(...bearer(creator.token))).status).toBe(200);
    expect((await llmConfig(bearer(mine))).status).toBe(401);
    expect((await t.http.post(`/v1/workers/${worker.id}/start`).set(...bearer(creator.token))).status).toBe(200);
  });
});

describe("a worker's own token is no member", () => {
  it('GET /v1/org is 403 for it; the member of a delegated token gets their organization', async () => {
    const own = await oauth.clientCredentialsGrant(await discover(t, worker.id, worker.hostToken));
    expect((await t.http.get('/v1/members').set(...bearer(own.access_token))).status).toBe(200);
    const org = await t.http.get('/v1/org').set(...bearer(own.access_token));
    expect(org.status).toBe(403);
    expect(org.body.reason).toBe('org_member_required');
    const token = (await exchange(t, worker, (await delegate(t, alice.token, worker.id, ['members.read'])).subjectToken)).access_token;
    const delegated = await t.http.get('/v1/org').set(...bearer(token));
    expect(delegated.status).toBe(200);
    expect(delegated.body.currentMember.id).toBe(alice.memberId);
  });

  it("is not the creator of its creator's workers and templates: changing them needs the permission", async () => {
    const sibling = await t.http.post('/v1/workers').set(...bearer(creator.token)).send({ name: 'sibling' });
    const template = await t.http.post('/v1/templates').set(...bearer(creator.token)).send({ name: 'Nightly', kind: 'worker', content: { schedule: '0 2 * * *' } });
    expect(template.status).toBe(201);
    const own = (await oauth.clientCredentialsGrant(await discover(t, worker.id, worker.hostToken))).access_token;
    const del = await t.http.delete(`/v1/workers/${sibling.body.item.id}`).set(...bearer(own));
    expect(del.status).toBe(403);
    expect(del.body.reason).toBe('worker_creator_or_admin_required');
    const patch = await t.http.patch(`/v1/templates/${template.body.item.id}`).set(...bearer(own)).send({ name: 'Changed' });
    expect(patch.status).toBe(403);
    expect(patch.body.reason).toBe('permission_required');
    expect((await t.http.patch(`/v1/templates/${template.body.item.id}`).set(...bearer(creator.token)).send({ name: 'Changed' })).status).toBe(200);
    // The creator still may, with their own session.
    expect((await t.http.delete(`/v1/workers/${sibling.body.item.id}`).set(...bearer(creator.token))).status).toBe(204);
  });
});
