import type { BenchContext } from '../lib/context';
import { measureRounds, type LoadOptions } from '../lib/load';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';
import { newId } from '../../src/lib/ids';
import { randomSecret, sha256Hex } from '../../src/lib/crypto';

const MEMBERS = 10_000;
const OTHER_MEMBERS = 10_000;
const PAGE = 100;
const DEEP_START = 9_000;
const BATCH = 1_000;

/**
 * Scenario 10: SCIM `GET /scim/v2/Users` in an organization of 10,000 members (next to another
 * organization of 10,000): a first page, a page at startIndex=9000, and `filter=userName eq "…"`.
 * The deep page and the filter should cost about what the first page costs (within 1.5× at p50)
 * and stay under 50 ms: the page is cut in SQL over an index, never by loading members.
 */
export async function scenarioScim(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '10',
    title: `SCIM GET /Users at ${MEMBERS.toLocaleString('en')} members: first page, startIndex=${DEEP_START}, filter by userName`,
    setup: [
      `1 connection; targets take turns in rounds (${ctx.warmup} s warm-up each, ${ctx.duration} s measured each in total)`,
      `${MEMBERS.toLocaleString('en')} members with SCIM attributes, plus another organization of ${OTHER_MEMBERS.toLocaleString('en')}; count=${PAGE}; seeded in batches, then VACUUM ANALYZE`,
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const db = ctx.scratch.database.db;
  const t0 = Date.now();
  // The org seeder makes an owner and an admin (its benchmark caller); SCIM members fill the rest.
  const org = await seedOrganization(db, { name: 'SCIM bench', members: 2, teams: 0, plan: 'enterprise' });
  const other = await seedOrganization(db, { name: 'SCIM other', members: 2, teams: 0, plan: 'enterprise' });
  await seedMembers(db, org.organizationId, MEMBERS - 2, 'scim');
  await seedMembers(db, other.organizationId, OTHER_MEMBERS - 2, 'other');
  const token = randomSecret('cpscim');
  await db
    .insertInto('scim_tokens')
    .values({ id: newId('scimToken'), organization_id: org.organizationId, name: 'bench', prefix: token.slice(0, 14), token_hash: sha256Hex(token), created_by_member_id: org.ownerMemberId, created_at: new Date(), last_used_at: null, revoked_at: null })
    .execute();
  await ctx.scratch.pool.query('VACUUM ANALYZE members');
  await ctx.scratch.analyze();
  result.notes.push(`seeding took ${((Date.now() - t0) / 1000).toFixed(0)} s`);

  const service = await ctx.startService('s10-service');
  try {
    const headers = { authorization: `Bearer ${token}`, accept: 'application/scim+json' };
    const target = `user-scim-${String(7_777).padStart(5, '0')}@bench.test`;
    const paths: [string, string, number][] = [
      ['first page (startIndex=1)', `/scim/v2/Users?startIndex=1&count=${PAGE}`, PAGE],
      [`startIndex=${DEEP_START}`, `/scim/v2/Users?startIndex=${DEEP_START}&count=${PAGE}`, PAGE],
      ['filter userName eq', `/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${target.toUpperCase()}"`)}`, 1],
    ];
    for (const [label, path, expected] of paths) {
      const probe = await fetch(`${service.url}${path}`, { headers });
      const body = (await probe.json()) as { itemsPerPage?: number; totalResults?: number };
      if (probe.status !== 200 || body.itemsPerPage !== expected) throw new Error(`${label} answered ${probe.status}: ${JSON.stringify(body).slice(0, 300)}`);
    }
    const loads: LoadOptions[] = paths.map(([label, path]) => ({ label, url: service.url, path, headers, connections: 1, duration: ctx.duration, warmup: ctx.warmup, targets: [service] }));
    const [first, deep, filtered] = await measureRounds(loads, 4);
    result.rows = [first!, deep!, filtered!];
    result.checks.push(
      check(`p50 startIndex=${DEEP_START} / p50 first page`, deep!.p50 / first!.p50, '<=', 1.5),
      check('p50 filter / p50 first page', filtered!.p50 / first!.p50, '<=', 1.5),
      check(`p50 startIndex=${DEEP_START}, ms (guide)`, deep!.p50, '<=', 50),
      check('p50 filter, ms (guide)', filtered!.p50, '<=', 50),
      check('errors + non-2xx', result.rows.reduce((n, r) => n + r.errors + r.non2xx, 0), '<=', 0),
    );
    return result;
  } finally {
    await service.stop();
  }
}

/** Users and members in batches (password-less users, as SCIM creates them), with SCIM attributes. */
async function seedMembers(db: BenchContext['scratch']['database']['db'], organizationId: string, count: number, label: string): Promise<void> {
  const start = Date.now();
  for (let done = 0; done < count; done += BATCH) {
    const users = [];
    const members = [];
    for (let i = done; i < Math.min(count, done + BATCH); i++) {
      const email = `user-${label}-${String(i).padStart(5, '0')}@bench.test`;
      const at = new Date(start + i);
      const userId = newId('user');
      users.push({ id: userId, email, email_normalized: email, name: `User ${i}`, image: null, password_hash: null, created_at: at, updated_at: at });
      const attributes = { name: { givenName: 'User', familyName: String(i) }, displayName: `User ${i}`, emails: [{ value: email, primary: true, type: 'work' }] };
      members.push({ id: newId('member'), organization_id: organizationId, user_id: userId, role: 'member', created_at: at, removed_at: null, external_id: `ext-${i}`, scim_attributes: JSON.stringify(attributes), updated_at: at });
    }
    await db.insertInto('users').values(users).execute();
    await db.insertInto('members').values(members).execute();
  }
}
