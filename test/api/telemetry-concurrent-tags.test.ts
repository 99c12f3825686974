import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { testDbKind } from '../support/env';
import { addMember, bearer, createOrganization } from '../support/factories';
import { ManualClock } from '../support/clock';

/**
 * Two batches of one session at once, one bringing a new tag and the other more events (on whole
 * days, so read from the summaries): the tag's figures count both. The interleaving is forced: a third transaction holds an uncommitted
 * daily-member row the tagging batch will insert, so that batch stops (tag written, not committed)
 * until the other batch has started too. Server Postgres only: the embedded database runs one
 * statement at a time, so its batches cannot interleave.
 */
const H = 3_600_000;
const NOW = new Date('2026-11-19T15:00:00.000Z');
const run = testDbKind() === 'pg' ? it : it.skip;
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ clock: new ManualClock(NOW) });
});
afterAll(() => t.close());

/** Waits until `n` lock requests of this database are waiting. */
async function waiting(n: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_locks
      WHERE NOT granted AND pid IN (SELECT pid FROM pg_stat_activity WHERE datname = current_database())`.execute(t.db);
    if (rows[0]!.n >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`fewer than ${n} lock waits`);
}

run('a batch tagging a session and a concurrent batch of its events are both in the tag’s figures', async () => {
  const owner = await createOrganization(t, 'Concurrent tags');
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  const other = await addMember(t, owner.organizationId);
  const at = (hoursAgo: number) => new Date(NOW.getTime() - hoursAgo * H).toISOString();
  const tagging = [{ type: 'task.completed', timestamp: at(5 * 24), sessionId: 's', durationMs: 1000, dimensions: [{ type: 'team', value: 'red' }] }];
  const more = [{ type: 'task.completed', timestamp: at(3 * 24), sessionId: 's', durationMs: 3000 }];

  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let holding!: () => void;
  const held = new Promise<void>((resolve) => (holding = resolve));
  const blocker = t.db
    .transaction()
    .execute(async (trx) => {
      await trx.insertInto('telemetry_daily_members').values({ organization_id: owner.organizationId, day: at(5 * 24).slice(0, 10), member_id: owner.memberId }).execute();
      holding();
      await gate;
      throw new Error('roll back');
    })
    .catch(() => undefined);
  await held;

  const first = t.http.post('/v1/telemetry/ingest').set(...bearer(owner.token)).send({ events: tagging }).then((r) => r);
  await waiting(1);
  const second = t.http.post('/v1/telemetry/ingest').set(...bearer(other.token)).send({ events: more }).then((r) => r);
  await waiting(2);
  release();
  await blocker;
  expect((await first).status).toBe(202);
  expect((await second).status).toBe(202);

  const res = await t.http.get('/v1/telemetry/analytics?dimensionType=team&dimensionValue=red').set(...bearer(owner.token));
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ activeMembers30d: 2, sessions30d: 1, tasksCompleted30d: 2, avgTaskDurationMs30d: 2000, activeMembers7d: 2, tasksCompleted7d: 2 });
});
