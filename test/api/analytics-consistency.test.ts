import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgMember, type OrgOwner } from '../support/factories';
import { ManualClock } from '../support/clock';

/**
 * Analytics reads rollups for whole days and past weeks and raw events only at the edges. This
 * checks that shortcut against the definitions computed naively from the raw events, on
 * pseudo-random events ingested through the API (out of order, across midnights and week
 * boundaries), at several clock positions and with a dimension filter.
 */
const H = 3_600_000;
const D = 24 * H;
const NOW = new Date('2026-11-19T15:00:00.000Z');
const clock = new ManualClock(NOW);
let t: TestApp;
let owner: OrgOwner;
let members: (OrgOwner | OrgMember)[];

function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

const TYPES = ['user.active', 'session.active', 'session.started', 'session.ended', 'task.started', 'task.completed', 'task.failed'];

beforeAll(async () => {
  t = await createTestApp({ clock });
  owner = await createOrganization(t, 'Consistency');
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  members = [owner, await addMember(t, owner.organizationId), await addMember(t, owner.organizationId), await addMember(t, owner.organizationId)];
  const next = random(42);
  for (let batch = 0; batch < 12; batch++) {
    const events = Array.from({ length: 50 }, () => {
      const session = Math.floor(next() * 40);
      const type = TYPES[Math.floor(next() * TYPES.length)]!;
      // Up to 95 days back and up to 20 hours ahead of now.
      const at = new Date(NOW.getTime() - Math.floor(next() * 95 * D) + 20 * H);
      return {
        type,
        timestamp: at.toISOString(),
        ...(next() < 0.85 ? { sessionId: `s${session}` } : {}),
        ...(type === 'task.completed' && next() < 0.8 ? { durationMs: Math.floor(next() * 100_000) } : {}),
        ...(next() < 0.1 ? { dimensions: [{ type: 'team', value: session % 2 === 0 ? 'even' : 'odd' }] } : {}),
      };
    });
    const who = members[batch % members.length]!;
    const res = await t.http.post('/v1/telemetry/ingest').set(...bearer(who.token)).send({ events });
    expect(res.status).toBe(202);
  }
});
afterAll(() => t.close());

/** The definitions of the UsageAnalytics schema, straight from the raw events. */
async function naive(now: Date, dimension: { type: string; value: string } | null) {
  const tagged = dimension
    ? sql`AND session_id IN (SELECT session_id FROM telemetry_session_dimensions WHERE organization_id = ${owner.organizationId} AND type = ${dimension.type} AND value = ${dimension.value})`
    : sql``;
  const figures = async (from: Date, to: Date, toInclusive: boolean) => {
    const upper = toInclusive ? sql`occurred_at <= ${to}` : sql`occurred_at < ${to}`;
    const lower = sql`occurred_at >= ${from}`;
    const { rows } = await sql<{ m: string; s: string; c: string; f: string; sum: string | null; n: string }>`
      SELECT count(DISTINCT member_id) AS m, count(DISTINCT session_id) AS s,
             count(*) FILTER (WHERE type = 'task.completed') AS c, count(*) FILTER (WHERE type = 'task.failed') AS f,
             sum(duration_ms) FILTER (WHERE type = 'task.completed') AS sum,
             count(duration_ms) FILTER (WHERE type = 'task.completed') AS n
      FROM telemetry_events WHERE organization_id = ${owner.organizationId} AND ${lower} AND ${upper} ${tagged}`.execute(t.db);
    const r = rows[0]!;
    return { m: Number(r.m), s: Number(r.s), c: Number(r.c), f: Number(r.f), sum: Number(r.sum ?? 0), n: Number(r.n) };
  };
  // Rolling windows exclude their start instant: (now − 7 d, now].
  const w7 = await figures(new Date(now.getTime() - 7 * D + 1), now, true);
  const w30 = await figures(new Date(now.getTime() - 30 * D + 1), now, true);
  const day = new Date(Math.floor(now.getTime() / D) * D);
  const monday = new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * D);
  const weekly = [];
  for (let i = 11; i >= 0; i--) {
    const start = new Date(monday.getTime() - i * 7 * D);
    const w = i === 0 ? await figures(start, now, true) : await figures(start, new Date(start.getTime() + 7 * D), false);
    weekly.push({ weekStart: start.toISOString(), activeMembers: w.m, sessions: w.s, tasksCompleted: w.c, tasksFailed: w.f });
  }
  return {
    activeMembers7d: w7.m,
    activeMembers30d: w30.m,
    sessions7d: w7.s,
    sessions30d: w30.s,
    tasksCompleted7d: w7.c,
    tasksFailed7d: w7.f,
    tasksCompleted30d: w30.c,
    tasksFailed30d: w30.f,
    avgTaskDurationMs30d: w30.n > 0 ? Math.round(w30.sum / w30.n) : 0,
    weekly,
  };
}

const positions = [
  NOW,
  new Date('2026-11-20T00:00:00.000Z'), // midnight, a Friday
  new Date('2026-11-23T00:00:00.000Z'), // Monday midnight: a new week
  new Date('2026-11-23T23:59:59.999Z'),
  new Date('2026-11-29T07:13:00.000Z'),
];

describe('analytics agree with the definitions computed from raw events', () => {
  it.each(positions.map((p) => [p.toISOString(), p] as const))('at %s', async (_label, now) => {
    clock.set(now);
    try {
      for (const dimension of [null, { type: 'team', value: 'even' }, { type: 'team', value: 'odd' }]) {
        const query = dimension ? `?dimensionType=${dimension.type}&dimensionValue=${dimension.value}` : '';
        const res = await t.http.get(`/v1/telemetry/analytics${query}`).set(...bearer(owner.token));
        expect(res.status).toBe(200);
        const { members: _m, pendingInvites: _p, ...figures } = res.body;
        expect(figures).toEqual(await naive(now, dimension));
        if (!dimension) expect(figures.sessions30d * figures.tasksCompleted30d * figures.weekly[5].sessions).toBeGreaterThan(0);
      }
    } finally {
      clock.set(NOW);
    }
  });
});

describe('a dimension applied after a session’s first events', () => {
  it('counts the session’s earlier events under the new tag (and a second tag on a tagged session)', async () => {
    const [first, second] = [members[1]!, members[2]!];
    const at = (hoursAgo: number) => new Date(NOW.getTime() - hoursAgo * H).toISOString();
    const untagged = [
      { type: 'session.started', timestamp: at(50), sessionId: 'late' },
      { type: 'task.completed', timestamp: at(49), sessionId: 'late', durationMs: 1000 },
      { type: 'task.failed', timestamp: at(24 * 20), sessionId: 'late' },
    ];
    expect((await t.http.post('/v1/telemetry/ingest').set(...bearer(first.token)).send({ events: untagged })).status).toBe(202);
    const tagged = [{ type: 'task.completed', timestamp: at(2), sessionId: 'late', durationMs: 3000, dimensions: [{ type: 'team', value: 'late' }] }];
    expect((await t.http.post('/v1/telemetry/ingest').set(...bearer(second.token)).send({ events: tagged })).status).toBe(202);
    const again = [{ type: 'task.completed', timestamp: at(1), sessionId: 'late', dimensions: [{ type: 'project', value: 'p' }] }];
    expect((await t.http.post('/v1/telemetry/ingest').set(...bearer(first.token)).send({ events: again })).status).toBe(202);

    for (const dimension of [{ type: 'team', value: 'late' }, { type: 'project', value: 'p' }]) {
      const res = await t.http.get(`/v1/telemetry/analytics?dimensionType=${dimension.type}&dimensionValue=${dimension.value}`).set(...bearer(owner.token));
      expect(res.status).toBe(200);
      const { members: _m, pendingInvites: _p, ...figures } = res.body;
      expect(figures).toEqual(await naive(NOW, dimension));
      expect(figures).toMatchObject({ activeMembers30d: 2, sessions30d: 1, tasksCompleted30d: 3, tasksFailed30d: 1 });
    }
  });
});

describe('the edges of the windows inside partial hours', () => {
  it('counts sessions with several events in a partial hour once, and events at the window start, at 5-minute boundaries and at now as defined', async () => {
    const T = new Date('2026-11-19T15:37:00.000Z');
    const at = (ms: number) => new Date(T.getTime() + ms).toISOString();
    const M = 60_000;
    const edgeTag = { dimensions: [{ type: 'team', value: 'edge' }] };
    const batches = [
      // The current hour: three events of one session, one of them at now, one of a session seen before.
      [
        { type: 'task.completed', timestamp: at(-32 * M), sessionId: 'cur', durationMs: 100, ...edgeTag },
        { type: 'task.failed', timestamp: at(-27 * M), sessionId: 'cur' },
        { type: 'task.completed', timestamp: at(0), sessionId: 'cur', durationMs: 300 },
        // On the boundary of the current 5-minute bucket (15:35): read raw, not from the rollup.
        { type: 'task.completed', timestamp: at(-2 * M), sessionId: 'cur', durationMs: 50 },
        { type: 'user.active', timestamp: at(-M), sessionId: 'w7' },
      ],
      // The 7-day window's start: one event at the start instant (outside), two in the rest of its hour, one before.
      [
        { type: 'task.completed', timestamp: at(-7 * D), sessionId: 'w7', durationMs: 1 },
        { type: 'task.completed', timestamp: at(-7 * D + 1), sessionId: 'w7', durationMs: 10, ...edgeTag },
        { type: 'task.failed', timestamp: at(-7 * D + 20 * M), sessionId: 'w7' },
        // The first whole 5-minute bucket after the start (15:40), read from the rollup.
        { type: 'task.completed', timestamp: at(-7 * D + 3 * M), sessionId: 'w7b', durationMs: 30 },
        { type: 'task.completed', timestamp: at(-7 * D - 5 * M), sessionId: 'before7', durationMs: 5 },
      ],
      // The 30-day window's start, the same way, and the rest of that day's hours.
      [
        { type: 'task.completed', timestamp: at(-30 * D + 2 * M), sessionId: 'w30', durationMs: 20, ...edgeTag },
        { type: 'task.completed', timestamp: at(-30 * D + 22 * M), sessionId: 'w30', durationMs: 40 },
        { type: 'task.failed', timestamp: at(-30 * D + 3 * H), sessionId: 'w30' },
        { type: 'task.completed', timestamp: at(-30 * D - M), sessionId: 'before30', durationMs: 7, ...edgeTag },
      ],
    ];
    for (const [i, events] of batches.entries()) {
      const who = members[i % members.length]!;
      expect((await t.http.post('/v1/telemetry/ingest').set(...bearer(who.token)).send({ events })).status).toBe(202);
    }
    for (const now of [T, new Date(T.getTime() + 23 * M), new Date(T.getTime() + 30 * 1000)]) {
      clock.set(now);
      try {
        for (const dimension of [null, { type: 'team', value: 'edge' }]) {
          const query = dimension ? `?dimensionType=${dimension.type}&dimensionValue=${dimension.value}` : '';
          const res = await t.http.get(`/v1/telemetry/analytics${query}`).set(...bearer(owner.token));
          expect(res.status).toBe(200);
          const { members: _m, pendingInvites: _p, ...figures } = res.body;
          expect(figures).toEqual(await naive(now, dimension));
        }
      } finally {
        clock.set(NOW);
      }
    }
  });
});
