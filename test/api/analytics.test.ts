import { randomBytes } from 'node:crypto';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgMember, type OrgOwner } from '../support/factories';
import { ManualClock } from '../support/clock';
import { newId } from '../../src/lib/ids';

/**
 * A hand-built data set at exact ages around one "now" (Thursday 2026-11-19 15:00 UTC); every
 * expected figure below is counted by hand from the events listed here.
 */
const NOW = new Date('2026-11-19T15:00:00.000Z');
const H = 3_600_000;
const D = 24 * H;
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString();

let t: TestApp;
const clock = new ManualClock(NOW);
beforeAll(async () => {
  t = await createTestApp({ clock });
});
afterAll(() => t.close());

const analytics = (token: string, query = '') => t.http.get(`/v1/telemetry/analytics${query}`).set(...bearer(token));

async function ingest(who: { token: string }, events: Record<string, unknown>[]) {
  const res = await t.http.post('/v1/telemetry/ingest').set(...bearer(who.token)).send({ events });
  if (res.status !== 202) throw new Error(`ingest failed: ${res.status} ${JSON.stringify(res.body)}`);
}

async function setPlan(organizationId: string, plan: 'free' | 'team' | 'enterprise') {
  await t.db.updateTable('organizations').set({ plan }).where('id', '=', organizationId).execute();
}

async function invitation(organizationId: string, status: 'pending' | 'accepted' | 'cancelled', expiresAt: Date) {
  const email = `inv-${randomBytes(4).toString('hex')}@example.test`;
  await t.db
    .insertInto('invitations')
    .values({
      id: newId('invitation'),
      organization_id: organizationId,
      email,
      email_normalized: email,
      role: 'member',
      token_hash: randomBytes(16).toString('hex'),
      status,
      invited_by_member_id: null,
      created_at: NOW,
      expires_at: expiresAt,
      accepted_at: null,
      cancelled_at: null,
    })
    .execute();
}

const weeks = ['2026-08-31', '2026-09-07', '2026-09-14', '2026-09-21', '2026-09-28', '2026-10-05', '2026-10-12', '2026-10-19', '2026-10-26', '2026-11-02', '2026-11-09', '2026-11-16'];
const zeroWeeks = () => weeks.map((w) => ({ weekStart: `${w}T00:00:00.000Z`, activeMembers: 0, sessions: 0, tasksCompleted: 0, tasksFailed: 0 }));
const withWeeks = (changes: Record<number, [number, number, number, number]>) =>
  zeroWeeks().map((w, i) => (changes[i] ? { ...w, activeMembers: changes[i]![0], sessions: changes[i]![1], tasksCompleted: changes[i]![2], tasksFailed: changes[i]![3] } : w));

describe('GET /v1/telemetry/analytics', () => {
  let owner: OrgOwner;
  let a: OrgMember, b: OrgMember, c: OrgMember, d: OrgMember;

  beforeAll(async () => {
    owner = await createOrganization(t, 'Analytics Co');
    await setPlan(owner.organizationId, 'enterprise');
    [a, b, c, d] = [await addMember(t, owner.organizationId), await addMember(t, owner.organizationId), await addMember(t, owner.organizationId), await addMember(t, owner.organizationId)];
    const removed = await addMember(t, owner.organizationId);
    await t.db.updateTable('members').set({ removed_at: NOW }).where('id', '=', removed.memberId).execute();
    await invitation(owner.organizationId, 'pending', new Date(NOW.getTime() + D));
    await invitation(owner.organizationId, 'pending', new Date(NOW.getTime() - 1));
    await invitation(owner.organizationId, 'accepted', new Date(NOW.getTime() + D));
    await invitation(owner.organizationId, 'cancelled', new Date(NOW.getTime() + D));

    const red = [{ type: 'team', value: 'red', label: 'Red' }];
    await ingest(a, [
      { type: 'session.started', timestamp: ago(6 * D + 23 * H), sessionId: 's1', dimensions: red }, // a1: 7d (partial first day)
      { type: 'task.completed', timestamp: ago(6 * D + 23 * H), sessionId: 's1', durationMs: 1000 }, // a2
      { type: 'task.failed', timestamp: ago(6 * D + 22 * H), sessionId: 's1' }, // a3
      { type: 'task.completed', timestamp: ago(7 * D + H), sessionId: 's2', durationMs: 3000 }, // a4: 30d only
      { type: 'user.active', timestamp: ago(H) }, // a5: today
    ]);
    await ingest(b, [
      { type: 'task.completed', timestamp: ago(2 * D), sessionId: 's3', durationMs: 2500, dimensions: [{ type: 'team', value: 'blue' }] }, // b1
      { type: 'task.completed', timestamp: ago(2 * D - 30 * 60_000), sessionId: 's3' }, // b2: no duration
      { type: 'session.active', timestamp: ago(29 * D + 23 * H), sessionId: 's1' }, // b3: 30d, tagged red through a1
      { type: 'task.failed', timestamp: ago(30 * D + H), sessionId: 's4' }, // b4: outside 30d
    ]);
    await ingest(c, [
      { type: 'task.completed', timestamp: ago(40 * D), sessionId: 's5', durationMs: 5000, dimensions: red }, // c1: outside 30d
      { type: 'user.active', timestamp: ago(90 * D) }, // c2: before the 12 weeks
    ]);
    await ingest(d, [
      { type: 'session.started', timestamp: ago(20 * D), sessionId: 's6' }, // d1
      { type: 'user.active', timestamp: '2026-11-16T00:00:00.000Z' }, // d2: first instant of this week
      { type: 'user.active', timestamp: '2026-11-15T23:59:59.999Z' }, // d3: last instant of last week
    ]);
    await ingest(owner, [{ type: 'task.completed', timestamp: new Date(NOW.getTime() + 2 * H).toISOString(), sessionId: 's7', durationMs: 9 }]); // future
  });

  it('computes every figure from the data set', async () => {
    const res = await analytics(owner.token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      members: 5, // owner, a, b, c, d (the removed member is not counted)
      pendingInvites: 1, // pending and unexpired only
      activeMembers7d: 3, // a (a1-a3, a5), b (b1, b2), d (d2, d3)
      activeMembers30d: 3, // + a4, b3, d1: still a, b, d; c only outside
      sessions7d: 2, // s1, s3
      sessions30d: 4, // s1, s2, s3, s6
      tasksCompleted7d: 3, // a2, b1, b2
      tasksFailed7d: 1, // a3
      tasksCompleted30d: 4, // + a4
      tasksFailed30d: 1, // b4 is 30 d 1 h old
      avgTaskDurationMs30d: 2167, // (1000 + 3000 + 2500) / 3, rounded
      weekly: withWeeks({
        5: [1, 1, 1, 0], // c1
        7: [1, 2, 0, 1], // b3, b4
        8: [1, 1, 0, 0], // d1
        10: [2, 2, 2, 1], // a1-a4, d3
        11: [3, 1, 2, 0], // a5, b1, b2, d2 (the future event is not counted)
      }),
    });
  });

  it('restricts active-member, session and task figures to sessions tagged with a dimension', async () => {
    const red = await analytics(owner.token, '?dimensionType=team&dimensionValue=red');
    expect(red.status).toBe(200);
    expect(red.body).toEqual({
      members: 5,
      pendingInvites: 1,
      activeMembers7d: 1, // a in s1
      activeMembers30d: 2, // a, and b through b3 in s1
      sessions7d: 1,
      sessions30d: 1,
      tasksCompleted7d: 1,
      tasksFailed7d: 1,
      tasksCompleted30d: 1,
      tasksFailed30d: 1,
      avgTaskDurationMs30d: 1000,
      weekly: withWeeks({ 5: [1, 1, 1, 0], 7: [1, 1, 0, 0], 10: [1, 1, 1, 1] }),
    });
    const blue = await analytics(owner.token, '?dimensionType=team&dimensionValue=blue');
    expect(blue.body).toMatchObject({ activeMembers7d: 1, activeMembers30d: 1, sessions7d: 1, sessions30d: 1, tasksCompleted7d: 2, tasksFailed7d: 0, tasksCompleted30d: 2, avgTaskDurationMs30d: 2500 });
    expect(blue.body.weekly[11]).toEqual({ weekStart: '2026-11-16T00:00:00.000Z', activeMembers: 1, sessions: 1, tasksCompleted: 2, tasksFailed: 0 });
    const none = await analytics(owner.token, '?dimensionType=team&dimensionValue=green');
    expect(none.body).toEqual({
      members: 5, pendingInvites: 1, activeMembers7d: 0, activeMembers30d: 0, sessions7d: 0, sessions30d: 0,
      tasksCompleted7d: 0, tasksFailed7d: 0, tasksCompleted30d: 0, tasksFailed30d: 0, avgTaskDurationMs30d: 0, weekly: zeroWeeks(),
    });
  });

  it('moves with the clock: an hour later the 6 d 23 h events have left the 7-day window', async () => {
    clock.set(new Date(NOW.getTime() + 1 * H + 1));
    try {
      const res = await analytics(owner.token);
      // a1 and a2 (6 d 23 h) are out; a3 (6 d 22 h) keeps s1 and a in.
      expect(res.body).toMatchObject({ activeMembers7d: 3, sessions7d: 2, tasksCompleted7d: 2, tasksFailed7d: 1 });
      clock.set(new Date(NOW.getTime() + 2 * H + 1));
      const later = await analytics(owner.token);
      // a3 is gone too; the owner's event is now in the past.
      expect(later.body).toMatchObject({ activeMembers7d: 4, sessions7d: 2, tasksCompleted7d: 3, tasksFailed7d: 0 });
      expect(later.body.weekly[11]).toEqual({ weekStart: '2026-11-16T00:00:00.000Z', activeMembers: 4, sessions: 2, tasksCompleted: 3, tasksFailed: 0 });
    } finally {
      clock.set(NOW);
    }
  });

  it('counts today both from raw events and, after midnight, from the rollup the same way', async () => {
    // Next Monday 00:30: the current week has changed; last week's figures now come from the rollup.
    clock.set(new Date('2026-11-23T00:30:00.000Z'));
    try {
      const res = await analytics(owner.token);
      expect(res.body.weekly).toHaveLength(12);
      expect(res.body.weekly[0].weekStart).toBe('2026-09-07T00:00:00.000Z');
      expect(res.body.weekly[11]).toEqual({ weekStart: '2026-11-23T00:00:00.000Z', activeMembers: 0, sessions: 0, tasksCompleted: 0, tasksFailed: 0 });
      expect(res.body.weekly[10]).toEqual({ weekStart: '2026-11-16T00:00:00.000Z', activeMembers: 4, sessions: 2, tasksCompleted: 3, tasksFailed: 0 });
    } finally {
      clock.set(NOW);
    }
  });

  it('shows another organization only its own figures', async () => {
    const other = await createOrganization(t, 'Other');
    await setPlan(other.organizationId, 'enterprise');
    const res = await analytics(other.token);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ members: 1, pendingInvites: 0, activeMembers30d: 0, sessions30d: 0, tasksCompleted30d: 0 });
  });

  it('needs an admin (403) and a plan with the analytics feature (402)', async () => {
    const member = await analytics(a.token);
    expect(member.status).toBe(403);
    expect(member.body).toEqual({ error: 'forbidden', reason: 'org_admin_required', message: expect.any(String) });
    const admin = await addMember(t, owner.organizationId, 'admin');
    expect((await analytics(admin.token)).status).toBe(200);

    const free = await createOrganization(t, 'Free');
    const res = await analytics(free.token);
    expect(res.status).toBe(402);
    expect(res.body).toEqual({ error: 'enterprise_plan_required', feature: 'analytics', message: expect.any(String) });
    // docs/workers-and-usage.md#plans-limits-and-usage: the team plan has the analytics feature (wave 1 asked for enterprise).
    await setPlan(free.organizationId, 'team');
    expect((await analytics(free.token)).status).toBe(200);
    // The feature is read from the plans table: taking it out of team refuses again.
    await t.db.updateTable('plans').set({ features: JSON.stringify({ analytics: false }) }).where('key', '=', 'team').execute();
    try {
      expect((await analytics(free.token)).status).toBe(402);
    } finally {
      await t.db.updateTable('plans').set({ features: JSON.stringify({ analytics: true, sso: false, scim: false, auditLog: false }) }).where('key', '=', 'team').execute();
    }
  });

  it('answers 401 without credentials and 400 for dimension parameters that do not go together', async () => {
    expect((await t.http.get('/v1/telemetry/analytics')).status).toBe(401);
    const onlyType = await analytics(owner.token, '?dimensionType=team');
    expect(onlyType.status).toBe(400);
    expect(onlyType.body.details).toEqual([{ message: expect.any(String), path: ['query', 'dimensionValue'] }]);
    const onlyValue = await analytics(owner.token, '?dimensionValue=red');
    expect(onlyValue.body.details).toEqual([{ message: expect.any(String), path: ['query', 'dimensionType'] }]);
    const long = await analytics(owner.token, `?dimensionType=${'t'.repeat(65)}&dimensionValue=red`);
    expect(long.status).toBe(400);
    expect(long.body.details[0].path).toEqual(['query', 'dimensionType']);
    const empty = await analytics(owner.token, '?dimensionType=team&dimensionValue=');
    expect(empty.status).toBe(400);
    expect(empty.body.details[0].path).toEqual(['query', 'dimensionValue']);
  });
});

describe('plan gating off', () => {
  it('serves analytics to a free organization', async () => {
    const owner = await createOrganization(t, 'Free');
    expect((await analytics(owner.token)).status).toBe(402);
    // The app reads its settings object on each request.
    t.settings.planGating = false;
    try {
      const res = await analytics(owner.token);
      expect(res.status).toBe(200);
      expect(res.body.members).toBe(1);
    } finally {
      t.settings.planGating = true;
    }
  });
});
