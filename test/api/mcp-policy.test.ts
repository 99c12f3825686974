import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';

/**
 * GET|PUT /v1/org/mcp-policy (docs/mcp-server.md#the-organizations-policy): the defaults, who may
 * read and change it, the audit entry of a change, bad input and tenant isolation. What the policy
 * does to `/mcp` is in test/api/mcp-server.test.ts.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('/v1/org/mcp-policy', () => {
  it('answers the defaults (enabled, read only) until set, then what was set, per organization', async () => {
    const owner = await createOrganization(t);
    const other = await createOrganization(t, 'Other');
    expect((await t.http.get('/v1/org/mcp-policy').set(...bearer(owner.token))).body).toEqual({ ok: true, item: { enabled: true, writes: false } });

    const put = await t.http.put('/v1/org/mcp-policy').set(...bearer(owner.token)).send({ enabled: true, writes: true });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ ok: true, item: { enabled: true, writes: true } });
    expect((await t.http.get('/v1/org/mcp-policy').set(...bearer(owner.token))).body.item).toEqual({ enabled: true, writes: true });
    // Another organization keeps its own (the defaults).
    expect((await t.http.get('/v1/org/mcp-policy').set(...bearer(other.token))).body.item).toEqual({ enabled: true, writes: false });
  });

  it('writes one audit entry per accepted PUT, naming what changed (nothing, when it restates the policy)', async () => {
    const owner = await createOrganization(t);
    await t.http.put('/v1/org/mcp-policy').set(...bearer(owner.token)).send({ enabled: false, writes: false }).expect(200);
    await t.http.put('/v1/org/mcp-policy').set(...bearer(owner.token)).send({ enabled: false, writes: false }).expect(200);
    const entries = await t.db
      .selectFrom('audit_logs')
      .select(['action', 'target_id', 'actor_member_id', 'changes'])
      .where('organization_id', '=', owner.organizationId)
      .where('action', '=', 'organization.mcp_policy_updated')
      .execute();
    expect(entries).toHaveLength(2);
    expect(entries.map((e) => e.changes ?? {})).toEqual(expect.arrayContaining([{ enabled: { from: true, to: false } }, {}]));
    for (const entry of entries) expect(entry).toMatchObject({ action: 'organization.mcp_policy_updated', target_id: owner.organizationId, actor_member_id: owner.memberId });
    const events = await t.db.selectFrom('events').select(['type']).where('organization_id', '=', owner.organizationId).where('type', '=', 'organization.mcp_policy_updated').execute();
    expect(events).toHaveLength(2);
  });

  it('is for admins (org.update) with a session: a member gets 403, an API key 401', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId, 'member');
    const admin = await addMember(t, owner.organizationId, 'admin');
    expect((await t.http.get('/v1/org/mcp-policy').set(...bearer(member.token))).status).toBe(403);
    const refused = await t.http.put('/v1/org/mcp-policy').set(...bearer(member.token)).send({ enabled: false, writes: false });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: 'forbidden', reason: 'org_admin_required' });
    expect((await t.http.put('/v1/org/mcp-policy').set(...bearer(admin.token)).send({ enabled: true, writes: true })).status).toBe(200);

    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'ci' });
    expect(key.status).toBe(201);
    expect((await t.http.get('/v1/org/mcp-policy').set('x-api-key', key.body.key)).status).toBe(401);
    expect((await t.http.put('/v1/org/mcp-policy').set('x-api-key', key.body.key).send({ enabled: false, writes: false })).status).toBe(401);
    expect((await t.http.get('/v1/org/mcp-policy').set(...bearer(owner.token))).body.item).toEqual({ enabled: true, writes: true });
  });

  it('refuses a body without both booleans, naming the field', async () => {
    const owner = await createOrganization(t);
    const missing = await t.http.put('/v1/org/mcp-policy').set(...bearer(owner.token)).send({ enabled: true });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['body', 'writes'] }] });
    const wrong = await t.http.put('/v1/org/mcp-policy').set(...bearer(owner.token)).send({ enabled: 'yes', writes: false });
    expect(wrong.status).toBe(400);
    expect(wrong.body.details[0].path).toEqual(['body', 'enabled']);
    const extra = await t.http.put('/v1/org/mcp-policy').set(...bearer(owner.token)).send({ enabled: true, writes: false, tools: [] });
    expect(extra.status).toBe(400);
    expect(extra.body.details[0].path).toEqual(['body', 'tools']);
  });
});
