import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { sha256Hex } from '../../src/lib/crypto';
import { ManualClock } from '../support/clock';

let t: TestApp;
const clock = new ManualClock(new Date('2026-11-20T12:00:00.000Z'));
beforeAll(async () => {
  t = await createTestApp({ clock });
});
afterAll(() => t.close());

async function createWorker(owner: { token: string }, body: Record<string, unknown> = { name: 'Builder' }) {
  const res = await t.http.post('/v1/workers').set(...bearer(owner.token)).send(body);
  if (res.status !== 201) throw new Error(`create worker failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { item: { id: string }; hostToken: string };
}

describe('workers CRUD', () => {
  it('creates a worker, shows the host token once and stores only its hash and a sealed copy', async () => {
    const owner = await createOrganization(t);
    const res = await t.http
      .post('/v1/workers')
      .set(...bearer(owner.token))
      .send({ name: 'Builder', description: 'Builds things', runtimeUrl: 'https://runtime.example.test/base' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      ok: true,
      hostToken: expect.stringMatching(/^cpw_/),
      item: {
        id: expect.stringMatching(/^wrk_[0-9a-z]{26}$/),
        organizationId: owner.organizationId,
        name: 'Builder',
        description: 'Builds things',
        runtimeUrl: 'https://runtime.example.test/base',
        createdByOrgMembershipId: owner.memberId,
        createdAt: '2026-11-20T12:00:00.000Z',
        updatedAt: '2026-11-20T12:00:00.000Z',
        lastActivityAt: null,
        status: 'pending',
        lastHeartbeatAt: null,
        version: null,
        ceiling: { scopes: [] },
      },
    });
    const row = await t.db.selectFrom('workers').select(['host_token_hash', 'host_token_sealed']).where('id', '=', res.body.item.id).executeTakeFirstOrThrow();
    expect(row.host_token_hash).toBe(sha256Hex(res.body.hostToken));
    expect(row.host_token_sealed).not.toContain(res.body.hostToken);
    const get = await t.http.get(`/v1/workers/${res.body.item.id}`).set(...bearer(owner.token));
    expect(get.status).toBe(200);
    expect(get.body).toEqual({ ok: true, item: res.body.item });
    expect(JSON.stringify(get.body)).not.toContain(res.body.hostToken);
  });

  it('lists the workers of the organization, newest first, in pages, to every member', async () => {
    const owner = await createOrganization(t);
    // Three workers: more than the free plan's two.
    await t.db.updateTable('organizations').set({ plan: 'team' }).where('id', '=', owner.organizationId).execute();
    const member = await addMember(t, owner.organizationId);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await createWorker(owner, { name: `w${i}` })).item.id);
      clock.advance(1000);
    }
    const first = await t.http.get('/v1/workers?limit=2').set(...bearer(member.token));
    expect(first.status).toBe(200);
    expect(first.body.items.map((w: { id: string }) => w.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await t.http.get(`/v1/workers?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`).set(...bearer(member.token));
    expect(second.body.items.map((w: { id: string }) => w.id)).toEqual([ids[0]]);
    expect(second.body.nextCursor).toBeNull();
    const bad = await t.http.get('/v1/workers?cursor=forged').set(...bearer(member.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['query', 'cursor']);
  });

  it('lets the creator and an admin update and delete, and refuses other members (403)', async () => {
    const owner = await createOrganization(t);
    const creator = await addMember(t, owner.organizationId);
    const other = await addMember(t, owner.organizationId);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const { item } = await createWorker(creator, { name: 'Mine', description: 'd', runtimeUrl: 'https://runtime.example.test/x' });

    const refused = await t.http.patch(`/v1/workers/${item.id}`).set(...bearer(other.token)).send({ name: 'Stolen' });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'forbidden', reason: 'worker_creator_or_admin_required', message: expect.any(String) });
    const refusedDelete = await t.http.delete(`/v1/workers/${item.id}`).set(...bearer(other.token));
    expect(refusedDelete.status).toBe(403);
    expect(refusedDelete.body.reason).toBe('worker_creator_or_admin_required');

    clock.advance(5000);
    const renamed = await t.http.patch(`/v1/workers/${item.id}`).set(...bearer(creator.token)).send({ name: 'Renamed', description: null });
    expect(renamed.status).toBe(200);
    expect(renamed.body.item).toMatchObject({ name: 'Renamed', description: null, runtimeUrl: 'https://runtime.example.test/x' });
    expect(renamed.body.item.updatedAt).not.toBe(renamed.body.item.createdAt);
    const cleared = await t.http.patch(`/v1/workers/${item.id}`).set(...bearer(admin.token)).send({ runtimeUrl: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.item).toMatchObject({ name: 'Renamed', runtimeUrl: null });

    const deleted = await t.http.delete(`/v1/workers/${item.id}`).set(...bearer(admin.token));
    expect(deleted.status).toBe(204);
    expect((await t.http.get(`/v1/workers/${item.id}`).set(...bearer(creator.token))).status).toBe(404);
  });

  it('answers 401 without credentials', async () => {
    expect((await t.http.get('/v1/workers')).status).toBe(401);
    const res = await t.http.post('/v1/workers').send({ name: 'x' });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('unauthorized');
  });

  it('answers 404 worker_not_found for another organization’s worker and changes nothing', async () => {
    const a = await createOrganization(t, 'A');
    const b = await createOrganization(t, 'B');
    const { item } = await createWorker(a, { name: 'A worker', runtimeUrl: 'https://runtime.example.test' });
    for (const req of [
      t.http.get(`/v1/workers/${item.id}`),
      t.http.patch(`/v1/workers/${item.id}`).send({ name: 'Hijacked' }),
      t.http.delete(`/v1/workers/${item.id}`),
      t.http.get(`/v1/workers/${item.id}/runtime`),
      t.http.get(`/v1/workers/${item.id}/activity`),
    ]) {
      const res = await req.set(...bearer(b.token));
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'worker_not_found', message: expect.any(String) });
    }
    const still = await t.http.get(`/v1/workers/${item.id}`).set(...bearer(a.token));
    expect(still.body.item.name).toBe('A worker');
    const list = await t.http.get('/v1/workers').set(...bearer(b.token));
    expect(list.body.items).toEqual([]);
  });

  it('validates input with the field in the path', async () => {
    const owner = await createOrganization(t);
    const missing = await t.http.post('/v1/workers').set(...bearer(owner.token)).send({});
    expect(missing.status).toBe(400);
    expect(missing.body.details).toContainEqual({ message: 'is required', path: ['body', 'name'] });
    const ftp = await t.http.post('/v1/workers').set(...bearer(owner.token)).send({ name: 'x', runtimeUrl: 'ftp://example.test' });
    expect(ftp.status).toBe(400);
    expect(ftp.body.details).toContainEqual(expect.objectContaining({ path: ['body', 'runtimeUrl'] }));
    const notUrl = await t.http.post('/v1/workers').set(...bearer(owner.token)).send({ name: 'x', runtimeUrl: 'http//nope' });
    expect(notUrl.status).toBe(400);
    const extra = await t.http.post('/v1/workers').set(...bearer(owner.token)).send({ name: 'x', organizationId: 'org_x' });
    expect(extra.body.details).toContainEqual({ message: 'is not allowed', path: ['body', 'organizationId'] });
    const empty = await t.http.post('/v1/workers').set(...bearer(owner.token)).send({ name: '' });
    expect(empty.body.details).toContainEqual(expect.objectContaining({ path: ['body', 'name'] }));
    const { item } = await createWorker(owner);
    const emptyPatch = await t.http.patch(`/v1/workers/${item.id}`).set(...bearer(owner.token)).send({});
    expect(emptyPatch.status).toBe(400);
    const limit = await t.http.get('/v1/workers?limit=0').set(...bearer(owner.token));
    expect(limit.status).toBe(400);
    expect(limit.body.details[0].path).toEqual(['query', 'limit']);
    const longId = await t.http.get(`/v1/workers/${'w'.repeat(65)}`).set(...bearer(owner.token));
    expect(longId.status).toBe(400);
    expect(longId.body.details[0].path).toEqual(['path', 'id']);
  });
});

describe('worker activity', () => {
  async function setup(): Promise<{ owner: OrgOwner; workerId: string; hostToken: string }> {
    const owner = await createOrganization(t);
    const created = await createWorker(owner);
    return { owner, workerId: created.item.id, hostToken: created.hostToken };
  }

  it('accepts events with the worker token and lists them newest first in pages', async () => {
    const { owner, workerId, hostToken } = await setup();
    const member = await addMember(t, owner.organizationId);
    const res = await t.http
      .post(`/v1/workers/${workerId}/activity`)
      .set('x-worker-token', hostToken)
      .send({
        events: [
          { type: 'job.started', at: '2026-11-20T10:00:00.000Z', detail: { job: 1 } },
          { type: 'job.finished', at: '2026-11-20T11:00:00.000Z' },
          { type: 'heartbeat', at: '2026-11-20T09:00:00.000Z' },
        ],
      });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ ok: true, accepted: 3 });

    const page1 = await t.http.get(`/v1/workers/${workerId}/activity?limit=2`).set(...bearer(member.token));
    expect(page1.status).toBe(200);
    expect(page1.body.items).toEqual([
      { id: expect.stringMatching(/^wac_/), workerId, type: 'job.finished', at: '2026-11-20T11:00:00.000Z', detail: null, receivedAt: clock.now().toISOString() },
      { id: expect.stringMatching(/^wac_/), workerId, type: 'job.started', at: '2026-11-20T10:00:00.000Z', detail: { job: 1 }, receivedAt: clock.now().toISOString() },
    ]);
    const page2 = await t.http.get(`/v1/workers/${workerId}/activity?limit=2&cursor=${encodeURIComponent(page1.body.nextCursor)}`).set(...bearer(member.token));
    expect(page2.body.items.map((i: { type: string }) => i.type)).toEqual(['heartbeat']);
    expect(page2.body.nextCursor).toBeNull();

    const worker = await t.http.get(`/v1/workers/${workerId}`).set(...bearer(owner.token));
    expect(worker.body.item.lastActivityAt).toBe(clock.now().toISOString());
  });

  it('answers 401 to a missing, wrong or other worker’s token, and stores nothing', async () => {
    const { owner, workerId } = await setup();
    const other = await createWorker(owner, { name: 'Other' });
    const body = { events: [{ type: 'x', at: '2026-11-20T10:00:00.000Z' }] };
    for (const token of [undefined, 'cpw_wrong', other.hostToken]) {
      const req = t.http.post(`/v1/workers/${workerId}/activity`);
      if (token) req.set('x-worker-token', token);
      const res = await req.send(body);
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('unauthorized');
    }
    // A session is not a worker token either.
    const withSession = await t.http.post(`/v1/workers/${workerId}/activity`).set(...bearer(owner.token)).send(body);
    expect(withSession.status).toBe(401);
    const list = await t.http.get(`/v1/workers/${workerId}/activity`).set(...bearer(owner.token));
    expect(list.body.items).toEqual([]);
  });

  it('stops accepting the token once the worker is deleted', async () => {
    const { owner, workerId, hostToken } = await setup();
    expect((await t.http.delete(`/v1/workers/${workerId}`).set(...bearer(owner.token))).status).toBe(204);
    const res = await t.http.post(`/v1/workers/${workerId}/activity`).set('x-worker-token', hostToken).send({ events: [{ type: 'x', at: '2026-11-20T10:00:00.000Z' }] });
    expect(res.status).toBe(401);
  });

  it('validates events with the index and field in the path', async () => {
    const { workerId, hostToken } = await setup();
    const post = (body: unknown) => t.http.post(`/v1/workers/${workerId}/activity`).set('x-worker-token', hostToken).send(body as object);
    const badType = await post({ events: [{ type: 'ok', at: '2026-11-20T10:00:00.000Z' }, { type: '', at: '2026-11-20T10:00:00.000Z' }] });
    expect(badType.status).toBe(400);
    expect(badType.body.details).toContainEqual(expect.objectContaining({ path: ['body', 'events', '1', 'type'] }));
    const badAt = await post({ events: [{ type: 'x', at: 'yesterday' }] });
    expect(badAt.body.details).toContainEqual(expect.objectContaining({ path: ['body', 'events', '0', 'at'] }));
    const badDetail = await post({ events: [{ type: 'x', at: '2026-11-20T10:00:00.000Z', detail: [1] }] });
    expect(badDetail.body.details).toContainEqual(expect.objectContaining({ path: ['body', 'events', '0', 'detail'] }));
    expect((await post({ events: [] })).status).toBe(400);
    const tooMany = await post({ events: Array.from({ length: 101 }, () => ({ type: 'x', at: '2026-11-20T10:00:00.000Z' })) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.details[0].path).toEqual(['body', 'events']);
  });
});
