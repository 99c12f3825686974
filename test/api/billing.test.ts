import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { ManualClock } from '../support/clock';

/**
 * docs/workers-and-usage.md#plans-limits-and-usage: GET /v1/billing and GET /v1/billing/usage. Online time is hand-computed here
 * from the rule "a heartbeat counts the worker online until the next heartbeat or until
 * WORKER_STALE_AFTER (120 s) after it, whichever comes first".
 */
let t: TestApp;
const clock = new ManualClock(new Date('2026-09-01T00:00:00.000Z'));
beforeAll(async () => {
  t = await createTestApp({ clock, env: { WORKER_STALE_AFTER: '120' } });
});
afterAll(() => t.close());

const at = (iso: string) => clock.set(new Date(iso));
async function createWorker(owner: OrgOwner, name: string) {
  const res = await t.http.post('/v1/workers').set(...bearer(owner.token)).send({ name });
  if (res.status !== 201) throw new Error(`create worker failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.item.id as string, token: res.body.hostToken as string };
}
async function beat(w: { id: string; token: string }, expected = 200) {
  const res = await t.http.post(`/v1/workers/${w.id}/heartbeat`).set('x-worker-token', w.token).send({});
  expect(res.status).toBe(expected);
}
const usage = (owner: { token: string }, month?: string) =>
  t.http
    .get('/v1/billing/usage')
    .query(month ? { month } : {})
    .set(...bearer(owner.token));
const hours = (seconds: number) => Math.round((seconds / 3600) * 1e6) / 1e6;

describe('GET /v1/billing/usage', () => {
  it('counts gaps up to the stale window whole and longer gaps only up to it, and not past now', async () => {
    const owner = await createOrganization(t, 'Gaps');
    const w = await createWorker(owner, 'gappy');
    at('2026-09-10T10:00:00.000Z');
    await beat(w);
    at('2026-09-10T10:01:00.000Z'); // 60 s gap: counted whole
    await beat(w);
    at('2026-09-10T10:02:00.000Z'); // 60 s gap: counted whole
    await beat(w);
    at('2026-09-10T10:07:00.000Z'); // 300 s gap: only 120 s counted (10:02 → 10:04)
    await beat(w);
    at('2026-09-10T10:07:30.000Z');
    // So far: 10:00 → 10:04 (240 s) + 10:07 → now (30 s); the month defaults to the current one.
    const now = await usage(owner);
    expect(now.status).toBe(200);
    expect(now.body).toEqual({ month: '2026-09', workerHours: hours(270), activeMembers: 0, perWorker: [{ workerId: w.id, name: 'gappy', onlineHours: hours(270) }] });
    at('2026-09-10T12:00:00.000Z');
    // 240 s + 120 s after the last heartbeat = 360 s = 0.1 h.
    expect((await usage(owner, '2026-09')).body).toMatchObject({ workerHours: 0.1, perWorker: [{ workerId: w.id, onlineHours: 0.1 }] });
  });

  it('splits an online run at the month boundary', async () => {
    const owner = await createOrganization(t, 'Boundary');
    const w = await createWorker(owner, 'midnight');
    at('2026-09-30T23:59:00.000Z');
    await beat(w);
    at('2026-09-30T23:59:50.000Z');
    await beat(w);
    at('2026-10-01T01:00:00.000Z');
    // Online 23:59:00 → 00:01:50: 60 s in September, 110 s in October.
    expect((await usage(owner, '2026-09')).body).toMatchObject({ month: '2026-09', workerHours: hours(60), perWorker: [{ workerId: w.id, onlineHours: 0.016667 }] });
    expect((await usage(owner)).body).toMatchObject({ month: '2026-10', workerHours: hours(110), perWorker: [{ workerId: w.id, onlineHours: 0.030556 }] });
    expect((await usage(owner, '2026-11')).body).toEqual({ month: '2026-11', workerHours: 0, activeMembers: 0, perWorker: [] });
    expect((await usage(owner, '2026-08')).body.perWorker).toEqual([]);
  });

  it('ends a stopped worker’s time at the stop, sums two workers, and keeps a deleted worker’s hours', async () => {
    const owner = await createOrganization(t, 'Two');
    const a = await createWorker(owner, 'a');
    const b = await createWorker(owner, 'b');
    at('2026-10-05T08:00:00.000Z');
    await beat(a);
    await beat(b);
    at('2026-10-05T08:01:00.000Z');
    await beat(a);
    at('2026-10-05T08:01:30.000Z');
    expect((await t.http.post(`/v1/workers/${a.id}/stop`).set(...bearer(owner.token))).status).toBe(200); // a: 08:00 → 08:01:30 = 90 s
    at('2026-10-05T08:01:40.000Z');
    await beat(a, 409); // refused: nothing counted
    at('2026-10-05T08:02:00.000Z');
    await beat(b); // gap of exactly the stale window: counted whole
    at('2026-10-05T08:03:00.000Z');
    expect((await t.http.post(`/v1/workers/${a.id}/start`).set(...bearer(owner.token))).status).toBe(200);
    at('2026-10-05T08:03:10.000Z');
    await beat(a); // a: 08:03:10 → 08:05:10 = 120 s
    at('2026-10-05T09:00:00.000Z');
    // a = 90 + 120 = 210 s; b = 08:00 → 08:04 = 240 s; together 450 s = 0.125 h.
    const res = await usage(owner, '2026-10');
    expect(res.body).toEqual({
      month: '2026-10',
      workerHours: 0.125,
      activeMembers: 0,
      perWorker: [
        { workerId: a.id, name: 'a', onlineHours: hours(210) },
        { workerId: b.id, name: 'b', onlineHours: hours(240) },
      ],
    });
    expect((await t.http.delete(`/v1/workers/${b.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await usage(owner, '2026-10')).body).toMatchObject({ workerHours: 0.125, perWorker: [{ workerId: a.id }, { workerId: b.id, name: null, onlineHours: hours(240) }] });
  });

  it('counts the month’s active members as analytics does (distinct members with telemetry)', async () => {
    at('2026-10-20T12:00:00.000Z');
    const owner = await createOrganization(t, 'Active');
    const member = await addMember(t, owner.organizationId);
    await addMember(t, owner.organizationId); // never active
    const ingest = async (who: { token: string }, timestamp: string) => {
      const res = await t.http.post('/v1/telemetry/ingest').set(...bearer(who.token)).send({ events: [{ type: 'user.active', timestamp }] });
      expect(res.status).toBe(202);
    };
    await ingest(owner, '2026-10-20T11:00:00.000Z');
    await ingest(member, '2026-10-01T00:00:00.000Z');
    await ingest(member, '2026-10-20T11:30:00.000Z');
    await ingest(owner, '2026-09-30T23:59:59.000Z');
    expect((await usage(owner, '2026-10')).body.activeMembers).toBe(2);
    expect((await usage(owner, '2026-09')).body.activeMembers).toBe(1);
  });

  it('is for admins; a bad month is 400 naming it', async () => {
    const owner = await createOrganization(t, 'Rules');
    const member = await addMember(t, owner.organizationId);
    const denied = await usage(member, '2026-10');
    expect(denied.status).toBe(403);
    expect(denied.body.reason).toBe('org_admin_required');
    expect((await t.http.get('/v1/billing/usage')).status).toBe(401);
    for (const month of ['2026-13', '2026-1', '26-01', 'october', '2026-10-01', '2026-00']) {
      const res = await usage(owner, month);
      expect(res.status).toBe(400);
      expect(res.body.details[0].path).toEqual(['query', 'month']);
    }
  });

  it('shows one organization only: another organization’s workers never appear', async () => {
    at('2026-10-21T10:00:00.000Z');
    const mine = await createOrganization(t, 'Mine');
    const theirs = await createOrganization(t, 'Theirs');
    const w = await createWorker(theirs, 'theirs');
    await beat(w);
    at('2026-10-21T11:00:00.000Z');
    expect((await usage(mine)).body).toEqual({ month: '2026-10', workerHours: 0, activeMembers: 0, perWorker: [] });
    expect((await usage(theirs)).body.workerHours).toBe(hours(120));
  });
});

describe('GET /v1/billing', () => {
  it('answers the plan, its limits and features, current usage and the calendar month', async () => {
    at('2026-10-21T10:00:00.000Z');
    const owner = await createOrganization(t, 'Overview');
    await addMember(t, owner.organizationId);
    const w = await createWorker(owner, 'one');
    await t.http.post(`/v1/workers/${w.id}/stop`).set(...bearer(owner.token));
    // A service account is a member but takes no seat: it counts under serviceAccounts only.
    expect((await t.http.post('/v1/service-accounts').set(...bearer(owner.token)).send({ name: 'robot', role: 'member' })).status).toBe(201);
    const res = await t.http.get('/v1/billing').set(...bearer(owner.token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      plan: 'free',
      limits: { members: 5, workers: 2, llmProviders: 1, serviceAccounts: 2 },
      features: { analytics: false, sso: false, scim: false, auditLog: false },
      usage: { members: 2, workers: 1, llmProviders: 0, serviceAccounts: 1 },
      period: { start: '2026-10-01T00:00:00.000Z', end: '2026-11-01T00:00:00.000Z' },
    });
    await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
    expect((await t.http.get('/v1/billing').set(...bearer(owner.token))).body).toMatchObject({
      plan: 'enterprise',
      limits: { members: null, workers: null, llmProviders: null, serviceAccounts: null },
      features: { analytics: true, sso: true, scim: true, auditLog: true },
    });
    const member = await addMember(t, owner.organizationId);
    expect((await t.http.get('/v1/billing').set(...bearer(member.token))).status).toBe(403);
  });
});
