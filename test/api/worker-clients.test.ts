import * as oauth from 'openid-client';
import { decodeJwt } from 'jose';
import { addMember, bearer, createOrganization, type OrgMember, type OrgOwner } from '../support/factories';
import { discover, startOAuthApp, type OAuthTestApp } from '../support/oauth';

/**
 * Workers as confidential OAuth clients with a ceiling (docs/workers-and-usage.md#workers-as-oauth-clients):
 * client_id the worker, secret its host token, tokens for openid-client's client_credentials whose
 * `sub` is the worker; what they may do is their scope ∩ the ceiling ∩ the creator's permissions,
 * read on every request.
 */
let t: OAuthTestApp;
let owner: OrgOwner;
let admin: OrgMember;
beforeAll(async () => {
  t = await startOAuthApp();
  owner = await createOrganization(t);
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  admin = await addMember(t, owner.organizationId, 'admin');
});
afterAll(() => t.close());

async function createWorker(token: string, name = 'agent'): Promise<{ id: string; hostToken: string }> {
  const res = await t.http.post('/v1/workers').set(...bearer(token)).send({ name });
  expect(res.status).toBe(201);
  return { id: res.body.item.id, hostToken: res.body.hostToken };
}

const setCeiling = (token: string, workerId: string, scopes: unknown) => t.http.put(`/v1/workers/${workerId}/ceiling`).set(...bearer(token)).send({ scopes });

async function workerToken(worker: { id: string; hostToken: string }, scope?: string) {
  const config = await discover(t, worker.id, worker.hostToken);
  return oauth.clientCredentialsGrant(config, scope ? { scope } : undefined);
}

/** The token endpoint's error for the worker's credentials (openid-client reports a 401 as a challenge, not its body). */
async function refusedClient(worker: { id: string; hostToken: string }): Promise<string> {
  const res = await t.http.post('/oauth/token').auth(worker.id, worker.hostToken).type('form').send({ grant_type: 'client_credentials' });
  expect(res.status).toBe(401);
  return res.body.error;
}

describe('the ceiling', () => {
  it('starts empty, is set by the creator (shown in GET) and audited', async () => {
    const worker = await createWorker(admin.token);
    const got = await t.http.get(`/v1/workers/${worker.id}`).set(...bearer(owner.token));
    expect(got.body.item.ceiling).toEqual({ scopes: [] });
    const put = await setCeiling(admin.token, worker.id, ['teams.read', 'members.read']);
    expect(put.status).toBe(200);
    expect(put.body.item.ceiling).toEqual({ scopes: ['members.read', 'teams.read'] });
    const again = await t.http.get(`/v1/workers/${worker.id}`).set(...bearer(owner.token));
    expect(again.body.item.ceiling).toEqual({ scopes: ['members.read', 'teams.read'] });
    const log = await t.http.get(`/v1/audit-logs?targetId=${worker.id}&action=worker.ceiling_updated`).set(...bearer(owner.token));
    expect(log.body.items[0]).toMatchObject({ action: 'worker.ceiling_updated', changes: { ceiling: { from: [], to: ['members.read', 'teams.read'] } } });
  });

  it('refuses keys the caller lacks, other members, unknown keys, tokens and other organizations', async () => {
    const member = await addMember(t, owner.organizationId, 'member');
    const own = await createWorker(member.token);
    const escalation = await setCeiling(member.token, own.id, ['teams.manage']);
    expect(escalation.status).toBe(403);
    expect(escalation.body.reason).toBe('permission_not_held');
    const adminsWorker = await createWorker(admin.token);
    const notCreator = await setCeiling(member.token, adminsWorker.id, ['teams.read']);
    expect(notCreator.status).toBe(403);
    expect(notCreator.body.reason).toBe('worker_creator_or_admin_required');
    // An admin may set another's worker's ceiling, within what the admin holds.
    expect((await setCeiling(owner.token, own.id, ['teams.read'])).status).toBe(200);
    const unknown = await setCeiling(owner.token, own.id, ['teams.read', 'nothing.here']);
    expect(unknown.status).toBe(400);
    expect(unknown.body.details[0].path).toEqual(['body', 'scopes', '1']);
    const malformed = await setCeiling(owner.token, own.id, ['not a key']);
    expect(malformed.status).toBe(400);
    expect(malformed.body.details[0].path).toEqual(['body', 'scopes', '0']);
    // Session only: the worker's own token cannot raise its ceiling.
    const tokens = await workerToken(own);
    expect((await setCeiling(tokens.access_token, own.id, ['teams.read'])).status).toBe(401);
    const other = await createOrganization(t, 'Other');
    expect((await setCeiling(other.token, own.id, [])).status).toBe(404);
  });
});

describe('client_credentials for a worker', () => {
  it('issues a token whose sub is the worker, scoped to the ceiling ∩ the creator, usable on /v1', async () => {
    const worker = await createWorker(admin.token);
    await setCeiling(admin.token, worker.id, ['members.read', 'teams.read', 'teams.manage']);
    const tokens = await workerToken(worker);
    expect(tokens.scope!.split(' ').sort()).toEqual(['members.read', 'teams.manage', 'teams.read']);
    const claims = decodeJwt(tokens.access_token);
    expect(claims).toMatchObject({ sub: worker.id, client_id: worker.id, org_id: owner.organizationId, aud: `${t.base}/v1` });
    expect(claims.act).toBeUndefined();
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(200);
    // Outside the ceiling: refused at the token endpoint and on the API.
    await expect(workerToken(worker, 'members.remove')).rejects.toMatchObject({ error: 'invalid_scope' });
    const narrow = await workerToken(worker, 'teams.read');
    const refused = await t.http.post('/v1/teams').set(...bearer(narrow.access_token)).send({ name: 'x' });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain('teams.manage');
  });

  it("audits what the worker's token does as the worker, naming its client; the chain verifies", async () => {
    const worker = await createWorker(admin.token);
    await setCeiling(admin.token, worker.id, ['teams.manage']);
    const tokens = await workerToken(worker);
    const team = await t.http.post('/v1/teams').set(...bearer(tokens.access_token)).send({ name: 'By agent' });
    expect(team.status).toBe(201);
    const log = await t.http.get(`/v1/audit-logs?targetId=${team.body.item.id}`).set(...bearer(owner.token));
    expect(log.body.items[0].actor).toEqual({ type: 'worker', id: worker.id, memberId: null, clientId: worker.id });
    expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token))).body).toMatchObject({ ok: true, firstBrokenId: null });
  });

  it('narrowing the ceiling or the creator role narrows a live token on its next request', async () => {
    const creator = await addMember(t, owner.organizationId, 'admin');
    const worker = await createWorker(creator.token);
    await setCeiling(creator.token, worker.id, ['members.read', 'teams.manage']);
    const tokens = await workerToken(worker);
    expect((await t.http.post('/v1/teams').set(...bearer(tokens.access_token)).send({ name: 'one' })).status).toBe(201);
    // The creator becomes a member: teams.manage is no longer theirs, so not the worker's either.
    expect((await t.http.post(`/v1/members/${creator.memberId}/role`).set(...bearer(owner.token)).send({ role: 'member' })).status).toBe(200);
    expect((await t.http.post('/v1/teams').set(...bearer(tokens.access_token)).send({ name: 'two' })).status).toBe(403);
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(200);
    // The ceiling narrowed by an admin: members.read goes too.
    expect((await setCeiling(owner.token, worker.id, [])).status).toBe(200);
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(403);
  });

  it('a stopped worker, a removed creator and a rotated host token end it; x-worker-token keeps working', async () => {
    const creator = await addMember(t, owner.organizationId, 'admin');
    const worker = await createWorker(creator.token);
    await setCeiling(creator.token, worker.id, ['members.read']);
    const heartbeat = await t.http.post(`/v1/workers/${worker.id}/heartbeat`).set('x-worker-token', worker.hostToken).send({});
    expect(heartbeat.status).toBe(200);
    const tokens = await workerToken(worker);
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(200);

    expect((await t.http.post(`/v1/workers/${worker.id}/stop`).set(...bearer(creator.token))).status).toBe(200);
    const stopped = await t.http.get('/v1/members').set(...bearer(tokens.access_token));
    expect(stopped.status).toBe(401);
    expect(stopped.headers['www-authenticate']).toContain('error="invalid_token"');
    expect(await refusedClient(worker)).toBe('invalid_client');
    expect((await t.http.post(`/v1/workers/${worker.id}/start`).set(...bearer(creator.token))).status).toBe(200);
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(200);

    // Rotating the host token rotates the client secret.
    const rotated = await t.http.post(`/v1/workers/${worker.id}/tokens/rotate`).set(...bearer(creator.token));
    expect(rotated.status).toBe(200);
    expect(await refusedClient(worker)).toBe('invalid_client');
    const fresh = await workerToken({ id: worker.id, hostToken: rotated.body.hostToken });

    expect((await t.http.delete(`/v1/members/${creator.memberId}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.get('/v1/members').set(...bearer(fresh.access_token))).status).toBe(401);
    expect(await refusedClient({ id: worker.id, hostToken: rotated.body.hostToken })).toBe('invalid_client');
  });

  it("cannot make its creator leave: removing them needs members.remove, as for anyone", async () => {
    const creator = await addMember(t, owner.organizationId, 'member');
    const worker = await createWorker(creator.token);
    await setCeiling(creator.token, worker.id, ['members.read']);
    const tokens = await workerToken(worker);
    const res = await t.http.delete(`/v1/members/${creator.memberId}`).set(...bearer(tokens.access_token));
    expect(res.status).toBe(403);
    expect((await t.http.get('/v1/members').set(...bearer(creator.token))).status).toBe(200);
  });

  it('a deleted worker ends its tokens', async () => {
    const worker = await createWorker(admin.token);
    await setCeiling(admin.token, worker.id, ['members.read']);
    const tokens = await workerToken(worker);
    expect((await t.http.delete(`/v1/workers/${worker.id}`).set(...bearer(admin.token))).status).toBe(204);
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(401);
  });
});
