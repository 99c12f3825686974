import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';
import { ManualClock } from '../support/clock';
import { newId } from '../../src/lib/ids';
import { randomSecret, sha256Hex } from '../../src/lib/crypto';

let t: TestApp;
const NOW = new Date('2026-11-19T15:00:00.000Z');
const clock = new ManualClock(NOW);
beforeAll(async () => {
  t = await createTestApp({ clock });
});
afterAll(() => t.close());

const ingest = (token: string, events: unknown[]) => t.http.post('/v1/telemetry/ingest').set(...bearer(token)).send({ events });
const event = (over: Record<string, unknown> = {}) => ({ type: 'task.completed', timestamp: '2026-11-19T14:00:00.000Z', ...over });

async function storedEvents(organizationId: string) {
  return t.db
    .selectFrom('telemetry_events')
    .select(['organization_id', 'member_id', 'type', 'occurred_at', 'received_at', 'session_id', 'duration_ms', 'success', 'dimensions'])
    .where('organization_id', '=', organizationId)
    .orderBy('occurred_at')
    .execute();
}

describe('POST /v1/telemetry/ingest', () => {
  it('stores every event for the caller’s organization and member, with the rollups, summaries and session tags', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const res = await ingest(member.token, [
      event({ type: 'session.started', timestamp: '2026-11-19T10:00:00.000Z', sessionId: 's-1', dimensions: [{ type: 'team', value: 'red', label: 'Red team' }] }),
      event({ timestamp: '2026-11-19T11:00:00.000Z', sessionId: 's-1', durationMs: 1200, success: true }),
      event({ type: 'task.failed', timestamp: '2026-11-18T23:59:59.999Z', sessionId: 's-1', success: false }),
      event({ type: 'user.active', timestamp: '2026-11-19T12:00:00.000Z' }),
    ]);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ ok: true, accepted: 4 });

    const rows = await storedEvents(owner.organizationId);
    expect(rows).toHaveLength(4);
    expect(rows.every((r) => r.member_id === member.memberId && r.received_at.toISOString() === NOW.toISOString())).toBe(true);
    expect(rows.map((r) => [r.type, r.occurred_at.toISOString(), r.session_id, r.duration_ms, r.success])).toEqual([
      ['task.failed', '2026-11-18T23:59:59.999Z', 's-1', null, false],
      ['session.started', '2026-11-19T10:00:00.000Z', 's-1', null, null],
      ['task.completed', '2026-11-19T11:00:00.000Z', 's-1', 1200, true],
      ['user.active', '2026-11-19T12:00:00.000Z', null, null, null],
    ]);
    expect(rows[1]!.dimensions).toEqual([{ type: 'team', value: 'red', label: 'Red team' }]);

    const tags = await t.db.selectFrom('telemetry_session_dimensions').select(['type', 'value', 'session_id']).where('organization_id', '=', owner.organizationId).execute();
    expect(tags).toEqual([{ type: 'team', value: 'red', session_id: 's-1' }]);
    const hourly = await t.db
      .selectFrom('telemetry_hourly_sessions')
      .select(['hour', 'member_id', 'session_key', 'events', 'tasks_completed', 'tasks_failed', 'completed_duration_sum', 'completed_duration_count'])
      .where('organization_id', '=', owner.organizationId)
      .orderBy('hour')
      .orderBy('session_key')
      .execute();
    const normalized = hourly.map((d) => ({ ...d, hour: d.hour.toISOString(), completed_duration_sum: Number(d.completed_duration_sum) }));
    const row = (hour: string, session_key: string, counts: number[]) => ({
      hour, member_id: member.memberId, session_key, events: counts[0], tasks_completed: counts[1], tasks_failed: counts[2], completed_duration_sum: counts[3], completed_duration_count: counts[4],
    });
    expect(normalized).toEqual([
      row('2026-11-18T23:00:00.000Z', 's-1', [1, 0, 1, 0, 0]),
      row('2026-11-19T10:00:00.000Z', 's-1', [1, 0, 0, 0, 0]),
      row('2026-11-19T11:00:00.000Z', 's-1', [1, 1, 0, 1200, 1]),
      row('2026-11-19T12:00:00.000Z', '', [1, 0, 0, 0, 0]),
    ]);
    const weeklyCounts = () =>
      t.db
        .selectFrom('telemetry_weekly_counts')
        .select([sql<string>`week::text`.as('week'), sql<number>`sum(active_members)::int`.as('active_members'), sql<number>`sum(sessions)::int`.as('sessions')])
        .where('organization_id', '=', owner.organizationId)
        .groupBy('week')
        .execute();
    expect(await weeklyCounts()).toEqual([{ week: '2026-11-16', active_members: 1, sessions: 1 }]);
    const dailyTotals = () =>
      t.db
        .selectFrom('telemetry_daily_totals')
        .select([sql<string>`day::text`.as('day'), sql<number>`sum(tasks_completed)::int`.as('completed'), sql<number>`sum(tasks_failed)::int`.as('failed'), sql<number>`sum(completed_duration_sum)::int`.as('dur')])
        .where('organization_id', '=', owner.organizationId)
        .groupBy('day')
        .orderBy('day')
        .execute();
    expect(await dailyTotals()).toEqual([
      { day: '2026-11-18', completed: 0, failed: 1, dur: 0 },
      { day: '2026-11-19', completed: 1, failed: 0, dur: 1200 },
    ]);
    const members = await t.db.selectFrom('telemetry_daily_members').select([sql<string>`day::text`.as('day'), 'member_id']).where('organization_id', '=', owner.organizationId).orderBy('day').execute();
    expect(members).toEqual([{ day: '2026-11-18', member_id: member.memberId }, { day: '2026-11-19', member_id: member.memberId }]);
    const sessions = await t.db.selectFrom('telemetry_sessions').select(['session_id', 'last_hour']).where('organization_id', '=', owner.organizationId).execute();
    expect(sessions.map((s) => [s.session_id, s.last_hour.toISOString()])).toEqual([['s-1', '2026-11-19T11:00:00.000Z']]);

    // A second batch adds to the same rollup row.
    expect((await ingest(member.token, [event({ timestamp: '2026-11-19T11:59:59.999Z', sessionId: 's-1', durationMs: 800 })])).status).toBe(202);
    const again = await t.db
      .selectFrom('telemetry_hourly_sessions')
      .select(['events', 'tasks_completed', 'completed_duration_sum', 'completed_duration_count'])
      .where('organization_id', '=', owner.organizationId)
      .where('session_key', '=', 's-1')
      .where('hour', '=', new Date('2026-11-19T11:00:00.000Z'))
      .executeTakeFirstOrThrow();
    expect({ ...again, completed_duration_sum: Number(again.completed_duration_sum) }).toEqual({ events: 2, tasks_completed: 2, completed_duration_sum: 2000, completed_duration_count: 2 });
    expect(await weeklyCounts()).toEqual([{ week: '2026-11-16', active_members: 1, sessions: 1 }]);
    expect((await dailyTotals())[1]).toEqual({ day: '2026-11-19', completed: 2, failed: 0, dur: 2000 });
  });

  it('accepts 50 events and refuses 51 or none', async () => {
    const owner = await createOrganization(t);
    const fifty = Array.from({ length: 50 }, (_, i) => event({ sessionId: `s-${i % 7}`, durationMs: i }));
    expect((await ingest(owner.token, fifty)).body).toEqual({ ok: true, accepted: 50 });
    const tooMany = await ingest(owner.token, [...fifty, event()]);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.details[0].path).toEqual(['body', 'events']);
    expect((await ingest(owner.token, [])).status).toBe(400);
    expect(await storedEvents(owner.organizationId)).toHaveLength(50);
  });

  it('refuses a bad event naming its index and field, and stores nothing of the batch', async () => {
    const owner = await createOrganization(t);
    const cases: [Record<string, unknown>, string[]][] = [
      [{ type: 'task.exploded' }, ['type']],
      [{ timestamp: 'yesterday' }, ['timestamp']],
      [{ timestamp: '2026-11-20T15:00:00.001Z' }, ['timestamp']], // more than 24 h ahead
      [{ timestamp: '1999-12-31T23:59:59.000Z' }, ['timestamp']],
      [{ sessionId: 'x'.repeat(129) }, ['sessionId']],
      [{ sessionId: '' }, ['sessionId']],
      [{ durationMs: 86_400_001 }, ['durationMs']],
      [{ durationMs: -1 }, ['durationMs']],
      [{ durationMs: 1.5 }, ['durationMs']],
      [{ success: 'yes' }, ['success']],
      [{ organizationId: owner.organizationId }, ['organizationId']],
      [{ memberId: owner.memberId }, ['memberId']],
      [{ dimensions: Array.from({ length: 9 }, () => ({ type: 't', value: 'v' })) }, ['dimensions']],
      [{ dimensions: [{ type: '', value: 'v' }] }, ['dimensions', '0', 'type']],
      [{ dimensions: [{ type: 't', value: 'v'.repeat(129) }] }, ['dimensions', '0', 'value']],
      [{ dimensions: [{ type: 't', value: 'v', label: 'l'.repeat(256) }] }, ['dimensions', '0', 'label']],
      [{ dimensions: [{ type: 't' }] }, ['dimensions', '0', 'value']],
    ];
    for (const [bad, field] of cases) {
      const res = await ingest(owner.token, [event(), event(), event(), { ...event(), ...bad }]);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
      expect(res.body.details).toContainEqual(expect.objectContaining({ path: ['body', 'events', '3', ...field] }));
    }
    const missingType = await ingest(owner.token, [{ timestamp: '2026-11-19T14:00:00.000Z' }]);
    expect(missingType.body.details).toContainEqual({ message: 'is required', path: ['body', 'events', '0', 'type'] });
    const extraTop = await t.http.post('/v1/telemetry/ingest').set(...bearer(owner.token)).send({ events: [event()], organizationId: 'org_x' });
    expect(extraTop.body.details).toContainEqual({ message: 'is not allowed', path: ['body', 'organizationId'] });
    expect(await storedEvents(owner.organizationId)).toHaveLength(0);
  });

  it('fails the whole batch when the database refuses one event', async () => {
    const owner = await createOrganization(t);
    // Postgres text cannot hold NUL: the validator lets it through, the INSERT fails.
    const res = await ingest(owner.token, [event({ sessionId: 'ok' }), event({ sessionId: 'bad\u0000id' })]);
    expect(res.status).toBe(400);
    expect(await storedEvents(owner.organizationId)).toHaveLength(0);
    const rollup = await t.db.selectFrom('telemetry_hourly_sessions').select('session_key').where('organization_id', '=', owner.organizationId).execute();
    expect(rollup).toEqual([]);
  });

  it('takes organization and member from an API key too', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const key = randomSecret('cpk');
    await t.db
      .insertInto('api_keys')
      .values({ id: newId('apiKey'), organization_id: owner.organizationId, member_id: member.memberId, name: 'k', prefix: key.slice(0, 12), key_hash: sha256Hex(key), created_at: NOW, expires_at: null, last_used_at: null, revoked_at: null })
      .execute();
    const res = await t.http.post('/v1/telemetry/ingest').set('x-api-key', key).send({ events: [event()] });
    expect(res.status).toBe(202);
    const rows = await storedEvents(owner.organizationId);
    expect(rows.map((r) => r.member_id)).toEqual([member.memberId]);
  });

  it('answers 401 without credentials and 404 without an active organization', async () => {
    const res = await t.http.post('/v1/telemetry/ingest').send({ events: [event()] });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('unauthorized');
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    await t.db.updateTable('members').set({ removed_at: NOW }).where('id', '=', member.memberId).execute();
    const removed = await ingest(member.token, [event()]);
    expect(removed.status).toBe(404);
    expect(removed.body.error).toBe('organization_not_found');
  });
});
