import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';
import { newId } from '../../src/lib/ids';
import { sha256Hex } from '../../src/lib/crypto';
import type { ManualClock } from '../support/clock';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const MINUTE = 60_000;

describe('POST /v1/api-keys', () => {
  it('creates a key shown once, stored as a SHA-256 hash, that acts as its creator', async () => {
    const owner = await createOrganization(t);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const expiresAt = new Date(t.clock.now().getTime() + 30 * 24 * 60 * MINUTE).toISOString();
    const res = await t.http.post('/v1/api-keys').set(...bearer(admin.token)).send({ name: 'deploy', expiresAt });
    expect(res.status).toBe(201);
    const key: string = res.body.key;
    expect(key).toMatch(/^cpk_[A-Za-z0-9_-]{43}$/);
    expect(res.body.item).toEqual({
      id: expect.stringMatching(/^apk_/),
      name: 'deploy',
      prefix: key.slice(0, 12),
      memberId: admin.memberId,
      owner: { type: 'member', memberId: admin.memberId },
      // docs/people-and-roles.md#roles-and-permissions: an unscoped key shows `permissions: null`.
      permissions: null,
      createdAt: t.clock.now().toISOString(),
      expiresAt,
      lastUsedAt: null,
    });
    const row = await t.db.selectFrom('api_keys').select(['key_hash', 'organization_id']).where('id', '=', res.body.item.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ key_hash: sha256Hex(key), organization_id: owner.organizationId });
    const me = await t.http.get('/v1/me').set('x-api-key', key);
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(admin.userId);
    expect(me.body.activeOrganizationId).toBe(owner.organizationId);
  });

  it('refuses an expiresAt that is not in the future, and other bad input (400)', async () => {
    const owner = await createOrganization(t);
    const past = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k', expiresAt: t.clock.now().toISOString() });
    expect(past.status).toBe(400);
    expect(past.body.details).toEqual([{ message: 'must be in the future', path: ['body', 'expiresAt'] }]);
    const notDate = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k', expiresAt: 'tomorrow' });
    expect(notDate.status).toBe(400);
    expect(notDate.body.details[0].path).toEqual(['body', 'expiresAt']);
    const noName = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({});
    expect(noName.status).toBe(400);
    expect(noName.body.details[0].path).toEqual(['body', 'name']);
  });

  it('is for admins (403) with a session (an API key or nothing gets 401)', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const denied = await t.http.post('/v1/api-keys').set(...bearer(member.token)).send({ name: 'mine' });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'forbidden', reason: 'org_admin_required', message: expect.any(String) });
    const key = (await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k' })).body.key;
    expect((await t.http.post('/v1/api-keys').set('x-api-key', key).send({ name: 'child' })).status).toBe(401);
    expect((await t.http.post('/v1/api-keys').send({ name: 'anon' })).status).toBe(401);
  });
});

describe('GET /v1/api-keys', () => {
  it('lists the organization\'s live keys newest first, never a key or hash', async () => {
    const clock = t.clock as ManualClock;
    const owner = await createOrganization(t);
    const first = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'one' });
    clock.advance(5);
    const second = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'two' });
    const page1 = await t.http.get('/v1/api-keys?limit=1').set(...bearer(owner.token));
    expect(page1.status).toBe(200);
    expect(page1.body.items).toEqual([second.body.item]);
    const page2 = await t.http.get('/v1/api-keys').query({ limit: 1, cursor: page1.body.nextCursor }).set(...bearer(owner.token));
    expect(page2.body).toEqual({ items: [first.body.item], nextCursor: null });
    const text = JSON.stringify([page1.body, page2.body]);
    for (const secret of [first.body.key, second.body.key, sha256Hex(first.body.key)]) expect(text).not.toContain(secret);
    // A cursor from another list is refused.
    await addMember(t, owner.organizationId);
    const members = await t.http.get('/v1/members?limit=1').set(...bearer(owner.token));
    const wrongList = await t.http.get('/v1/api-keys').query({ cursor: members.body.nextCursor }).set(...bearer(owner.token));
    expect(wrongList.status).toBe(400);
    expect(wrongList.body.details[0].path).toEqual(['query', 'cursor']);
  });

  it('keeps lastUsedAt without a write on every request (at most once a minute)', async () => {
    const clock = t.clock as ManualClock;
    const owner = await createOrganization(t);
    const created = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'usage' });
    const key = created.body.key;
    const firstUse = clock.now();
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(200);
    clock.advance(30_000);
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(200);
    const lastUsed = async () => (await t.http.get('/v1/api-keys').set(...bearer(owner.token))).body.items[0].lastUsedAt;
    expect(await lastUsed()).toBe(firstUse.toISOString());
    clock.advance(31_000);
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(200);
    expect(await lastUsed()).toBe(clock.now().toISOString());
  });

  it('stops an expired key (401) and still lists it', async () => {
    const clock = t.clock as ManualClock;
    const owner = await createOrganization(t);
    const expiresAt = new Date(clock.now().getTime() + MINUTE).toISOString();
    const created = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'short', expiresAt });
    expect((await t.http.get('/v1/members').set('x-api-key', created.body.key)).status).toBe(200);
    clock.advance(MINUTE);
    expect((await t.http.get('/v1/members').set('x-api-key', created.body.key)).status).toBe(401);
    const list = await t.http.get('/v1/api-keys').set(...bearer(owner.token));
    expect(list.body.items.map((k: { id: string }) => k.id)).toEqual([created.body.item.id]);
  });

  it('is for admins (403), needs credentials (401), validates paging (400), shows only this organization', async () => {
    const a = await createOrganization(t);
    const member = await addMember(t, a.organizationId);
    const b = await createOrganization(t);
    await t.http.post('/v1/api-keys').set(...bearer(a.token)).send({ name: 'a-key' });
    const denied = await t.http.get('/v1/api-keys').set(...bearer(member.token));
    expect(denied.status).toBe(403);
    expect(denied.body.reason).toBe('org_admin_required');
    expect((await t.http.get('/v1/api-keys')).status).toBe(401);
    const bad = await t.http.get('/v1/api-keys?limit=101').set(...bearer(a.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['query', 'limit']);
    expect((await t.http.get('/v1/api-keys').set(...bearer(b.token))).body.items).toEqual([]);
  });
});

describe('DELETE /v1/api-keys/{apiKeyId}', () => {
  it('revokes a key at once; it leaves the list; a second revoke is 404', async () => {
    const owner = await createOrganization(t);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const created = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'gone' });
    const res = await t.http.delete(`/v1/api-keys/${created.body.item.id}`).set(...bearer(admin.token));
    expect(res.status).toBe(204);
    expect((await t.http.get('/v1/members').set('x-api-key', created.body.key)).status).toBe(401);
    expect((await t.http.get('/v1/api-keys').set(...bearer(owner.token))).body.items).toEqual([]);
    const again = await t.http.delete(`/v1/api-keys/${created.body.item.id}`).set(...bearer(owner.token));
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('api_key_not_found');
  });

  it('is for admins (403), needs credentials (401), validates the id (400), hides other tenants (404)', async () => {
    const a = await createOrganization(t);
    const member = await addMember(t, a.organizationId);
    const b = await createOrganization(t);
    const created = await t.http.post('/v1/api-keys').set(...bearer(a.token)).send({ name: 'a' });
    const path = `/v1/api-keys/${created.body.item.id}`;
    const denied = await t.http.delete(path).set(...bearer(member.token));
    expect(denied.status).toBe(403);
    expect(denied.body.reason).toBe('org_admin_required');
    expect((await t.http.delete(path)).status).toBe(401);
    const bad = await t.http.delete('/v1/api-keys/apk_bad').set(...bearer(a.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['path', 'apiKeyId']);
    const cross = await t.http.delete(path).set(...bearer(b.token));
    expect(cross.status).toBe(404);
    expect((await t.http.delete(`/v1/api-keys/${newId('apiKey')}`).set(...bearer(b.token))).status).toBe(404);
    expect((await t.http.get('/v1/members').set('x-api-key', created.body.key)).status).toBe(200);
  });
});
